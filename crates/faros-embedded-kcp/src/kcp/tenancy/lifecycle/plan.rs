//! The workspace lifecycle's decisions, IO-free: which step a workspace takes next, from facts the
//! controller read. Tested as tables; the controller (`super`) does the reads and writes.
//!
//! What it must not do: read or write anything.

use serde_json::Value;

use crate::auth::UserInfo;
use crate::kcp::tenancy::types::APIBINDINGS_INITIALIZER;
use crate::objects::meta;

/// The universal type's initializer.
pub const UNIVERSAL_INITIALIZER: &str = "root:universal";

/// What a workspace needs, from its own object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhaseStep {
    /// Marked for deletion: its logical cluster goes, then the finalizer.
    Finalize,
    /// No phase yet: enter `Scheduling`.
    EnterScheduling,
    Schedule,
    Initialize,
    /// Ready, and its metadata not yet: kcp's metadata reconciler mirrors the phase into the
    /// `tenancy.kcp.io/phase` label and trims the creator annotation, in a write after the status's.
    ReadyMetadata,
    /// Ready (or an unknown phase): nothing to do.
    Idle,
}

pub fn phase_step(ws: &Value) -> PhaseStep {
    if meta::is_deleting(ws) {
        return PhaseStep::Finalize;
    }
    match ws.pointer("/status/phase").and_then(Value::as_str).unwrap_or_default() {
        "" => PhaseStep::EnterScheduling,
        "Scheduling" => PhaseStep::Schedule,
        "Initializing" => PhaseStep::Initialize,
        "Ready" if !ready_metadata_done(ws) => PhaseStep::ReadyMetadata,
        _ => PhaseStep::Idle,
    }
}

/// A Ready workspace's label says Ready and its creator annotation, if any, is trimmed.
fn ready_metadata_done(ws: &Value) -> bool {
    let labelled = meta::label(ws, faros_core::kcp::LABEL_WORKSPACE_PHASE) == Some("Ready");
    let trimmed = meta::annotation(ws, faros_core::kcp::ANNOTATION_OWNER)
        .is_none_or(|owner| owner_once_ready(owner).as_deref() == Some(owner));
    labelled && trimmed
}

/// Whether the controller must look at a workspace at all (startup listing): anything not Ready
/// (a Ready one whose metadata write was cut short by a stop too), and anything being deleted.
pub fn needs_work(ws: &Value) -> bool {
    phase_step(ws) != PhaseStep::Idle
}

/// The logical cluster of a workspace being scheduled, as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogicalClusterState {
    Missing,
    /// Created, but its status was never written (a restart in between).
    WithoutStatus,
    Present,
    /// Could not be read.
    Unreadable,
}

/// Facts about a workspace in phase `Scheduling`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScheduleFacts {
    /// The cluster annotation is set (a logical cluster name was picked).
    pub cluster_assigned: bool,
    /// The path of the workspace's parent cluster is known.
    pub parent_known: bool,
    /// The workspace type (and its aliases) resolve.
    pub type_resolved: bool,
    pub logical_cluster: LogicalClusterState,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScheduleStep {
    /// Pick the logical cluster name, shard annotations and the logical cluster finalizer.
    AssignCluster,
    /// `WorkspaceScheduled=False`, `Unschedulable`: the type does not resolve.
    Unschedulable,
    /// Write the LogicalCluster's missing status.
    RepairLogicalClusterStatus,
    /// Default objects, the owner's binding and the LogicalCluster.
    CreateLogicalCluster,
    /// `spec.cluster`, `spec.URL`, `WorkspaceScheduled`, phase `Initializing`.
    MarkScheduled,
    /// Wait for a change.
    Idle,
}

pub fn schedule_step(f: ScheduleFacts) -> ScheduleStep {
    if !f.cluster_assigned {
        return ScheduleStep::AssignCluster;
    }
    if !f.parent_known {
        return ScheduleStep::Idle;
    }
    if !f.type_resolved {
        return ScheduleStep::Unschedulable;
    }
    match f.logical_cluster {
        LogicalClusterState::WithoutStatus => ScheduleStep::RepairLogicalClusterStatus,
        LogicalClusterState::Missing => ScheduleStep::CreateLogicalCluster,
        LogicalClusterState::Present => ScheduleStep::MarkScheduled,
        LogicalClusterState::Unreadable => ScheduleStep::Idle,
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InitializeStep {
    /// The LogicalCluster is Ready: the Workspace becomes Ready with `WorkspaceInitialized`.
    WorkspaceReady,
    /// The Workspace's mirror of the remaining initializers is out of date.
    MirrorInitializers,
    /// No initializers left: the LogicalCluster becomes Ready.
    LogicalClusterReady,
    /// Run the built-in initializers among these, in order.
    RunInitializers(Vec<String>),
}

/// `lc_phase`: the LogicalCluster's phase; `initializers`: those it still has; `mirror_stale`: the
/// Workspace's mirror of them differs.
pub fn initialize_step(lc_phase: &str, initializers: &[String], mirror_stale: bool) -> InitializeStep {
    if lc_phase == "Ready" {
        InitializeStep::WorkspaceReady
    } else if mirror_stale {
        InitializeStep::MirrorInitializers
    } else if initializers.is_empty() {
        InitializeStep::LogicalClusterReady
    } else {
        InitializeStep::RunInitializers(initializers.to_vec())
    }
}

/// Who runs an initializer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Initializer {
    /// `root:universal`: namespace `default`.
    Universal,
    /// `system:apibindings`: the type chain's default APIBindings.
    DefaultBindings,
    /// Someone else's: they remove it from the LogicalCluster's status themselves.
    Foreign,
}

pub fn initializer(name: &str) -> Initializer {
    match name {
        UNIVERSAL_INITIALIZER => Initializer::Universal,
        APIBINDINGS_INITIALIZER => Initializer::DefaultBindings,
        _ => Initializer::Foreign,
    }
}

/// Whom kcp's `system:apibindings` initializer binds a workspace's default APIs as: the creator its
/// LogicalCluster records (`spec.createdBy`). kcp records none for `system:masters` creators and
/// then cannot bind at all; the embedded kcp binds those as the system (see docs/embedded-kcp.md).
pub fn binding_creator(lc: &Value) -> Option<UserInfo> {
    lc.pointer("/spec/createdBy")
        .and_then(|c| serde_json::from_value::<UserInfo>(c.clone()).ok())
        .filter(|u| !u.username.is_empty())
}

/// The creator annotation (`experimental.tenancy.kcp.io/owner`) of a Ready Workspace or
/// LogicalCluster: kcp trims it to the user name (`{"username":"…"}`) once initialization no longer
/// needs the whole identity, which the LogicalCluster keeps in `spec.createdBy`. `None`: the value
/// is no user, and kcp drops the annotation.
pub fn owner_once_ready(value: &str) -> Option<String> {
    let user: UserInfo = serde_json::from_str(value).ok()?;
    serde_json::to_string(&UserInfo {
        username: user.username,
        ..Default::default()
    })
    .ok()
}

/// A default APIBinding is done once it reports `InitialBindingCompleted=True`.
pub fn binding_completed(binding: &Value) -> bool {
    binding
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "InitialBindingCompleted" && c["status"] == "True")
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn phase_table() {
        let rows = [
            (json!({"metadata": {}}), PhaseStep::EnterScheduling),
            (
                json!({"metadata": {}, "status": {"phase": "Scheduling"}}),
                PhaseStep::Schedule,
            ),
            (
                json!({"metadata": {}, "status": {"phase": "Initializing"}}),
                PhaseStep::Initialize,
            ),
            (
                json!({"metadata": {"labels": {"tenancy.kcp.io/phase": "Ready"}}, "status": {"phase": "Ready"}}),
                PhaseStep::Idle,
            ),
            (
                json!({"metadata": {"labels": {"tenancy.kcp.io/phase": "Ready"},
                    "annotations": {"experimental.tenancy.kcp.io/owner": r#"{"username":"bob"}"#}},
                    "status": {"phase": "Ready"}}),
                PhaseStep::Idle,
            ),
            // The status turned Ready; the metadata write has not followed yet.
            (
                json!({"metadata": {"labels": {"tenancy.kcp.io/phase": "Initializing"}}, "status": {"phase": "Ready"}}),
                PhaseStep::ReadyMetadata,
            ),
            (
                json!({"metadata": {}, "status": {"phase": "Ready"}}),
                PhaseStep::ReadyMetadata,
            ),
            (
                json!({"metadata": {"labels": {"tenancy.kcp.io/phase": "Ready"},
                    "annotations": {"experimental.tenancy.kcp.io/owner": r#"{"username":"bob","groups":["g"]}"#}},
                    "status": {"phase": "Ready"}}),
                PhaseStep::ReadyMetadata,
            ),
            // Not a user: kcp drops it.
            (
                json!({"metadata": {"labels": {"tenancy.kcp.io/phase": "Ready"},
                    "annotations": {"experimental.tenancy.kcp.io/owner": "nope"}},
                    "status": {"phase": "Ready"}}),
                PhaseStep::ReadyMetadata,
            ),
            (json!({"metadata": {}, "status": {"phase": "Unknown"}}), PhaseStep::Idle),
            (
                json!({"metadata": {"deletionTimestamp": "x"}, "status": {"phase": "Ready"}}),
                PhaseStep::Finalize,
            ),
            (
                json!({"metadata": {"deletionTimestamp": "x"}, "status": {"phase": "Scheduling"}}),
                PhaseStep::Finalize,
            ),
        ];
        for (ws, want) in rows {
            assert_eq!(phase_step(&ws), want, "{ws}");
        }
    }

    #[test]
    fn schedule_table() {
        use LogicalClusterState::*;
        let facts = |cluster_assigned, parent_known, type_resolved, logical_cluster| ScheduleFacts {
            cluster_assigned,
            parent_known,
            type_resolved,
            logical_cluster,
        };
        let rows = [
            (facts(false, false, false, Missing), ScheduleStep::AssignCluster),
            (facts(false, true, true, Present), ScheduleStep::AssignCluster),
            (facts(true, false, true, Missing), ScheduleStep::Idle),
            (facts(true, true, false, Missing), ScheduleStep::Unschedulable),
            (facts(true, true, false, Present), ScheduleStep::Unschedulable),
            (facts(true, true, true, Missing), ScheduleStep::CreateLogicalCluster),
            (
                facts(true, true, true, WithoutStatus),
                ScheduleStep::RepairLogicalClusterStatus,
            ),
            (facts(true, true, true, Present), ScheduleStep::MarkScheduled),
            (facts(true, true, true, Unreadable), ScheduleStep::Idle),
        ];
        for (f, want) in rows {
            assert_eq!(schedule_step(f), want, "{f:?}");
        }
    }

    #[test]
    fn initialize_table() {
        let inits = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let rows = [
            ("Ready", inits(&[]), false, InitializeStep::WorkspaceReady),
            ("Ready", inits(&["a"]), true, InitializeStep::WorkspaceReady),
            ("Initializing", inits(&["a"]), true, InitializeStep::MirrorInitializers),
            ("Initializing", inits(&[]), true, InitializeStep::MirrorInitializers),
            ("Initializing", inits(&[]), false, InitializeStep::LogicalClusterReady),
            (
                "Initializing",
                inits(&["root:universal", "x:y"]),
                false,
                InitializeStep::RunInitializers(inits(&["root:universal", "x:y"])),
            ),
        ];
        for (phase, initializers, stale, want) in rows {
            assert_eq!(
                initialize_step(phase, &initializers, stale),
                want,
                "{phase} {initializers:?} {stale}"
            );
        }
    }

    #[test]
    fn initializer_table() {
        assert_eq!(initializer("root:universal"), Initializer::Universal);
        assert_eq!(initializer(APIBINDINGS_INITIALIZER), Initializer::DefaultBindings);
        assert_eq!(initializer("root:org"), Initializer::Foreign);
    }

    #[test]
    fn binding_creator_table() {
        let rows = [
            (json!({"spec": {}}), None),
            (json!({"spec": {"createdBy": {}}}), None),
            (json!({"spec": {"createdBy": "alice"}}), None),
            (
                json!({"spec": {"createdBy": {"username": "alice", "uid": "a1", "groups": ["devs", "system:authenticated"],
                    "extra": {"scope": ["x"]}}}}),
                Some(("alice", "a1", vec!["devs", "system:authenticated"], 1)),
            ),
        ];
        for (lc, want) in rows {
            let got = binding_creator(&lc);
            let got = got.as_ref().map(|u| {
                (
                    u.username.as_str(),
                    u.uid.as_str(),
                    u.groups.iter().map(String::as_str).collect(),
                    u.extra.len(),
                )
            });
            assert_eq!(got, want, "{lc}");
        }
    }

    #[test]
    fn owner_once_ready_table() {
        let rows = [
            (
                r#"{"username":"bob","uid":"bob-uid","groups":["system:authenticated"],"extra":{"a":["b"]}}"#,
                Some(r#"{"username":"bob"}"#),
            ),
            (r#"{"username":"bob"}"#, Some(r#"{"username":"bob"}"#)),
            (r#"{}"#, Some(r#"{}"#)),
            (r#""bob""#, None),
            ("not json", None),
        ];
        for (value, want) in rows {
            assert_eq!(owner_once_ready(value).as_deref(), want, "{value}");
        }
    }

    #[test]
    fn binding_completion_table() {
        let rows = [
            (json!({}), false),
            (
                json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
                false,
            ),
            (
                json!({"status": {"conditions": [{"type": "InitialBindingCompleted", "status": "False"}]}}),
                false,
            ),
            (
                json!({"status": {"conditions": [{"type": "InitialBindingCompleted", "status": "True"}]}}),
                true,
            ),
        ];
        for (binding, want) in rows {
            assert_eq!(binding_completed(&binding), want, "{binding}");
        }
    }
}
