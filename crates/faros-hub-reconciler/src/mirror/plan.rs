//! IO-free decision of the kubeconfig mirror: given what a Provider wants in the hosting namespace
//! and the Secret found there under that name, what to do.
//!
//! Ownership decides before content: the mirror only ever writes or deletes a Secret it wrote for
//! the same Provider. A same-named Secret that someone else created (or that another Provider's
//! mirror owns) is reported, never overwritten and never deleted.

use faros_core::names;
use k8s_openapi::api::core::v1::Secret;

use crate::kubeconfig::SecretData;

/// What the Provider wants under one Secret name in the mirror namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want<'a> {
    /// The mirrored kubeconfig Secret with exactly this data under the keys faros writes.
    Present { provider: &'a str, data: SecretData<'a> },
    /// Nothing of this Provider's (teardown, or the name `spec.secretName` moved away from).
    Absent { provider: &'a str },
}

impl Want<'_> {
    fn provider(&self) -> &str {
        match self {
            Want::Present { provider, .. } | Want::Absent { provider } => provider,
        }
    }
}

/// Who a Secret found in the mirror namespace belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ownership {
    /// Written by the mirror for this Provider: its labels say so, or (labels removed by hand) the
    /// mirror's field manager owns fields of it.
    Ours,
    /// Labelled for another Provider.
    OtherProvider(String),
    /// Neither labelled for a Provider nor written by the mirror.
    Unmanaged,
}

/// The decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// In sync, or (for [`Want::Absent`]) nothing of ours is there.
    Nothing,
    /// Server-side apply the desired Secret: it is absent, or ours but drifted (data or labels).
    Apply,
    /// Delete it: ours and no longer wanted.
    Delete,
    /// Someone else's Secret holds the name; leave it alone. Blocks [`Want::Present`]; for
    /// [`Want::Absent`] it means "nothing of ours to remove".
    Foreign(Ownership),
}

/// See the module docs. `field_manager` is the mirror's server-side apply field manager.
pub fn plan(want: Want<'_>, observed: Option<&Secret>, field_manager: &str) -> Plan {
    let Some(observed) = observed else {
        return match want {
            Want::Present { .. } => Plan::Apply,
            Want::Absent { .. } => Plan::Nothing,
        };
    };
    match ownership(observed, want.provider(), field_manager) {
        Ownership::Ours => {}
        other => return Plan::Foreign(other),
    }
    match want {
        Want::Absent { .. } => Plan::Delete,
        Want::Present { provider, data } if in_sync(observed, provider, data) => Plan::Nothing,
        Want::Present { .. } => Plan::Apply,
    }
}

/// See [`Ownership`].
pub fn ownership(secret: &Secret, provider: &str, field_manager: &str) -> Ownership {
    let labels = secret.metadata.labels.as_ref();
    let label = |key: &str| labels.and_then(|l| l.get(key)).map(String::as_str);
    match label(names::LABEL_PROVIDER) {
        Some(other) if other != provider => return Ownership::OtherProvider(other.to_string()),
        Some(_) if label(names::LABEL_MANAGED_BY) == Some(names::MANAGED_BY_FAROS) => return Ownership::Ours,
        _ => {}
    }
    let written_by_us = secret
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .any(|m| m.manager.as_deref() == Some(field_manager));
    if written_by_us {
        Ownership::Ours
    } else {
        Ownership::Unmanaged
    }
}

/// Our keys have exactly our bytes (a key we do not want, such as a CA no longer configured, is
/// absent) and both managed labels are set. Other keys, labels and annotations someone added are
/// not ours to judge (server-side apply leaves them, too).
fn in_sync(secret: &Secret, provider: &str, want: SecretData<'_>) -> bool {
    holds(secret, &names::managed_labels(provider), want)
}

/// `secret` has exactly `want`'s bytes under the keys faros writes (a key `want` lacks is absent) and
/// carries every label of `labels`; anything else on it is left out of the comparison.
pub fn holds(secret: &Secret, labels: &std::collections::BTreeMap<String, String>, want: SecretData<'_>) -> bool {
    let data = secret.data.as_ref();
    let data_ok = want
        .entries()
        .iter()
        .all(|(key, value)| data.and_then(|d| d.get(*key)).map(|b| b.0.as_slice()) == *value);
    let have = secret.metadata.labels.as_ref();
    let labels_ok = labels.iter().all(|(k, v)| have.and_then(|l| l.get(k)) == Some(v));
    data_ok && labels_ok
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
    use pretty_assertions::assert_eq;
    use std::collections::BTreeMap;

    const FM: &str = "faros-hub-reconciler/mirror";

    fn secret(labels: &[(&str, &str)], data: Option<&[u8]>, managers: &[&str]) -> Secret {
        let mut s = Secret::default();
        s.metadata.name = Some("q-kubeconfig".into());
        if !labels.is_empty() {
            s.metadata.labels = Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        }
        if let Some(d) = data {
            s.data = Some(BTreeMap::from([("kubeconfig".to_string(), ByteString(d.to_vec()))]));
        }
        if !managers.is_empty() {
            s.metadata.managed_fields = Some(
                managers
                    .iter()
                    .map(|m| ManagedFieldsEntry {
                        manager: Some(m.to_string()),
                        ..Default::default()
                    })
                    .collect(),
            );
        }
        s
    }

    const OURS: &[(&str, &str)] = &[
        ("app.kubernetes.io/managed-by", "faros"),
        ("providers.faros.sh/provider", "q"),
    ];

    #[test]
    fn plan_table() {
        let present = Want::Present {
            provider: "q",
            data: SecretData {
                kubeconfig: b"kc",
                ca: None,
            },
        };
        let with_ca = Want::Present {
            provider: "q",
            data: SecretData {
                kubeconfig: b"kc",
                ca: Some(b"ca"),
            },
        };
        let with_key = |mut s: Secret, key: &str, value: &[u8]| {
            s.data
                .get_or_insert_with(Default::default)
                .insert(key.into(), ByteString(value.to_vec()));
            s
        };
        let absent = Want::Absent { provider: "q" };
        let cases: Vec<(&str, Want<'_>, Option<Secret>, Plan)> = vec![
            ("absent, wanted: create", present, None, Plan::Apply),
            ("absent, not wanted: nothing", absent, None, Plan::Nothing),
            (
                "ours with the CA: nothing",
                with_ca,
                Some(with_key(secret(OURS, Some(b"kc"), &[FM]), "ca.crt", b"ca")),
                Plan::Nothing,
            ),
            (
                "ours, CA missing (written before the mirror carried it): apply",
                with_ca,
                Some(secret(OURS, Some(b"kc"), &[FM])),
                Plan::Apply,
            ),
            (
                "ours, CA rotated: apply",
                with_ca,
                Some(with_key(secret(OURS, Some(b"kc"), &[FM]), "ca.crt", b"old")),
                Plan::Apply,
            ),
            (
                "ours, a CA no longer wanted (system roots now): apply, which prunes it",
                present,
                Some(with_key(secret(OURS, Some(b"kc"), &[FM]), "ca.crt", b"ca")),
                Plan::Apply,
            ),
            (
                "ours and equal: nothing",
                present,
                Some(secret(OURS, Some(b"kc"), &[FM])),
                Plan::Nothing,
            ),
            (
                "ours, rotated token or new hub URL: apply",
                present,
                Some(secret(OURS, Some(b"old"), &[FM])),
                Plan::Apply,
            ),
            (
                "ours, key removed by hand: apply",
                present,
                Some(secret(OURS, None, &[FM])),
                Plan::Apply,
            ),
            (
                "ours, extra labels and keys are left alone",
                present,
                Some({
                    let mut s = secret(
                        &[
                            ("app.kubernetes.io/managed-by", "faros"),
                            ("providers.faros.sh/provider", "q"),
                            ("team", "x"),
                        ],
                        Some(b"kc"),
                        &[FM, "kubectl-edit"],
                    );
                    s.data
                        .as_mut()
                        .unwrap()
                        .insert("extra".into(), ByteString(b"1".to_vec()));
                    s
                }),
                Plan::Nothing,
            ),
            (
                "labels stripped by hand, but our field manager wrote it: restore",
                present,
                Some(secret(&[], Some(b"kc"), &[FM, "kubectl-label"])),
                Plan::Apply,
            ),
            (
                "managed-by changed by hand, ours by field manager: restore",
                present,
                Some(secret(
                    &[
                        ("app.kubernetes.io/managed-by", "helm"),
                        ("providers.faros.sh/provider", "q"),
                    ],
                    Some(b"kc"),
                    &[FM],
                )),
                Plan::Apply,
            ),
            (
                "someone else's Secret of that name: leave it, report",
                present,
                Some(secret(&[], Some(b"theirs"), &["kubectl-create"])),
                Plan::Foreign(Ownership::Unmanaged),
            ),
            (
                "another Provider's mirrored Secret: leave it, report",
                present,
                Some(secret(
                    &[
                        ("app.kubernetes.io/managed-by", "faros"),
                        ("providers.faros.sh/provider", "other"),
                    ],
                    Some(b"kc"),
                    &[FM],
                )),
                Plan::Foreign(Ownership::OtherProvider("other".into())),
            ),
            (
                "ours, not wanted: delete",
                absent,
                Some(secret(OURS, Some(b"kc"), &[FM])),
                Plan::Delete,
            ),
            (
                "ours by field manager only, not wanted: delete",
                absent,
                Some(secret(&[], Some(b"kc"), &[FM])),
                Plan::Delete,
            ),
            (
                "someone else's, not wanted: never deleted",
                absent,
                Some(secret(&[], Some(b"kc"), &["helm"])),
                Plan::Foreign(Ownership::Unmanaged),
            ),
            (
                "another Provider's, not wanted: never deleted",
                absent,
                Some(secret(
                    &[
                        ("app.kubernetes.io/managed-by", "faros"),
                        ("providers.faros.sh/provider", "other"),
                    ],
                    Some(b"kc"),
                    &[FM],
                )),
                Plan::Foreign(Ownership::OtherProvider("other".into())),
            ),
        ];
        for (name, want, observed, expected) in cases {
            assert_eq!(plan(want, observed.as_ref(), FM), expected, "{name}");
        }
    }
}
