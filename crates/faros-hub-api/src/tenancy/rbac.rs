//! The RBAC objects that *are* membership, built without IO.
//!
//! Every tenant workspace holds two ClusterRoles: `faros:workspace:admin` (everything) and
//! `faros:workspace:member` (aggregated: `access`, read-only everything, plus write access to the
//! resources of each enabled provider, which Enable adds as its own labelled ClusterRole). A
//! membership is one ClusterRoleBinding per user, named from a hash of the username because
//! usernames (`oidc:alice@example.com`) are not object names; the annotation keeps the readable name.
//! A role may also be granted to a group (an identity provider's group, from the token's groups
//! claim): one binding per group with a `Group` subject, so every member of the group holds the role
//! for as long as their token says they are in it — kcp decides on the groups of each request.

use std::collections::BTreeMap;

use faros_core::names;
use k8s_openapi::api::rbac::v1::{AggregationRule, ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use sha2::{Digest, Sha256};

use super::role::Role;

pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

fn labels(extra: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut l = BTreeMap::from([(names::LABEL_MANAGED_BY.to_string(), names::MANAGED_BY_FAROS.to_string())]);
    for (k, v) in extra {
        l.insert((*k).to_string(), (*v).to_string());
    }
    l
}

fn strings(items: &[&str]) -> Option<Vec<String>> {
    Some(items.iter().map(|s| (*s).to_string()).collect())
}

fn access_rule() -> PolicyRule {
    PolicyRule {
        non_resource_urls: strings(&["/"]),
        verbs: vec!["access".into()],
        ..Default::default()
    }
}

/// The ClusterRoles every organization and team workspace gets.
pub fn workspace_roles() -> Vec<ClusterRole> {
    vec![
        ClusterRole {
            metadata: ObjectMeta {
                name: Some(names::WORKSPACE_ADMIN_ROLE.into()),
                labels: Some(labels(&[])),
                ..Default::default()
            },
            rules: Some(vec![
                access_rule(),
                PolicyRule {
                    api_groups: strings(&["*"]),
                    resources: strings(&["*"]),
                    verbs: vec!["*".into()],
                    ..Default::default()
                },
            ]),
            ..Default::default()
        },
        ClusterRole {
            metadata: ObjectMeta {
                name: Some(names::WORKSPACE_MEMBER_BASE_ROLE.into()),
                labels: Some(labels(&[(names::LABEL_AGGREGATE_TO_MEMBER, "true")])),
                ..Default::default()
            },
            rules: Some(vec![
                access_rule(),
                PolicyRule {
                    api_groups: strings(&["*"]),
                    resources: strings(&["*"]),
                    verbs: vec!["get".into(), "list".into(), "watch".into()],
                    ..Default::default()
                },
            ]),
            ..Default::default()
        },
        ClusterRole {
            metadata: ObjectMeta {
                name: Some(names::WORKSPACE_MEMBER_ROLE.into()),
                labels: Some(labels(&[])),
                ..Default::default()
            },
            aggregation_rule: Some(AggregationRule {
                cluster_role_selectors: Some(vec![LabelSelector {
                    match_labels: Some(BTreeMap::from([(
                        names::LABEL_AGGREGATE_TO_MEMBER.to_string(),
                        "true".to_string(),
                    )])),
                    ..Default::default()
                }]),
            }),
            // Filled by aggregation.
            rules: None,
        },
    ]
}

/// The ClusterRole name of a role.
pub fn role_name(role: Role) -> &'static str {
    match role {
        Role::Admin => names::WORKSPACE_ADMIN_ROLE,
        Role::Member => names::WORKSPACE_MEMBER_ROLE,
    }
}

/// The role a ClusterRole name stands for.
pub fn role_of(cluster_role: &str) -> Option<Role> {
    match cluster_role {
        names::WORKSPACE_ADMIN_ROLE => Some(Role::Admin),
        names::WORKSPACE_MEMBER_ROLE => Some(Role::Member),
        _ => None,
    }
}

fn user_hash(user: &str) -> String {
    let digest = Sha256::digest(user.as_bytes());
    digest.iter().take(10).map(|b| format!("{b:02x}")).collect()
}

/// Name of `user`'s direct membership binding.
pub fn member_binding_name(user: &str) -> String {
    format!("faros:member:{}", user_hash(user))
}

/// Name of the binding that makes org admin `user` an admin of a team workspace.
pub fn inherited_binding_name(user: &str) -> String {
    format!("faros:org-admin:{}", user_hash(user))
}

/// Name of the binding granting a role to `group`.
pub fn group_binding_name(group: &str) -> String {
    format!("faros:group:{}", user_hash(group))
}

/// Name of the binding that makes org-admin group `group` an admin of a team workspace.
pub fn inherited_group_binding_name(group: &str) -> String {
    format!("faros:org-admin-group:{}", user_hash(group))
}

/// What a binding's subject is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SubjectKind {
    User,
    Group,
}

impl SubjectKind {
    fn kind(self) -> &'static str {
        match self {
            Self::User => "User",
            Self::Group => "Group",
        }
    }

    fn annotation(self) -> &'static str {
        match self {
            Self::User => names::ANNOTATION_USER,
            Self::Group => names::ANNOTATION_GROUP,
        }
    }
}

fn binding(name: String, user: &str, role: Role, membership: &str) -> ClusterRoleBinding {
    subject_binding(name, SubjectKind::User, user, role, membership)
}

fn subject_binding(name: String, kind: SubjectKind, who: &str, role: Role, membership: &str) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some(name),
            labels: Some(labels(&[(names::LABEL_MEMBERSHIP, membership)])),
            annotations: Some(BTreeMap::from([(kind.annotation().to_string(), who.to_string())])),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: Some(RBAC_GROUP.into()),
            kind: "ClusterRole".into(),
            name: role_name(role).into(),
        },
        subjects: Some(vec![Subject {
            api_group: Some(RBAC_GROUP.into()),
            kind: kind.kind().into(),
            name: who.into(),
            namespace: None,
        }]),
    }
}

/// Every member of `group` is a direct `role` of the workspace.
pub fn group_binding(group: &str, role: Role) -> ClusterRoleBinding {
    subject_binding(
        group_binding_name(group),
        SubjectKind::Group,
        group,
        role,
        names::MEMBERSHIP_DIRECT,
    )
}

/// Every member of org-admin group `group` is an admin of a team workspace of that org.
pub fn inherited_group_binding(group: &str) -> ClusterRoleBinding {
    subject_binding(
        inherited_group_binding_name(group),
        SubjectKind::Group,
        group,
        Role::Admin,
        names::MEMBERSHIP_INHERITED,
    )
}

/// One group's role as read back from a binding.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GroupMembership {
    pub group: String,
    pub role: Role,
    /// `true` for org-admin groups listed in a team workspace (managed at the organization).
    pub inherited: bool,
}

/// The group membership a faros binding expresses; `None` for any other binding.
pub fn group_membership_of(b: &ClusterRoleBinding) -> Option<GroupMembership> {
    let (group, role, inherited) = membership_parts(b, names::ANNOTATION_GROUP)?;
    Some(GroupMembership { group, role, inherited })
}

/// `user` is a direct `role` of the workspace.
pub fn member_binding(user: &str, role: Role) -> ClusterRoleBinding {
    binding(member_binding_name(user), user, role, names::MEMBERSHIP_DIRECT)
}

/// Org admin `user` is an admin of a team workspace of that org.
pub fn inherited_binding(user: &str) -> ClusterRoleBinding {
    binding(
        inherited_binding_name(user),
        user,
        Role::Admin,
        names::MEMBERSHIP_INHERITED,
    )
}

/// One membership as read back from a binding.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Membership {
    pub user: String,
    pub role: Role,
    /// `true` for org admins listed in a team workspace (managed at the organization).
    pub inherited: bool,
}

/// The membership a faros binding expresses; `None` for any other binding.
pub fn membership_of(b: &ClusterRoleBinding) -> Option<Membership> {
    let (user, role, inherited) = membership_parts(b, names::ANNOTATION_USER)?;
    Some(Membership { user, role, inherited })
}

/// What a faros membership binding says, whoever its subject: the subject's name (from
/// `annotation`, as names are hashed into binding names), the role, and whether it is inherited.
fn membership_parts(b: &ClusterRoleBinding, annotation: &str) -> Option<(String, Role, bool)> {
    let labels = b.metadata.labels.as_ref()?;
    let inherited = match labels.get(names::LABEL_MEMBERSHIP).map(String::as_str) {
        Some(names::MEMBERSHIP_DIRECT) => false,
        Some(names::MEMBERSHIP_INHERITED) => true,
        _ => return None,
    };
    let role = role_of(&b.role_ref.name)?;
    let subject = b.metadata.annotations.as_ref()?.get(annotation)?.clone();
    Some((subject, role, inherited))
}

/// The label selector listing membership bindings.
pub fn membership_selector() -> String {
    names::LABEL_MEMBERSHIP.to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn binding_names_are_stable_valid_and_distinct() {
        let a = member_binding_name("alice");
        assert_eq!(a, member_binding_name("alice"));
        assert_ne!(a, member_binding_name("alice "));
        assert_eq!(a.len(), "faros:member:".len() + 20);
        assert!(
            a.strip_prefix("faros:member:")
                .unwrap()
                .chars()
                .all(|c| c.is_ascii_hexdigit())
        );
        assert_ne!(inherited_binding_name("alice").strip_prefix("faros:org-admin:"), None);
    }

    #[test]
    fn memberships_round_trip() {
        for (b, want) in [
            (
                member_binding("oidc:alice@example.com", Role::Member),
                Some(Membership {
                    user: "oidc:alice@example.com".into(),
                    role: Role::Member,
                    inherited: false,
                }),
            ),
            (
                member_binding("bob", Role::Admin),
                Some(Membership {
                    user: "bob".into(),
                    role: Role::Admin,
                    inherited: false,
                }),
            ),
            (
                inherited_binding("carol"),
                Some(Membership {
                    user: "carol".into(),
                    role: Role::Admin,
                    inherited: true,
                }),
            ),
        ] {
            assert_eq!(membership_of(&b), want);
        }
        let mut foreign = member_binding("dave", Role::Admin);
        foreign.metadata.labels = None;
        assert_eq!(membership_of(&foreign), None);
        let mut other_role = member_binding("dave", Role::Admin);
        other_role.role_ref.name = "cluster-admin".into();
        assert_eq!(membership_of(&other_role), None);
    }

    #[test]
    fn group_memberships_round_trip_and_are_not_user_memberships() {
        let b = group_binding("oidc:dev", Role::Member);
        assert_eq!(b.metadata.name.clone().unwrap(), group_binding_name("oidc:dev"));
        assert_ne!(group_binding_name("alice"), member_binding_name("alice"));
        let subject = &b.subjects.clone().unwrap()[0];
        assert_eq!((subject.kind.as_str(), subject.name.as_str()), ("Group", "oidc:dev"));
        assert_eq!(
            group_membership_of(&b),
            Some(GroupMembership {
                group: "oidc:dev".into(),
                role: Role::Member,
                inherited: false
            })
        );
        assert_eq!(membership_of(&b), None, "a group is not listed as a user");
        assert_eq!(group_membership_of(&member_binding("alice", Role::Admin)), None);
        let inherited = inherited_group_binding("ops");
        assert_eq!(
            group_membership_of(&inherited),
            Some(GroupMembership {
                group: "ops".into(),
                role: Role::Admin,
                inherited: true
            })
        );
        assert_ne!(
            inherited.metadata.name.unwrap(),
            inherited_binding_name("ops"),
            "a user and a group of one name are different subjects"
        );
    }

    #[test]
    fn member_role_aggregates_the_base_role() {
        let roles = workspace_roles();
        let names: Vec<_> = roles.iter().map(|r| r.metadata.name.clone().unwrap()).collect();
        assert_eq!(
            names,
            [
                names::WORKSPACE_ADMIN_ROLE,
                names::WORKSPACE_MEMBER_BASE_ROLE,
                names::WORKSPACE_MEMBER_ROLE
            ]
        );
        let base_labels = roles[1].metadata.labels.clone().unwrap();
        let selector = roles[2]
            .aggregation_rule
            .clone()
            .unwrap()
            .cluster_role_selectors
            .unwrap();
        for (k, v) in selector[0].match_labels.clone().unwrap() {
            assert_eq!(base_labels.get(&k), Some(&v));
        }
        assert!(roles[0].rules.clone().unwrap().iter().any(|r| r.verbs == ["access"]));
    }
}
