//! Who is calling and what they may do.
//!
//! Authentication turns a bearer token into a [`UserInfo`] (admin token, kcp/kube-apiserver static
//! token file, ServiceAccount JWTs); authorization evaluates Kubernetes RBAC per logical cluster
//! ([`RbacIndex`]) and renders kube-apiserver's exact 403 texts ([`forbidden_message`]).
//! Everything here is IO-free: the server feeds objects in and asks questions.

pub mod authn;
pub mod authorize;
pub mod bootstrap_roles;
pub mod rbac;
pub mod rbac_index;
pub mod required_groups;
pub mod service_account;
pub mod system_policy;
pub mod token_file;
pub mod verb;

pub use authn::{Authenticator, CredentialSource, ReloadCounts, generate_token};
pub use authorize::{authorize, authorize_content};
pub use rbac::{Attributes, Decision, forbidden_status};
pub use rbac_index::{RbacIndex, RbacKind};
pub use required_groups::REQUIRED_GROUPS_ANNOTATION;
pub use service_account::{SaClaims, ServiceAccountTokens};
pub use token_file::parse_token_file;
pub use verb::Verb;

pub use faros_core::user::{
    EXTRA_CLUSTER_NAME, GROUP_AUTHENTICATED, GROUP_SERVICE_ACCOUNTS, SERVICE_ACCOUNT_USER_PREFIX, UserInfo,
};

/// Members bypass authorization entirely.
pub const GROUP_MASTERS: &str = "system:masters";

/// The user of a request without credentials (kube's anonymous authenticator).
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// The only group of [`ANONYMOUS_USER`]; no bootstrap role is bound to it.
pub const GROUP_UNAUTHENTICATED: &str = "system:unauthenticated";

/// `system:anonymous` in `system:unauthenticated`, as kube-apiserver and kcp name a caller without
/// credentials; authorization refuses it everything RBAC does not grant it.
pub fn anonymous() -> UserInfo {
    UserInfo {
        username: ANONYMOUS_USER.to_string(),
        groups: vec![GROUP_UNAUTHENTICATED.to_string()],
        ..Default::default()
    }
}

/// Whether `user` is the caller without credentials.
pub fn is_anonymous(user: &UserInfo) -> bool {
    user.username == ANONYMOUS_USER
}
