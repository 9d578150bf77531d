//! IO-free: the objects of the GitOps registrar identity in `root:faros:system:providers` and the
//! decision for its copy in the hosting cluster.
//!
//! The ClusterRole is the whole grant. A ClusterRole(Binding) in a kcp workspace grants within that
//! workspace only, and a ServiceAccount token authenticates only in its own logical cluster, so
//! nothing here reaches `root`, tenant or provider workspaces.

use std::collections::BTreeMap;

use faros_core::names;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::kubeconfig::{self, SecretData};
use crate::mirror::plan::{self, Ownership, Plan};

/// Namespace of the ServiceAccount and both Secrets in `root:faros:system:providers` (where the
/// provider kubeconfig Secrets live too).
pub const NAMESPACE: &str = names::PROVIDER_NAMESPACE;
/// The registrar's ServiceAccount; kcp names it `system:serviceaccount:default:faros-registrar`.
pub const SERVICE_ACCOUNT: &str = "faros-registrar";
/// Its ClusterRole and ClusterRoleBinding (`faros:` like the other faros-made RBAC objects).
pub const ROLE: &str = "faros:registrar";
/// The long-lived token Secret kcp's token controller fills.
pub const TOKEN_SECRET: &str = "faros-registrar-token";
/// The kubeconfig Secret, in kcp and (same name) in the mirror namespace of the hosting cluster.
pub const KUBECONFIG_SECRET: &str = "faros-registrar-kubeconfig";
/// Standard component label; with `app.kubernetes.io/managed-by=faros` it marks the registrar's
/// objects (they belong to no Provider, so they carry no `providers.faros.sh/provider`).
pub const LABEL_COMPONENT: &str = "app.kubernetes.io/component";
pub const COMPONENT: &str = "registrar";
/// Field manager scope (`faros-hub-reconciler/registrar`): distinct from the mirror's, so the
/// Provider mirror never takes the registrar's copy for one of its own, and the other way round.
pub const FIELD_SCOPE: &str = "registrar";

/// The verbs on `providers`: what `kubectl apply/diff/delete --prune`, Flux and Argo CD use.
pub const PROVIDER_VERBS: [&str; 7] = ["get", "list", "watch", "create", "update", "patch", "delete"];

/// Secret names in `default` of `root:faros:system:providers` that a Provider's `spec.secretName`
/// (or its default `<name>-kubeconfig`) must not take: the reconciler would overwrite, and on
/// teardown delete, the registrar's credential.
pub fn is_reserved_secret(name: &str) -> bool {
    name == KUBECONFIG_SECRET || name == TOKEN_SECRET
}

/// The field manager of every registrar write.
pub fn field_manager() -> String {
    format!("{}/{FIELD_SCOPE}", names::RECONCILER_FIELD_MANAGER)
}

pub fn labels() -> BTreeMap<String, String> {
    BTreeMap::from([
        (names::LABEL_MANAGED_BY.to_string(), names::MANAGED_BY_FAROS.to_string()),
        (LABEL_COMPONENT.to_string(), COMPONENT.to_string()),
    ])
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(str::to_string),
        labels: Some(labels()),
        ..Default::default()
    }
}

pub fn service_account() -> ServiceAccount {
    ServiceAccount {
        metadata: meta(SERVICE_ACCOUNT, Some(NAMESPACE)),
        // Tokens come from the Secret below only, never mounted anywhere.
        automount_service_account_token: Some(false),
        ..Default::default()
    }
}

/// Providers (all verbs GitOps tools use), reading their status and their ProviderRevisions; nothing
/// else: no Secrets, no RBAC, no ServiceAccounts, no writes to `providers/status` or revisions (the
/// reconciler's alone).
pub fn cluster_role() -> ClusterRole {
    let strings = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect());
    ClusterRole {
        metadata: meta(ROLE, None),
        rules: Some(vec![
            PolicyRule {
                api_groups: strings(&[names::ADMIN_GROUP]),
                resources: strings(&[names::PROVIDERS_RESOURCE]),
                verbs: PROVIDER_VERBS.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            },
            PolicyRule {
                api_groups: strings(&[names::ADMIN_GROUP]),
                resources: strings(&[&format!("{}/status", names::PROVIDERS_RESOURCE)]),
                verbs: vec!["get".into()],
                ..Default::default()
            },
            // Revisions are the reconciler's to write; GitOps tools show their phase and findings.
            PolicyRule {
                api_groups: strings(&[names::ADMIN_GROUP]),
                resources: strings(&[names::PROVIDER_REVISIONS_RESOURCE]),
                verbs: ["get", "list", "watch"].map(String::from).to_vec(),
                ..Default::default()
            },
        ]),
        ..Default::default()
    }
}

pub fn cluster_role_binding() -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: meta(ROLE, None),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: ROLE.into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: SERVICE_ACCOUNT.into(),
            namespace: Some(NAMESPACE.into()),
            api_group: None,
        }]),
    }
}

/// The long-lived token Secret, made the way the provider tokens are (kcp fills `data.token`).
pub fn token_secret() -> Secret {
    let mut metadata = meta(TOKEN_SECRET, Some(NAMESPACE));
    metadata.annotations = Some(BTreeMap::from([(
        names::SERVICE_ACCOUNT_NAME_ANNOTATION.to_string(),
        SERVICE_ACCOUNT.to_string(),
    )]));
    Secret {
        metadata,
        type_: Some(names::SERVICE_ACCOUNT_TOKEN_SECRET_TYPE.into()),
        ..Default::default()
    }
}

/// The kubeconfig Secret (keys `kubeconfig` and, unless the kubeconfig trusts the system roots,
/// `ca.crt`) in `namespace`: `default` in kcp, the mirror namespace in the hosting cluster.
pub fn kubeconfig_secret(namespace: &str, data: SecretData<'_>) -> Secret {
    kubeconfig::labelled_secret(labels(), namespace, KUBECONFIG_SECRET, data)
}

/// Who owns a Secret named [`KUBECONFIG_SECRET`] found in the mirror namespace: the registrar when
/// its labels say so (and no Provider's label does) or its field manager wrote it; labelled for a
/// Provider; or someone else's.
pub fn ownership(secret: &Secret) -> Ownership {
    let labels = secret.metadata.labels.as_ref();
    let label = |key: &str| labels.and_then(|l| l.get(key)).map(String::as_str);
    if let Some(provider) = label(names::LABEL_PROVIDER) {
        return Ownership::OtherProvider(provider.to_string());
    }
    let labelled =
        label(names::LABEL_MANAGED_BY) == Some(names::MANAGED_BY_FAROS) && label(LABEL_COMPONENT) == Some(COMPONENT);
    let manager = field_manager();
    let written = secret
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .any(|m| m.manager.as_deref() == Some(manager.as_str()));
    if labelled || written {
        Ownership::Ours
    } else {
        Ownership::Unmanaged
    }
}

/// What to do with the mirror-namespace copy: write it when absent or drifted, nothing when in
/// sync, and never touch a same-named Secret that is not the registrar's ([`Plan::Foreign`]).
pub fn mirror_plan(observed: Option<&Secret>, want: SecretData<'_>) -> Plan {
    let Some(observed) = observed else {
        return Plan::Apply;
    };
    match ownership(observed) {
        Ownership::Ours if plan::holds(observed, &labels(), want) => Plan::Nothing,
        Ownership::Ours => Plan::Apply,
        other => Plan::Foreign(other),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn bodies() {
        let managed = json!({"app.kubernetes.io/managed-by": "faros", "app.kubernetes.io/component": "registrar"});
        assert_eq!(
            serde_json::to_value(service_account()).unwrap(),
            json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "faros-registrar", "namespace": "default", "labels": managed},
                "automountServiceAccountToken": false})
        );
        assert_eq!(
            serde_json::to_value(cluster_role()).unwrap(),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "faros:registrar", "labels": managed},
            "rules": [
                {"apiGroups": ["admin.faros.sh"], "resources": ["providers"],
                    "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
                {"apiGroups": ["admin.faros.sh"], "resources": ["providers/status"], "verbs": ["get"]},
                {"apiGroups": ["admin.faros.sh"], "resources": ["providerrevisions"], "verbs": ["get", "list", "watch"]},
            ]})
        );
        assert_eq!(
            serde_json::to_value(cluster_role_binding()).unwrap(),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "faros:registrar", "labels": managed},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "faros:registrar"},
                "subjects": [{"kind": "ServiceAccount", "name": "faros-registrar", "namespace": "default"}]})
        );
        assert_eq!(
            serde_json::to_value(token_secret()).unwrap(),
            json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "faros-registrar-token", "namespace": "default", "labels": managed,
                    "annotations": {"kubernetes.io/service-account.name": "faros-registrar"}},
                "type": "kubernetes.io/service-account-token"})
        );
        let data = SecretData {
            kubeconfig: b"yaml",
            ca: Some(b"pem"),
        };
        assert_eq!(
            serde_json::to_value(kubeconfig_secret("faros-providers", data)).unwrap(),
            json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "faros-registrar-kubeconfig", "namespace": "faros-providers", "labels": managed},
                "type": "Opaque", "data": {"kubeconfig": "eWFtbA==", "ca.crt": "cGVt"}})
        );
    }

    /// Least privilege, stated as what the role must never grant.
    #[test]
    fn the_role_grants_providers_and_reading_their_status_and_revisions_only() {
        let rules = cluster_role().rules.unwrap();
        for rule in &rules {
            assert_eq!(rule.api_groups.as_deref(), Some(&["admin.faros.sh".to_string()][..]));
            let resources = rule.resources.as_deref().unwrap();
            assert!(
                resources
                    .iter()
                    .all(|r| r == "providers" || r == "providers/status" || r == "providerrevisions"),
                "{resources:?}"
            );
            if resources.contains(&"providerrevisions".to_string()) {
                assert_eq!(
                    rule.verbs,
                    ["get", "list", "watch"],
                    "revisions are the reconciler's to write"
                );
            }
            assert!(
                !rule
                    .verbs
                    .iter()
                    .any(|v| v == "*" || v == "escalate" || v == "bind" || v == "impersonate")
            );
            assert!(rule.resource_names.is_none() && rule.non_resource_urls.is_none());
            if resources.contains(&"providers/status".to_string()) {
                assert_eq!(rule.verbs, ["get"], "status is the reconciler's to write");
            }
        }
    }

    #[test]
    fn reserved_names() {
        for (name, reserved) in [
            ("faros-registrar-kubeconfig", true),
            ("faros-registrar-token", true),
            ("quickstart-kubeconfig", false),
            ("faros-registrar", false),
        ] {
            assert_eq!(is_reserved_secret(name), reserved, "{name}");
        }
        // The default Secret name of a Provider called `faros-registrar` is reserved.
        assert!(is_reserved_secret(&names::kubeconfig_secret_name(
            "faros-registrar",
            None
        )));
    }

    fn secret(labels: &[(&str, &str)], data: &[(&str, &[u8])], managers: &[&str]) -> Secret {
        let mut s = Secret::default();
        s.metadata.name = Some(KUBECONFIG_SECRET.into());
        if !labels.is_empty() {
            s.metadata.labels = Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        }
        if !data.is_empty() {
            s.data = Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), ByteString(v.to_vec())))
                    .collect(),
            );
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

    #[test]
    fn mirror_plan_table() {
        const FM: &str = "faros-hub-reconciler/registrar";
        const OURS: &[(&str, &str)] = &[
            ("app.kubernetes.io/managed-by", "faros"),
            ("app.kubernetes.io/component", "registrar"),
        ];
        let want = SecretData {
            kubeconfig: b"kc",
            ca: Some(b"ca"),
        };
        let cases: Vec<(&str, Option<Secret>, Plan)> = vec![
            ("absent: create", None, Plan::Apply),
            (
                "ours and equal: nothing",
                Some(secret(OURS, &[("kubeconfig", b"kc"), ("ca.crt", b"ca")], &[FM])),
                Plan::Nothing,
            ),
            (
                "ours, new token or hub URL: apply",
                Some(secret(OURS, &[("kubeconfig", b"old"), ("ca.crt", b"ca")], &[FM])),
                Plan::Apply,
            ),
            (
                "ours, CA missing: apply",
                Some(secret(OURS, &[("kubeconfig", b"kc")], &[FM])),
                Plan::Apply,
            ),
            (
                "labels stripped by hand, written by us: restore",
                Some(secret(&[], &[("kubeconfig", b"kc"), ("ca.crt", b"ca")], &[FM])),
                Plan::Apply,
            ),
            (
                "the Provider mirror's field manager is not ours",
                Some(secret(&[], &[("kubeconfig", b"kc")], &["faros-hub-reconciler/mirror"])),
                Plan::Foreign(Ownership::Unmanaged),
            ),
            (
                "someone else's: never overwritten",
                Some(secret(&[], &[("kubeconfig", b"theirs")], &["kubectl-create"])),
                Plan::Foreign(Ownership::Unmanaged),
            ),
            (
                "a Provider's mirrored Secret: never overwritten",
                Some(secret(
                    &[
                        ("app.kubernetes.io/managed-by", "faros"),
                        ("providers.faros.sh/provider", "faros-registrar"),
                    ],
                    &[("kubeconfig", b"kc")],
                    &["faros-hub-reconciler/mirror"],
                )),
                Plan::Foreign(Ownership::OtherProvider("faros-registrar".into())),
            ),
        ];
        for (name, observed, expected) in cases {
            assert_eq!(mirror_plan(observed.as_ref(), want), expected, "{name}");
        }
        assert_eq!(field_manager(), FM);
    }
}
