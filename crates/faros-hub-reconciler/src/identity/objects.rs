//! IO-free: the RBAC objects that give the reconciler's own kcp identity what it uses, and the
//! workspaces they go to.
//!
//! kcp ServiceAccounts authenticate in their own logical cluster only (elsewhere they are
//! `system:anonymous`), so a component that works across the faros tree is a kcp *user*: a static
//! token, a client certificate or an OIDC subject that kcp's front-proxy authenticates. The grant
//! follows kcp's own ownership rule: whoever creates a workspace is its `cluster-admin` (kcp's
//! `workspace-admin` binding). The reconciler creates `root:faros` and everything below it that
//! faros owns, so in `root` it needs only to read and create workspaces; [`owner_binding`] gives it
//! in a workspace that already exists (made by an admin identity before) what creating it would
//! have given it.

use std::collections::BTreeMap;

use faros_core::names;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::tree;

/// The user name the reconciler authenticates to kcp as, unless told otherwise.
pub const DEFAULT_USER: &str = names::RECONCILER_KCP_USER;
/// Name of the ClusterRole in `root` and of every ClusterRoleBinding of the grant.
pub const ROLE: &str = "faros:hub-reconciler";
/// kcp's (and Kubernetes') all-powerful ClusterRole, the one kcp binds a workspace's creator to.
pub const CLUSTER_ADMIN: &str = "cluster-admin";
pub const LABEL_COMPONENT: &str = "app.kubernetes.io/component";
pub const COMPONENT: &str = "hub-reconciler-identity";
/// Field manager of the grant's writes (made with an admin identity, never by the reconciler).
pub const FIELD_MANAGER: &str = "faros-identity-grant";
pub(crate) const TENANCY_GROUP: &str = "tenancy.kcp.io";
pub(crate) const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// The verbs on `workspaces` in `root`: read (to wait for `root:faros` and learn its logical
/// cluster) and create (`root:faros`, once). No update, no delete: nothing else in `root` is faros'.
pub const ROOT_WORKSPACE_VERBS: [&str; 4] = ["get", "list", "watch", "create"];

/// Metadata of a grant object: `name`, labelled as faros' and as `component`'s.
pub(crate) fn meta_of(name: &str, component: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        labels: Some(BTreeMap::from([
            (names::LABEL_MANAGED_BY.to_string(), names::MANAGED_BY_FAROS.to_string()),
            (LABEL_COMPONENT.to_string(), component.to_string()),
        ])),
        ..Default::default()
    }
}

fn meta(name: &str) -> ObjectMeta {
    meta_of(name, COMPONENT)
}

pub(crate) fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The RBAC subject of kcp user `user`.
pub(crate) fn user_subject(user: &str) -> Subject {
    Subject {
        kind: "User".into(),
        name: user.into(),
        api_group: Some(RBAC_GROUP.into()),
        namespace: None,
    }
}

/// A reference to ClusterRole `name`.
pub(crate) fn cluster_role_ref(name: &str) -> RoleRef {
    RoleRef {
        api_group: Some(RBAC_GROUP.into()),
        kind: "ClusterRole".into(),
        name: name.into(),
    }
}

/// What the reconciler may do in `root`: enter it, read and create workspaces, and use kcp's
/// `universal` type (the type of `root:faros`). kcp grants `access` and the `universal` type to
/// every authenticated user in `root` already; the role says so itself rather than rely on it.
pub fn root_cluster_role() -> ClusterRole {
    ClusterRole {
        metadata: meta(ROLE),
        rules: Some(vec![
            PolicyRule {
                non_resource_urls: Some(strings(&["/"])),
                verbs: strings(&["access"]),
                ..Default::default()
            },
            PolicyRule {
                api_groups: Some(strings(&[TENANCY_GROUP])),
                resources: Some(strings(&["workspaces"])),
                verbs: strings(&ROOT_WORKSPACE_VERBS),
                ..Default::default()
            },
            PolicyRule {
                api_groups: Some(strings(&[TENANCY_GROUP])),
                resources: Some(strings(&["workspacetypes"])),
                resource_names: Some(strings(&[names::WORKSPACE_TYPE_UNIVERSAL])),
                verbs: strings(&["use"]),
                ..Default::default()
            },
        ]),
        ..Default::default()
    }
}

fn binding(user: &str, role: &str) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: meta(ROLE),
        role_ref: cluster_role_ref(role),
        subjects: Some(vec![user_subject(user)]),
    }
}

/// Binds [`root_cluster_role`] to `user` in `root`.
pub fn root_binding(user: &str) -> ClusterRoleBinding {
    binding(user, ROLE)
}

/// `cluster-admin` for `user` in a faros workspace that exists already: what kcp gives the
/// creator, for a workspace an admin identity created before the reconciler had its own.
pub fn owner_binding(user: &str) -> ClusterRoleBinding {
    binding(user, CLUSTER_ADMIN)
}

/// The structural faros workspaces the reconciler owns, parents first (provider workspaces, in
/// `root:faros:providers`, are listed at grant time).
pub fn owned_tree() -> Vec<String> {
    tree::workspace_tree().iter().map(|w| w.path()).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn bodies() {
        let managed =
            json!({"app.kubernetes.io/managed-by": "faros", "app.kubernetes.io/component": "hub-reconciler-identity"});
        assert_eq!(
            serde_json::to_value(root_cluster_role()).unwrap(),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "faros:hub-reconciler", "labels": managed},
            "rules": [
                {"nonResourceURLs": ["/"], "verbs": ["access"]},
                {"apiGroups": ["tenancy.kcp.io"], "resources": ["workspaces"],
                    "verbs": ["get", "list", "watch", "create"]},
                {"apiGroups": ["tenancy.kcp.io"], "resources": ["workspacetypes"],
                    "resourceNames": ["universal"], "verbs": ["use"]},
            ]})
        );
        let subject = json!([{"kind": "User", "name": "r", "apiGroup": "rbac.authorization.k8s.io"}]);
        assert_eq!(
            serde_json::to_value(root_binding("r")).unwrap(),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "faros:hub-reconciler", "labels": managed},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "faros:hub-reconciler"},
                "subjects": subject})
        );
        assert_eq!(
            serde_json::to_value(owner_binding("r")).unwrap()["roleRef"]["name"],
            "cluster-admin"
        );
    }

    /// Least privilege in `root`, stated as what the role must never grant there.
    #[test]
    fn the_root_role_never_updates_deletes_or_escalates() {
        for rule in root_cluster_role().rules.unwrap() {
            for verb in &rule.verbs {
                assert!(
                    ![
                        "*",
                        "update",
                        "patch",
                        "delete",
                        "deletecollection",
                        "escalate",
                        "bind",
                        "impersonate"
                    ]
                    .contains(&verb.as_str()),
                    "{rule:?}"
                );
            }
            assert!(
                rule.resources
                    .iter()
                    .flatten()
                    .all(|r| r == "workspaces" || r == "workspacetypes")
            );
        }
    }

    #[test]
    fn owned_tree_is_the_faros_tree_parents_first() {
        assert_eq!(
            owned_tree(),
            [
                "root:faros",
                "root:faros:system",
                "root:faros:system:controllers",
                "root:faros:system:providers",
                "root:faros:providers",
                "root:faros:tenants"
            ]
        );
    }
}
