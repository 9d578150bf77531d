//! IO-free: the RBAC objects that give the hub API its own kcp identity — exactly the requests it
//! makes of kcp with its own credentials (docs/install.md#kcp-identities), workspace by workspace.
//!
//! Like the reconciler, the hub works across the faros tree, so it is a kcp *user*. Unlike the
//! reconciler it owns nothing structural: it gets one ClusterRole per structural workspace
//! ([`tree_roles`]), a Role for its records in `faros-system` ([`records_role`]), `bind` and token
//! reviews in each provider workspace ([`provider_role`], written by the reconciler when it
//! provisions the provider), and in `root` only token reviews ([`root_role`]). Organizations and
//! team workspaces are the hub's own by kcp's creator rule (it creates them); one an admin identity
//! made before gets [`owner_binding`] from the grant.
//!
//! Everything a tenant does in kcp itself goes through the hub's pass-through with the tenant's own
//! token: none of these rules is ever exercised on a tenant's behalf.

use faros_core::kcp::LOGICALCLUSTER_NAME;
use faros_core::names;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};

use super::objects::{CLUSTER_ADMIN, TENANCY_GROUP, cluster_role_ref, meta_of, strings, user_subject};

/// The user name the hub API authenticates to kcp as, unless told otherwise.
pub const DEFAULT_USER: &str = names::HUB_KCP_USER;
/// Name of every ClusterRole, Role and binding of the hub's grant.
pub const ROLE: &str = "faros:hub-api";
/// `app.kubernetes.io/component` of the hub's grant objects.
pub const COMPONENT: &str = "hub-api-identity";
const APIS_GROUP: &str = "apis.kcp.io";
const CORE_KCP_GROUP: &str = "core.kcp.io";
const READ: [&str; 3] = ["get", "list", "watch"];

fn resource(verbs: &[&str], group: &str, resources: &[&str], names: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(strings(&[group])),
        resources: Some(strings(resources)),
        resource_names: (!names.is_empty()).then(|| strings(names)),
        verbs: strings(verbs),
        ..Default::default()
    }
}

/// kcp's workspace content authorizer asks for `access` on `/` before any RBAC rule applies.
fn access() -> PolicyRule {
    PolicyRule {
        non_resource_urls: Some(strings(&["/"])),
        verbs: strings(&["access"]),
        ..Default::default()
    }
}

fn cluster_role(rules: Vec<PolicyRule>) -> ClusterRole {
    let mut all = vec![access()];
    all.extend(rules);
    ClusterRole {
        metadata: meta_of(ROLE, COMPONENT),
        rules: Some(all),
        ..Default::default()
    }
}

/// `root`: authenticating bearer tokens kcp knows (the hub's TokenReview authenticator).
pub fn root_role() -> ClusterRole {
    cluster_role(vec![resource(
        &["create"],
        "authentication.k8s.io",
        &["tokenreviews"],
        &[],
    )])
}

/// The hub's ClusterRole in each structural workspace it reads or writes, parents first.
pub fn tree_roles() -> Vec<(&'static str, ClusterRole)> {
    vec![
        (
            names::FAROS_PATH,
            cluster_role(vec![
                // Readiness: the tree's gate workspace is Ready.
                resource(&READ, TENANCY_GROUP, &["workspaces"], &[]),
                // Organizations and team workspaces are of faros' types (kcp checks `use` here,
                // in the type's workspace).
                resource(
                    &["use"],
                    TENANCY_GROUP,
                    &["workspacetypes"],
                    &[names::WORKSPACE_TYPE_ORGANIZATION, names::WORKSPACE_TYPE_WORKSPACE],
                ),
            ]),
        ),
        (
            names::SYSTEM_CONTROLLERS_PATH,
            cluster_role(vec![
                // The catalog: the providers.faros.sh virtual workspace's URLs...
                resource(&READ, APIS_GROUP, &["apiexportendpointslices"], &[]),
                // ...and CatalogEntries through it, their status written back.
                resource(
                    &["get", "list", "watch", "patch", "update"],
                    APIS_GROUP,
                    &["apiexports/content"],
                    &[names::PROVIDERS_EXPORT],
                ),
                // The membership index: faros' ClusterRoleBindings of every tenant workspace through
                // the tenancy.faros.sh virtual workspace (read only)...
                resource(&READ, APIS_GROUP, &["apiexports/content"], &[names::TENANCY_EXPORT]),
                // ...and binding that export in tenant workspaces made before it existed.
                resource(&["bind"], APIS_GROUP, &["apiexports"], &[names::TENANCY_EXPORT]),
            ]),
        ),
        (
            names::SYSTEM_PROVIDERS_PATH,
            // The workspace path of admin-applied CatalogEntries.
            cluster_role(vec![resource(
                &["get"],
                CORE_KCP_GROUP,
                &["logicalclusters"],
                &[LOGICALCLUSTER_NAME],
            )]),
        ),
        (
            names::PROVIDERS_PATH,
            // Which provider workspaces exist, and their logical clusters.
            cluster_role(vec![resource(&READ, TENANCY_GROUP, &["workspaces"], &[])]),
        ),
        (
            names::TENANTS_PATH,
            // Organizations: create, list, delete (kcp makes the hub cluster-admin of each it creates).
            cluster_role(vec![resource(
                &["get", "list", "watch", "create", "delete"],
                TENANCY_GROUP,
                &["workspaces"],
                &[],
            )]),
        ),
    ]
}

/// In namespace `faros-system` of `root:faros:system:controllers`: the hub's records (portal and
/// MCP sessions, OIDC sign-ins in flight) as Secrets. The reconciler makes the namespace. `update`:
/// an OIDC session's renewal replaces its record under its resourceVersion.
pub fn records_role() -> Role {
    let mut metadata = meta_of(ROLE, COMPONENT);
    metadata.namespace = Some(names::SYSTEM_NAMESPACE.into());
    Role {
        metadata,
        rules: Some(vec![resource(
            &["get", "list", "watch", "create", "update", "delete"],
            "",
            &["secrets"],
            &[],
        )]),
    }
}

/// Binds [`records_role`] to `user`.
pub fn records_binding(user: &str) -> RoleBinding {
    let mut metadata = meta_of(ROLE, COMPONENT);
    metadata.namespace = Some(names::SYSTEM_NAMESPACE.into());
    RoleBinding {
        metadata,
        role_ref: k8s_openapi::api::rbac::v1::RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "Role".into(),
            name: ROLE.into(),
        },
        subjects: Some(vec![user_subject(user)]),
    }
}

/// In a provider workspace: Enable binds the provider's APIExport (kcp checks `bind` on the export,
/// in its workspace, for the binding's author: the hub), heartbeats are the provider's own
/// ServiceAccount tokens (reviewed where they are valid), and the catalog reads the workspace's
/// path. Any export of the workspace: the provider, its `cluster-admin`, decides what it exports;
/// the hub binds only what its CatalogEntry names.
pub fn provider_role() -> ClusterRole {
    cluster_role(vec![
        resource(&["bind"], APIS_GROUP, &["apiexports"], &[]),
        resource(&["create"], "authentication.k8s.io", &["tokenreviews"], &[]),
        resource(&["get"], CORE_KCP_GROUP, &["logicalclusters"], &[LOGICALCLUSTER_NAME]),
    ])
}

/// Binds the workspace's [`ROLE`] ClusterRole to `user`.
pub fn binding(user: &str) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: meta_of(ROLE, COMPONENT),
        role_ref: cluster_role_ref(ROLE),
        subjects: Some(vec![user_subject(user)]),
    }
}

/// `cluster-admin` for `user` in an organization or team workspace an admin identity created:
/// what kcp gives the hub in those it creates itself (it grants members roles there, which
/// Kubernetes' escalation check allows only to a holder of them).
pub fn owner_binding(user: &str) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: meta_of(ROLE, COMPONENT),
        role_ref: cluster_role_ref(CLUSTER_ADMIN),
        subjects: Some(vec![user_subject(user)]),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn rules(role: &ClusterRole) -> serde_json::Value {
        serde_json::to_value(role).unwrap()["rules"].clone()
    }

    /// The permission list of docs/install.md#kcp-identities, stated once more as data.
    #[test]
    fn what_the_hub_may_do_where() {
        let access = json!({"nonResourceURLs": ["/"], "verbs": ["access"]});
        assert_eq!(
            rules(&root_role()),
            json!([access, {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]}])
        );
        let tree: Vec<(&str, serde_json::Value)> = tree_roles().iter().map(|(p, r)| (*p, rules(r))).collect();
        assert_eq!(
            tree,
            vec![
                (
                    "root:faros",
                    json!([access,
                        {"apiGroups": ["tenancy.kcp.io"], "resources": ["workspaces"], "verbs": ["get", "list", "watch"]},
                        {"apiGroups": ["tenancy.kcp.io"], "resources": ["workspacetypes"],
                            "resourceNames": ["organization", "workspace"], "verbs": ["use"]}])
                ),
                (
                    "root:faros:system:controllers",
                    json!([access,
                        {"apiGroups": ["apis.kcp.io"], "resources": ["apiexportendpointslices"], "verbs": ["get", "list", "watch"]},
                        {"apiGroups": ["apis.kcp.io"], "resources": ["apiexports/content"],
                            "resourceNames": ["providers.faros.sh"], "verbs": ["get", "list", "watch", "patch", "update"]},
                        {"apiGroups": ["apis.kcp.io"], "resources": ["apiexports/content"],
                            "resourceNames": ["tenancy.faros.sh"], "verbs": ["get", "list", "watch"]},
                        {"apiGroups": ["apis.kcp.io"], "resources": ["apiexports"],
                            "resourceNames": ["tenancy.faros.sh"], "verbs": ["bind"]}])
                ),
                (
                    "root:faros:system:providers",
                    json!([access, {"apiGroups": ["core.kcp.io"], "resources": ["logicalclusters"],
                        "resourceNames": ["cluster"], "verbs": ["get"]}])
                ),
                (
                    "root:faros:providers",
                    json!([access, {"apiGroups": ["tenancy.kcp.io"], "resources": ["workspaces"], "verbs": ["get", "list", "watch"]}])
                ),
                (
                    "root:faros:tenants",
                    json!([access, {"apiGroups": ["tenancy.kcp.io"], "resources": ["workspaces"],
                        "verbs": ["get", "list", "watch", "create", "delete"]}])
                ),
            ]
        );
        assert_eq!(
            rules(&provider_role()),
            json!([access,
                {"apiGroups": ["apis.kcp.io"], "resources": ["apiexports"], "verbs": ["bind"]},
                {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
                {"apiGroups": ["core.kcp.io"], "resources": ["logicalclusters"], "resourceNames": ["cluster"], "verbs": ["get"]}])
        );
        assert_eq!(
            serde_json::to_value(records_role()).unwrap(),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "faros:hub-api", "namespace": "faros-system",
                    "labels": {"app.kubernetes.io/managed-by": "faros", "app.kubernetes.io/component": "hub-api-identity"}},
                "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch", "create", "update", "delete"]}]})
        );
    }

    /// Least privilege, stated as what no role of the hub grants anywhere: no wildcard, no RBAC,
    /// no impersonation, nothing in `root` but token reviews.
    #[test]
    fn no_role_escalates_or_impersonates() {
        let mut all: Vec<PolicyRule> = root_role().rules.unwrap();
        for (_, role) in tree_roles() {
            all.extend(role.rules.unwrap());
        }
        all.extend(provider_role().rules.unwrap());
        all.extend(records_role().rules.unwrap());
        for rule in &all {
            for verb in &rule.verbs {
                assert!(!["*", "escalate", "impersonate"].contains(&verb.as_str()), "{rule:?}");
            }
            for r in rule.resources.iter().flatten() {
                assert!(
                    !r.contains('*')
                        && !["clusterroles", "clusterrolebindings", "roles", "rolebindings"].contains(&r.as_str()),
                    "{rule:?}"
                );
            }
            for g in rule.api_groups.iter().flatten() {
                assert_ne!(g, "*", "{rule:?}");
            }
        }
        let b = serde_json::to_value(binding("h")).unwrap();
        assert_eq!(b["roleRef"]["name"], "faros:hub-api");
        assert_eq!(
            b["subjects"],
            json!([{"kind": "User", "name": "h", "apiGroup": "rbac.authorization.k8s.io"}])
        );
        assert_eq!(
            serde_json::to_value(owner_binding("h")).unwrap()["roleRef"]["name"],
            "cluster-admin"
        );
        assert_eq!(
            serde_json::to_value(records_binding("h")).unwrap()["roleRef"]["kind"],
            "Role"
        );
    }
}
