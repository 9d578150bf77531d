//! kcp's bootstrap ClusterRoles: kcp keeps them in its own admin logical cluster, and its
//! authorizers merge them into every workspace, so a binding to e.g. `system:kcp:workspace:access`
//! works in any workspace without the role existing there. A ClusterRole of the same name in the
//! workspace itself wins. Its bootstrap bindings apply everywhere too: `system:kcp:admin` is
//! cluster-admin in every workspace.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use super::rbac::PolicyRule;

fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    PolicyRule {
        verbs: strings(verbs),
        api_groups: strings(groups),
        resources: strings(resources),
        ..Default::default()
    }
}

fn urls(verbs: &[&str], urls: &[&str]) -> PolicyRule {
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    PolicyRule {
        verbs: strings(verbs),
        non_resource_urls: strings(urls),
        ..Default::default()
    }
}

static ROLES: LazyLock<BTreeMap<&'static str, Arc<[PolicyRule]>>> = LazyLock::new(|| {
    let read = ["get", "list", "watch"];
    BTreeMap::from([
        (
            "system:kcp:workspace:access",
            Arc::from(vec![urls(&["access"], &["/"])]),
        ),
        (
            "system:kcp:tenancy:reader",
            Arc::from(vec![
                rule(&read, &["tenancy.kcp.io"], &["workspaces", "workspacetypes"]),
                rule(&read, &["core.kcp.io"], &["logicalclusters"]),
            ]),
        ),
        (
            "system:kcp:metrics-reader",
            Arc::from(vec![urls(&["get"], &["/metrics"])]),
        ),
    ])
});

/// The rules of bootstrap ClusterRole `name`, if kcp has one of that name.
pub fn rules(name: &str) -> Option<Arc<[PolicyRule]>> {
    ROLES.get(name).cloned()
}

/// kcp's global admin group: its bootstrap binding `system:kcp:admin:cluster-admin` gives it
/// cluster-admin in every workspace.
pub const KCP_ADMIN_GROUP: &str = "system:kcp:admin";

static CLUSTER_ADMIN: LazyLock<Arc<[PolicyRule]>> =
    LazyLock::new(|| Arc::from(vec![rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])]));

/// The rules kcp's bootstrap ClusterRoleBindings give a user of `groups` in every workspace.
pub fn bound_rules(groups: &[String]) -> Option<Arc<[PolicyRule]>> {
    groups
        .iter()
        .any(|g| g == KCP_ADMIN_GROUP)
        .then(|| CLUSTER_ADMIN.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_access_grants_access_on_root_path_only() {
        let access = rules("system:kcp:workspace:access").unwrap();
        assert_eq!(access.len(), 1);
        assert_eq!(access[0].verbs, ["access"]);
        assert_eq!(access[0].non_resource_urls, ["/"]);
        assert!(rules("system:kcp:tenancy:reader").is_some());
        assert!(rules("cluster-admin").is_none(), "only kcp's own roles are global");
    }

    #[test]
    fn kcp_admins_are_cluster_admins_everywhere() {
        let groups = |g: &[&str]| g.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let admin = bound_rules(&groups(&["system:authenticated", KCP_ADMIN_GROUP])).unwrap();
        assert_eq!(admin.len(), 2);
        assert_eq!(admin[0].verbs, ["*"]);
        assert_eq!(admin[1].non_resource_urls, ["*"]);
        assert!(bound_rules(&groups(&["system:authenticated", "system:masters"])).is_none());
    }
}
