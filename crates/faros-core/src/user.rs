//! Who a request is, as Kubernetes and kcp describe it: `authentication.k8s.io/v1` `UserInfo`, the
//! ServiceAccount user-name shape, and kcp's cluster-name extra.
//!
//! A ServiceAccount's name (`system:serviceaccount:<ns>:<name>`) is unique only inside its logical
//! cluster: every workspace can have a `default/deployer`. kcp tells them apart by the
//! [`EXTRA_CLUSTER_NAME`] extra its authenticators attach, and it treats a ServiceAccount of another
//! cluster as nobody in particular. Anything that asks kcp about a user (a SubjectAccessReview) or
//! decides about a user itself must therefore carry the whole `UserInfo`, extra included: the user
//! name alone names a different principal in every workspace.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Every authenticated caller is in this group (kube-apiserver adds it after any authenticator).
pub const GROUP_AUTHENTICATED: &str = "system:authenticated";
/// All ServiceAccounts are in this group; `<this>:<namespace>` narrows it to one namespace.
pub const GROUP_SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
/// The user-info extra key kcp uses for the logical cluster a ServiceAccount lives in (kcp's
/// `ClusterNameKey`; real kcp v0.32 answers TokenReviews of ServiceAccount tokens with it).
pub const EXTRA_CLUSTER_NAME: &str = "authentication.kcp.io/cluster-name";
/// The user name prefix of ServiceAccounts: `system:serviceaccount:<ns>:<name>`.
pub const SERVICE_ACCOUNT_USER_PREFIX: &str = "system:serviceaccount:";

/// An authenticated identity, serialized as `authentication.k8s.io/v1` `UserInfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct UserInfo {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub username: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// Adds `group` unless already present; kube-apiserver never lists a group twice.
    pub fn ensure_group(&mut self, group: &str) {
        if !self.in_group(group) {
            self.groups.push(group.to_string());
        }
    }

    /// `(namespace, name)` when the user name has the ServiceAccount shape.
    pub fn service_account(&self) -> Option<(&str, &str)> {
        split_service_account_username(&self.username)
    }

    /// The logical cluster a ServiceAccount user belongs to (kcp's cluster-name extra).
    pub fn cluster_name(&self) -> Option<&str> {
        cluster_name(&self.extra)
    }
}

/// The logical cluster kcp's cluster-name extra in `extra` names, for callers holding the user's
/// parts rather than a [`UserInfo`].
pub fn cluster_name(extra: &BTreeMap<String, Vec<String>>) -> Option<&str> {
    extra
        .get(EXTRA_CLUSTER_NAME)
        .and_then(|v| v.first())
        .map(String::as_str)
}

/// `system:serviceaccount:<ns>:<name>` → `(ns, name)`; both parts must be non-empty and the name
/// may not contain `:` (Kubernetes' `serviceaccount.SplitUsername`).
pub fn split_service_account_username(username: &str) -> Option<(&str, &str)> {
    let rest = username.strip_prefix(SERVICE_ACCOUNT_USER_PREFIX)?;
    let (ns, name) = rest.split_once(':')?;
    if ns.is_empty() || name.is_empty() || name.contains(':') {
        return None;
    }
    Some((ns, name))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn user_info_json_matches_authentication_k8s_io_v1() {
        let user = UserInfo {
            username: "system:serviceaccount:default:provider".into(),
            uid: "u-1".into(),
            groups: vec!["system:serviceaccounts".into(), "system:authenticated".into()],
            extra: BTreeMap::from([(EXTRA_CLUSTER_NAME.to_string(), vec!["abc123".to_string()])]),
        };
        let json = serde_json::to_value(&user).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "username": "system:serviceaccount:default:provider",
                "uid": "u-1",
                "groups": ["system:serviceaccounts", "system:authenticated"],
                "extra": {"authentication.kcp.io/cluster-name": ["abc123"]}
            })
        );
        assert_eq!(serde_json::from_value::<UserInfo>(json).unwrap(), user);
        assert_eq!(
            serde_json::to_value(UserInfo::default()).unwrap(),
            serde_json::json!({})
        );
    }

    #[test]
    fn service_account_usernames() {
        let cases = [
            ("system:serviceaccount:default:provider", Some(("default", "provider"))),
            ("system:serviceaccount:ns:", None),
            ("system:serviceaccount::name", None),
            ("system:serviceaccount:ns:a:b", None),
            ("system:serviceaccount:ns", None),
            ("system:kcp:serviceaccount:c:ns:a", None),
            ("alice", None),
        ];
        for (input, want) in cases {
            assert_eq!(split_service_account_username(input), want, "{input}");
        }
    }

    #[test]
    fn cluster_names_come_from_kcps_extra() {
        let mut user = UserInfo::default();
        assert_eq!(user.cluster_name(), None);
        user.extra
            .insert("authentication.kubernetes.io/cluster-name".into(), vec!["k8s".into()]);
        assert_eq!(user.cluster_name(), None, "only kcp's key names the cluster");
        user.extra
            .insert(EXTRA_CLUSTER_NAME.into(), vec!["c1".into(), "c2".into()]);
        assert_eq!(user.cluster_name(), Some("c1"));
        assert_eq!(cluster_name(&user.extra), Some("c1"));
    }
}
