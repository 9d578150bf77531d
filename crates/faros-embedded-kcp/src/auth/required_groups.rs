//! kcp's required-groups gate, IO-free: a logical cluster annotated with
//! `authorization.kcp.io/required-groups` admits only users in every group of at least one clause
//! (clauses separated by `;`, groups within one by `,`). ServiceAccounts and kcp's admin and
//! workspace-bootstrapper groups always pass. The annotation is inherited by child workspaces.

use super::UserInfo;
use super::bootstrap_roles::KCP_ADMIN_GROUP;

pub const REQUIRED_GROUPS_ANNOTATION: &str = "authorization.kcp.io/required-groups";
/// kcp's bootstrap group.
const WORKSPACE_BOOTSTRAPPER_GROUP: &str = "system:kcp:tenancy:workspace-bootstrapper";

/// Whether `user` may enter a cluster whose annotation is `value`.
pub fn satisfied(value: &str, user: &UserInfo) -> bool {
    if user.service_account().is_some() {
        return true;
    }
    value
        .split(';')
        .chain([KCP_ADMIN_GROUP, WORKSPACE_BOOTSTRAPPER_GROUP])
        .any(|clause| clause.split(',').all(|g| user.in_group(g)))
}

/// kcp's denial reason.
pub fn denial(value: &str) -> String {
    format!("user is not a member of required groups: {value}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            username: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn clauses_are_ored_and_groups_anded() {
        let cases = [
            ("a", user("u", &["a"]), true),
            ("a", user("u", &["b"]), false),
            ("a,b", user("u", &["a"]), false),
            ("a,b", user("u", &["b", "a"]), true),
            ("a,b;c", user("u", &["c"]), true),
            ("a,b;c", user("u", &["a", "x"]), false),
            ("a", user("u", &["system:kcp:admin"]), true),
            ("a", user("u", &["system:kcp:tenancy:workspace-bootstrapper"]), true),
            ("a", user("system:serviceaccount:default:x", &[]), true),
            ("a", user("u", &[]), false),
        ];
        for (value, u, want) in cases {
            assert_eq!(satisfied(value, &u), want, "{value} {u:?}");
        }
        assert_eq!(denial("a;b"), "user is not a member of required groups: a;b");
    }
}
