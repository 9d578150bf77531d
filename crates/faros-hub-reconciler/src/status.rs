//! IO-free computation of a Provider's status from what a reconcile found.
//!
//! The reconciler writes status only when [`desired`] differs from what is stored: a status write is a
//! watch event, and an unconditional write (the original stamped `lastProvisioned` every time) turns
//! every reconcile into the trigger for the next one.

use faros_core::conditions::{self, ConditionStatus};
use faros_core::names;
use faros_core::provider::{ProviderStatus, SecretKeyRef};
use k8s_openapi::jiff::Timestamp;

/// What one reconcile of a Provider concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Workspace, ServiceAccount and kubeconfig Secret are in place.
    Provisioned {
        workspace_cluster: String,
        secret_name: String,
    },
    /// A step failed. `reason` is one of the `names::REASON_*_ERROR` constants. `workspace_cluster`
    /// is known once the workspace was scheduled, even if a later step failed.
    Failed {
        reason: &'static str,
        message: String,
        workspace_cluster: Option<String>,
    },
    /// The name cannot be a workspace name; nothing was created.
    InvalidName { message: String },
    /// The finalizer is tearing things down.
    Deleting { message: String },
}

/// The status the Provider should have after `outcome`. Fields the outcome says nothing about keep
/// their stored values; the `Ready` condition keeps its `lastTransitionTime` unless its status flips.
pub fn desired(
    current: Option<&ProviderStatus>,
    provider: &str,
    generation: Option<i64>,
    outcome: &Outcome,
    now: Timestamp,
) -> ProviderStatus {
    let mut status = current.cloned().unwrap_or_default();
    status.observed_generation = generation;
    let (ready, reason, message) = match outcome {
        Outcome::Provisioned {
            workspace_cluster,
            secret_name,
        } => {
            status.workspace_path = Some(names::provider_workspace_path(provider));
            status.workspace_cluster = Some(workspace_cluster.clone());
            status.secret_ref = Some(SecretKeyRef {
                namespace: names::PROVIDER_NAMESPACE.to_string(),
                name: secret_name.clone(),
                key: names::KUBECONFIG_SECRET_KEY.to_string(),
            });
            (
                ConditionStatus::True,
                names::REASON_PROVISIONED,
                names::MESSAGE_PROVISIONED.to_string(),
            )
        }
        Outcome::Failed {
            reason,
            message,
            workspace_cluster,
        } => {
            status.workspace_path = Some(names::provider_workspace_path(provider));
            if let Some(cluster) = workspace_cluster {
                status.workspace_cluster = Some(cluster.clone());
            }
            (ConditionStatus::False, *reason, message.clone())
        }
        Outcome::InvalidName { message } => {
            status.workspace_path = None;
            status.workspace_cluster = None;
            status.secret_ref = None;
            (ConditionStatus::False, names::REASON_INVALID_NAME, message.clone())
        }
        Outcome::Deleting { message } => (ConditionStatus::False, names::REASON_DELETING, message.clone()),
    };
    conditions::set(
        &mut status.conditions,
        conditions::new_condition(names::CONDITION_READY, ready, reason, message, generation, now),
    );
    status
}

/// Whether `desired` must be written over `current`.
pub fn needs_write(current: Option<&ProviderStatus>, desired: &ProviderStatus) -> bool {
    match current {
        Some(current) => current != desired,
        None => *desired != ProviderStatus::default(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
    use pretty_assertions::assert_eq;

    fn ts(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap()
    }

    fn ready(status: &str, reason: &str, message: &str, generation: i64, at: i64) -> Condition {
        Condition {
            type_: "Ready".into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            observed_generation: Some(generation),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts(at)),
        }
    }

    fn provisioned_status(generation: i64, at: i64) -> ProviderStatus {
        ProviderStatus {
            workspace_path: Some("root:faros:providers:q".into()),
            workspace_cluster: Some("abc".into()),
            secret_ref: Some(SecretKeyRef {
                namespace: "default".into(),
                name: "q-kubeconfig".into(),
                key: "kubeconfig".into(),
            }),
            observed_generation: Some(generation),
            conditions: vec![ready("True", "Provisioned", names::MESSAGE_PROVISIONED, generation, at)],
            ..Default::default()
        }
    }

    #[test]
    fn desired_table() {
        struct Case {
            name: &'static str,
            current: Option<ProviderStatus>,
            generation: i64,
            outcome: Outcome,
            want: ProviderStatus,
            write: bool,
        }
        let provisioned = Outcome::Provisioned {
            workspace_cluster: "abc".into(),
            secret_name: "q-kubeconfig".into(),
        };
        let cases = [
            Case {
                name: "first success",
                current: None,
                generation: 1,
                outcome: provisioned.clone(),
                want: provisioned_status(1, 100),
                write: true,
            },
            Case {
                name: "steady state is not rewritten and keeps its timestamp",
                current: Some(provisioned_status(1, 50)),
                generation: 1,
                outcome: provisioned.clone(),
                want: provisioned_status(1, 50),
                write: false,
            },
            Case {
                name: "new generation bumps observedGeneration but not the transition time",
                current: Some(provisioned_status(1, 50)),
                generation: 2,
                outcome: provisioned.clone(),
                want: {
                    let mut s = provisioned_status(2, 50);
                    s.conditions[0].observed_generation = Some(2);
                    s
                },
                write: true,
            },
            Case {
                name: "secret rename moves secretRef",
                current: Some(provisioned_status(1, 50)),
                generation: 2,
                outcome: Outcome::Provisioned {
                    workspace_cluster: "abc".into(),
                    secret_name: "mine".into(),
                },
                want: {
                    let mut s = provisioned_status(2, 50);
                    s.secret_ref.as_mut().unwrap().name = "mine".into();
                    s
                },
                write: true,
            },
            Case {
                name: "failure before scheduling keeps only the path",
                current: None,
                generation: 1,
                outcome: Outcome::Failed {
                    reason: names::REASON_WORKSPACE_ERROR,
                    message: "ensuring provider workspace: boom".into(),
                    workspace_cluster: None,
                },
                want: ProviderStatus {
                    workspace_path: Some("root:faros:providers:q".into()),
                    observed_generation: Some(1),
                    conditions: vec![ready(
                        "False",
                        "WorkspaceError",
                        "ensuring provider workspace: boom",
                        1,
                        100,
                    )],
                    ..Default::default()
                },
                write: true,
            },
            Case {
                name: "failure after success flips Ready and keeps the secretRef",
                current: Some(provisioned_status(1, 50)),
                generation: 1,
                outcome: Outcome::Failed {
                    reason: names::REASON_SECRET_ERROR,
                    message: "writing kubeconfig Secret: denied".into(),
                    workspace_cluster: Some("abc".into()),
                },
                want: {
                    let mut s = provisioned_status(1, 50);
                    s.conditions = vec![ready(
                        "False",
                        "SecretError",
                        "writing kubeconfig Secret: denied",
                        1,
                        100,
                    )];
                    s
                },
                write: true,
            },
            Case {
                name: "invalid name clears everything else",
                current: None,
                generation: 1,
                outcome: Outcome::InvalidName { message: "bad".into() },
                want: ProviderStatus {
                    observed_generation: Some(1),
                    conditions: vec![ready("False", "InvalidName", "bad", 1, 100)],
                    ..Default::default()
                },
                write: true,
            },
            Case {
                name: "deleting keeps the refs for the record",
                current: Some(provisioned_status(1, 50)),
                generation: 1,
                outcome: Outcome::Deleting {
                    message: "tearing down".into(),
                },
                want: {
                    let mut s = provisioned_status(1, 50);
                    s.conditions = vec![ready("False", "Deleting", "tearing down", 1, 100)];
                    s
                },
                write: true,
            },
        ];
        for c in cases {
            let got = desired(c.current.as_ref(), "q", Some(c.generation), &c.outcome, ts(100));
            assert_eq!(got, c.want, "{}", c.name);
            assert_eq!(needs_write(c.current.as_ref(), &got), c.write, "{}", c.name);
        }
    }

    #[test]
    fn repeated_failure_with_same_message_is_not_rewritten() {
        let outcome = Outcome::Failed {
            reason: names::REASON_WORKSPACE_ERROR,
            message: "workspace root:faros:providers:q is Initializing".into(),
            workspace_cluster: Some("abc".into()),
        };
        let first = desired(None, "q", Some(3), &outcome, ts(10));
        let second = desired(Some(&first), "q", Some(3), &outcome, ts(20));
        assert!(!needs_write(Some(&first), &second));
        assert_eq!(second.conditions[0].last_transition_time.0, ts(10));
    }
}
