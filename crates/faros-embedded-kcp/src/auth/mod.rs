//! Who is calling and what they may do.
//!
//! Authentication turns a bearer token into a [`UserInfo`] (admin token, kcp/kube-apiserver static
//! token file, ServiceAccount JWTs); authorization evaluates Kubernetes RBAC per logical cluster
//! ([`RbacIndex`]) and renders kube-apiserver's exact 403 texts ([`forbidden_message`]).
//! Everything here is IO-free: the server feeds objects in and asks questions.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub mod authn;
pub mod authorize;
pub mod bootstrap_roles;
pub mod rbac;
pub mod rbac_index;
pub mod required_groups;
pub mod service_account;
pub mod system_policy;
pub mod token_file;

pub use authn::{Authenticator, CredentialSource, ReloadCounts, generate_token};
pub use authorize::{authorize, authorize_content};
pub use rbac::{Attributes, Decision, forbidden_status};
pub use rbac_index::{RbacIndex, RbacKind};
pub use required_groups::REQUIRED_GROUPS_ANNOTATION;
pub use service_account::{SaClaims, ServiceAccountTokens};
pub use token_file::parse_token_file;

/// Every authenticated caller is in this group (kube-apiserver adds it after any authenticator).
pub const GROUP_AUTHENTICATED: &str = "system:authenticated";
/// Members bypass authorization entirely.
pub const GROUP_MASTERS: &str = "system:masters";
/// All ServiceAccounts are in this group; `<this>:<namespace>` narrows it to one namespace.
pub const GROUP_SERVICE_ACCOUNTS: &str = "system:serviceaccounts";
/// The user-info extra key kcp uses for the logical cluster a ServiceAccount lives in.
pub const EXTRA_CLUSTER_NAME: &str = "authentication.kubernetes.io/cluster-name";
/// The user name prefix of ServiceAccounts: `system:serviceaccount:<ns>:<name>`.
pub const SERVICE_ACCOUNT_USER_PREFIX: &str = "system:serviceaccount:";

/// An authenticated identity, serialized as `authentication.k8s.io/v1` `UserInfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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

    /// `(namespace, name)` when the user name has the ServiceAccount shape.
    pub fn service_account(&self) -> Option<(&str, &str)> {
        split_service_account_username(&self.username)
    }

    /// The logical cluster a ServiceAccount user belongs to (kcp's cluster-name extra).
    pub fn cluster_name(&self) -> Option<&str> {
        self.extra
            .get(EXTRA_CLUSTER_NAME)
            .and_then(|v| v.first())
            .map(String::as_str)
    }

    /// Adds `group` unless already present; kube-apiserver never lists a group twice.
    pub(crate) fn ensure_group(&mut self, group: &str) {
        if !self.in_group(group) {
            self.groups.push(group.to_string());
        }
    }
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
    use pretty_assertions::assert_eq;

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
                "extra": {"authentication.kubernetes.io/cluster-name": ["abc123"]}
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
            ("alice", None),
        ];
        for (input, want) in cases {
            assert_eq!(split_service_account_username(input), want, "{input}");
        }
    }
}
