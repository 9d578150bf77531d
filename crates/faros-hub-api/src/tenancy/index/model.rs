//! The membership index itself, IO-free: faros' membership ClusterRoleBindings of every covered
//! tenant workspace, keyed for the two questions the hub asks — "which workspaces does this caller
//! belong to, with what role" and "what is this caller's role in that workspace".
//!
//! A workspace is **covered** when its `tenancy.faros.sh` APIBinding is seen: only then does the
//! watch see its bindings, so only then may an absent binding mean "not a member". Everything is
//! kept per source (one virtual workspace URL per shard), so a shard's relist replaces exactly what
//! that shard said.
//!
//! Only subjects kcp decides on by name alone are indexed: users that are not ServiceAccounts, and
//! groups. A ServiceAccount's user name repeats in every workspace and kcp tells them apart by the
//! cluster the token came from; the index leaves those callers to a SubjectAccessReview, which
//! carries that cluster ([`super::super::access`]).

use std::collections::{BTreeMap, HashMap, HashSet};

use faros_core::names;
use faros_core::user::split_service_account_username;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;

use super::super::rbac::{RBAC_GROUP, role_of};
use super::super::role::Role;

/// Who a membership binding names.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Subject {
    User(String),
    Group(String),
}

/// One membership binding, reduced to what decides membership.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub subjects: Vec<Subject>,
    pub role: Role,
}

/// The grant a ClusterRoleBinding expresses, when it is one of faros' membership bindings (labelled
/// `faros.sh/membership`, bound to `faros:workspace:admin` or `faros:workspace:member`). Subjects
/// the index does not decide on (ServiceAccounts, users named like ServiceAccounts) are dropped.
pub fn grant_of(binding: &ClusterRoleBinding) -> Option<Grant> {
    let labels = binding.metadata.labels.as_ref()?;
    if labels.get(names::LABEL_MANAGED_BY).map(String::as_str) != Some(names::MANAGED_BY_FAROS)
        || !labels.contains_key(names::LABEL_MEMBERSHIP)
    {
        return None;
    }
    let role_ref = &binding.role_ref;
    if role_ref.kind != "ClusterRole" || role_ref.api_group.as_deref().is_some_and(|g| g != RBAC_GROUP) {
        return None;
    }
    let role = role_of(&role_ref.name)?;
    let subjects = binding
        .subjects
        .iter()
        .flatten()
        .filter(|s| s.api_group.as_deref().is_none_or(|g| g == RBAC_GROUP || g.is_empty()))
        .filter_map(|s| match s.kind.as_str() {
            "User" if split_service_account_username(&s.name).is_none() => Some(Subject::User(s.name.clone())),
            "Group" => Some(Subject::Group(s.name.clone())),
            _ => None,
        })
        .collect();
    Some(Grant { subjects, role })
}

/// Whether the index may decide for a caller with user name `user` (see the module docs).
pub fn decides_for(user: &str) -> bool {
    split_service_account_username(user).is_none()
}

/// What one source (a virtual workspace URL) reported.
#[derive(Debug, Default)]
struct Source {
    /// (cluster, binding name) → grant.
    grants: HashMap<(String, String), Grant>,
    covered: HashSet<String>,
}

/// The index (see the module docs).
#[derive(Debug, Default)]
pub struct Memberships {
    sources: HashMap<String, Source>,
    /// Subject → cluster → binding names granting admin / member there (derived from `sources`).
    by_subject: HashMap<Subject, HashMap<String, RoleCount>>,
    /// Cluster → how many sources cover it.
    covered: HashMap<String, usize>,
    /// Counts changes to the set of covered clusters, so what is derived from it is recomputed
    /// only after one.
    coverage_generation: u64,
}

/// How many bindings give a subject each role in one cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct RoleCount {
    admin: u32,
    member: u32,
}

impl RoleCount {
    fn role(self) -> Option<Role> {
        if self.admin > 0 {
            Some(Role::Admin)
        } else if self.member > 0 {
            Some(Role::Member)
        } else {
            None
        }
    }

    fn slot(&mut self, role: Role) -> &mut u32 {
        match role {
            Role::Admin => &mut self.admin,
            Role::Member => &mut self.member,
        }
    }
}

impl Memberships {
    /// Sets (or replaces) binding `name` of `cluster` as reported by `source`; `None` removes it.
    pub fn set_grant(&mut self, source: &str, cluster: &str, name: &str, grant: Option<Grant>) {
        let key = (cluster.to_string(), name.to_string());
        let src = self.sources.entry(source.to_string()).or_default();
        let old = match &grant {
            Some(g) => src.grants.insert(key, g.clone()),
            None => src.grants.remove(&key),
        };
        if let Some(old) = old {
            self.count(cluster, &old, false);
        }
        if let Some(new) = grant {
            self.count(cluster, &new, true);
        }
    }

    /// Sets binding `name` of `cluster` in every source that covers the cluster (a write of the
    /// hub's own, ahead of the watch); nothing where no source covers it.
    pub fn set_where_covered(&mut self, cluster: &str, name: &str, grant: Option<Grant>) {
        let sources: Vec<String> = self
            .sources
            .iter()
            .filter(|(_, s)| s.covered.contains(cluster))
            .map(|(k, _)| k.clone())
            .collect();
        for source in sources {
            self.set_grant(&source, cluster, name, grant.clone());
        }
    }

    /// Marks `cluster` covered (its tenancy binding exists) or not, as `source` reports it.
    pub fn set_covered(&mut self, source: &str, cluster: &str, covered: bool) {
        let src = self.sources.entry(source.to_string()).or_default();
        let changed = if covered {
            src.covered.insert(cluster.to_string())
        } else {
            src.covered.remove(cluster)
        };
        if !changed {
            return;
        }
        let n = self.covered.entry(cluster.to_string()).or_default();
        if covered {
            *n += 1;
            if *n == 1 {
                self.coverage_generation += 1;
            }
        } else {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.covered.remove(cluster);
                self.coverage_generation += 1;
            }
        }
    }

    /// Changes to the set of covered clusters so far.
    pub fn coverage_generation(&self) -> u64 {
        self.coverage_generation
    }

    /// Replaces everything `source` reported with a fresh listing of grants (cluster, name, grant).
    pub fn replace_grants(&mut self, source: &str, grants: Vec<(String, String, Grant)>) {
        let old: Vec<(String, String)> = self
            .sources
            .get(source)
            .map(|s| s.grants.keys().cloned().collect())
            .unwrap_or_default();
        for (cluster, name) in old {
            self.set_grant(source, &cluster, &name, None);
        }
        for (cluster, name, grant) in grants {
            self.set_grant(source, &cluster, &name, Some(grant));
        }
    }

    /// Replaces the clusters `source` covers with a fresh listing; returns those it covered before
    /// and no longer lists.
    pub fn replace_covered(&mut self, source: &str, clusters: Vec<String>) -> Vec<String> {
        let old: Vec<String> = self
            .sources
            .get(source)
            .map(|s| s.covered.iter().cloned().collect())
            .unwrap_or_default();
        let dropped = old.iter().filter(|c| !clusters.contains(c)).cloned().collect();
        for cluster in old {
            self.set_covered(source, &cluster, false);
        }
        for cluster in clusters {
            self.set_covered(source, &cluster, true);
        }
        dropped
    }

    /// Whether `source` covers `cluster`.
    pub fn source_covers(&self, source: &str, cluster: &str) -> bool {
        self.sources.get(source).is_some_and(|s| s.covered.contains(cluster))
    }

    /// Replaces what `source` holds for `cluster` alone with a listing of that workspace's
    /// bindings (name, grant); an empty listing forgets them.
    pub fn replace_cluster_grants(&mut self, source: &str, cluster: &str, grants: Vec<(String, Grant)>) {
        let held: Vec<String> = self
            .sources
            .get(source)
            .map(|s| {
                s.grants
                    .keys()
                    .filter(|(c, _)| c == cluster)
                    .map(|(_, name)| name.clone())
                    .collect()
            })
            .unwrap_or_default();
        for name in held {
            self.set_grant(source, cluster, &name, None);
        }
        for (name, grant) in grants {
            self.set_grant(source, cluster, &name, Some(grant));
        }
    }

    /// Forgets everything `source` reported (its URL is gone).
    pub fn retire(&mut self, source: &str) {
        self.replace_grants(source, Vec::new());
        // Not "dropped": the source moved (its URL is gone), the bindings did not.
        self.replace_covered(source, Vec::new());
        self.sources.remove(source);
    }

    fn count(&mut self, cluster: &str, grant: &Grant, add: bool) {
        for subject in &grant.subjects {
            let per_cluster = self.by_subject.entry(subject.clone()).or_default();
            let c = per_cluster.entry(cluster.to_string()).or_default();
            let slot = c.slot(grant.role);
            *slot = if add { *slot + 1 } else { slot.saturating_sub(1) };
            if c.role().is_none() {
                per_cluster.remove(cluster);
            }
            if per_cluster.is_empty() {
                self.by_subject.remove(subject);
            }
        }
    }

    pub fn is_covered(&self, cluster: &str) -> bool {
        self.covered.contains_key(cluster)
    }

    /// Every covered cluster.
    pub fn covered(&self) -> impl Iterator<Item = &str> {
        self.covered.keys().map(String::as_str)
    }

    /// The role of a caller (`user`, `groups`) in `cluster`: `None` when the index cannot tell (not
    /// covered, or a caller it does not decide for), `Some(None)` when not a member.
    pub fn role(&self, user: &str, groups: &[String], cluster: &str) -> Option<Option<Role>> {
        if !decides_for(user) || !self.is_covered(cluster) {
            return None;
        }
        Some(
            subjects(user, groups)
                .filter_map(|s| self.by_subject.get(&s)?.get(cluster)?.role())
                .max(),
        )
    }

    /// Every covered cluster where the caller holds a role, with its highest role; `None` for a
    /// caller the index does not decide for.
    pub fn roles(&self, user: &str, groups: &[String]) -> Option<BTreeMap<String, Role>> {
        if !decides_for(user) {
            return None;
        }
        let mut out: BTreeMap<String, Role> = BTreeMap::new();
        for s in subjects(user, groups) {
            for (cluster, count) in self.by_subject.get(&s).into_iter().flatten() {
                let (Some(role), true) = (count.role(), self.is_covered(cluster)) else {
                    continue;
                };
                let e = out.entry(cluster.clone()).or_insert(role);
                *e = (*e).max(role);
            }
        }
        Some(out)
    }

    /// [`Self::role`] for each of `clusters`, from one computation of the caller's roles: a list of
    /// ten thousand organizations costs one walk of the caller's bindings and a lookup per
    /// organization, not ten thousand of each.
    pub fn roles_in<'c>(
        &self,
        user: &str,
        groups: &[String],
        clusters: impl IntoIterator<Item = &'c str>,
    ) -> Vec<Option<Option<Role>>> {
        let held = self.roles(user, groups);
        clusters
            .into_iter()
            .map(|cluster| {
                let held = held.as_ref()?;
                self.is_covered(cluster).then(|| held.get(cluster).copied())
            })
            .collect()
    }

    /// Bindings held, over all sources (for metrics).
    pub fn len(&self) -> usize {
        self.sources.values().map(|s| s.grants.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn subjects<'a>(user: &'a str, groups: &'a [String]) -> impl Iterator<Item = Subject> + 'a {
    std::iter::once(Subject::User(user.to_string())).chain(groups.iter().map(|g| Subject::Group(g.clone())))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::super::rbac;
    use super::*;

    fn g(subjects: &[Subject], role: Role) -> Option<Grant> {
        Some(Grant {
            subjects: subjects.to_vec(),
            role,
        })
    }

    fn user(u: &str) -> Subject {
        Subject::User(u.into())
    }

    fn group(u: &str) -> Subject {
        Subject::Group(u.into())
    }

    #[test]
    fn grants_of_bindings() {
        let member = rbac::member_binding("alice", Role::Member);
        assert_eq!(grant_of(&member), g(&[user("alice")], Role::Member));
        let admins = rbac::group_binding("oidc:platform", Role::Admin);
        assert_eq!(grant_of(&admins), g(&[group("oidc:platform")], Role::Admin));
        // A ServiceAccount-named user is left to kcp's reviews.
        let sa = rbac::member_binding("system:serviceaccount:default:deployer", Role::Admin);
        assert_eq!(grant_of(&sa), g(&[], Role::Admin));
        // Not a membership binding: no label, or a role that is not faros'.
        let mut unlabelled = member.clone();
        unlabelled.metadata.labels = None;
        assert_eq!(grant_of(&unlabelled), None);
        let mut other_role = member.clone();
        other_role.role_ref.name = "cluster-admin".into();
        assert_eq!(grant_of(&other_role), None);
        let mut role_kind = member;
        role_kind.role_ref.kind = "Role".into();
        assert_eq!(grant_of(&role_kind), None);
    }

    /// (steps applied in order, user, groups, cluster, expected role answer)
    #[test]
    fn roles_follow_grants_and_coverage() {
        type Step = (&'static str, &'static str, &'static str, Option<Grant>);
        /// (name, steps, covered clusters, user, cluster, groups, expected answer)
        type Case<'a> = (
            &'a str,
            &'a [Step],
            &'a [&'a str],
            &'a str,
            &'a str,
            &'a [&'a str],
            Option<Option<Role>>,
        );
        let none: &[&str] = &[];
        let cases: &[Case<'_>] = &[
            (
                "uncovered: unknown",
                &[("s", "c1", "b1", g(&[user("alice")], Role::Admin))],
                none,
                "alice",
                "c1",
                none,
                None,
            ),
            (
                "covered member",
                &[("s", "c1", "b1", g(&[user("alice")], Role::Member))],
                &["c1"],
                "alice",
                "c1",
                none,
                Some(Some(Role::Member)),
            ),
            (
                "covered stranger",
                &[("s", "c1", "b1", g(&[user("alice")], Role::Member))],
                &["c1"],
                "bob",
                "c1",
                none,
                Some(None),
            ),
            (
                "admin wins",
                &[
                    ("s", "c1", "b1", g(&[user("alice")], Role::Member)),
                    ("s", "c1", "b2", g(&[group("ops")], Role::Admin)),
                ],
                &["c1"],
                "alice",
                "c1",
                &["ops"],
                Some(Some(Role::Admin)),
            ),
            (
                "removed",
                &[
                    ("s", "c1", "b1", g(&[user("alice")], Role::Member)),
                    ("s", "c1", "b1", None),
                ],
                &["c1"],
                "alice",
                "c1",
                none,
                Some(None),
            ),
            (
                "replaced role",
                &[
                    ("s", "c1", "b1", g(&[user("alice")], Role::Admin)),
                    ("s", "c1", "b1", g(&[user("alice")], Role::Member)),
                ],
                &["c1"],
                "alice",
                "c1",
                none,
                Some(Some(Role::Member)),
            ),
            (
                "other cluster",
                &[("s", "c2", "b1", g(&[user("alice")], Role::Admin))],
                &["c1", "c2"],
                "alice",
                "c1",
                none,
                Some(None),
            ),
            (
                "two shards report one binding, one forgets",
                &[
                    ("s1", "c1", "b1", g(&[user("alice")], Role::Admin)),
                    ("s2", "c1", "b1", g(&[user("alice")], Role::Admin)),
                    ("s1", "c1", "b1", None),
                ],
                &["c1"],
                "alice",
                "c1",
                none,
                Some(Some(Role::Admin)),
            ),
            (
                "a ServiceAccount caller is never decided",
                &[],
                &["c1"],
                "system:serviceaccount:default:x",
                "c1",
                none,
                None,
            ),
        ];
        for (name, steps, covered, who, cluster, groups, want) in cases {
            let mut m = Memberships::default();
            for (source, c, b, grant) in *steps {
                m.set_grant(source, c, b, grant.clone());
            }
            for c in *covered {
                m.set_covered("s", c, true);
            }
            let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
            assert_eq!(m.role(who, &groups, cluster), *want, "{name}");
            // Many clusters at once answer as one at a time.
            let clusters = [*cluster, "c1", "c2", "c3"];
            let one_by_one: Vec<_> = clusters.iter().map(|c| m.role(who, &groups, c)).collect();
            assert_eq!(m.roles_in(who, &groups, clusters), one_by_one, "{name}: roles_in");
        }
    }

    #[test]
    fn roles_lists_covered_memberships_and_relists_replace() {
        let mut m = Memberships::default();
        m.set_grant("s", "c1", "b1", g(&[user("alice")], Role::Member));
        m.set_grant("s", "c2", "b1", g(&[group("ops")], Role::Admin));
        m.set_grant("s", "c3", "b1", g(&[user("alice")], Role::Admin));
        assert_eq!(
            m.replace_covered("s", vec!["c1".into(), "c2".into()]),
            Vec::<String>::new()
        );
        let roles = m.roles("alice", &["ops".into()]).unwrap();
        assert_eq!(
            roles,
            BTreeMap::from([("c1".into(), Role::Member), ("c2".into(), Role::Admin)]),
            "c3 is not covered"
        );
        // A relist without b1 of c1 drops alice from c1.
        m.replace_grants(
            "s",
            vec![("c2".into(), "b1".into(), g(&[group("ops")], Role::Admin).unwrap())],
        );
        assert_eq!(m.roles("alice", &[]).unwrap(), BTreeMap::new());
        assert_eq!(m.len(), 1);
        // The hub's own write lands where the cluster is covered, and nowhere else.
        m.set_where_covered("c1", "b9", g(&[user("bob")], Role::Member));
        m.set_where_covered("c3", "b9", g(&[user("bob")], Role::Member));
        assert_eq!(
            m.roles("bob", &[]).unwrap(),
            BTreeMap::from([("c1".into(), Role::Member)])
        );
        m.set_where_covered("c1", "b9", None);
        assert_eq!(m.role("bob", &[], "c1"), Some(None));
        // A relist reports a binding deleted while the watch was away only by its absence.
        assert_eq!(
            m.replace_covered("s", vec!["c2".into(), "c4".into()]),
            ["c1"],
            "c1 was covered and is not listed again"
        );
        assert!(!m.is_covered("c1") && m.is_covered("c4"));
        // One workspace's bindings listed again replace its own and nobody else's.
        m.set_grant("s", "c4", "b1", g(&[user("carol")], Role::Member));
        m.set_grant("s", "c4", "b2", g(&[user("dave")], Role::Member));
        m.replace_cluster_grants("s", "c4", vec![("b3".into(), g(&[user("dave")], Role::Admin).unwrap())]);
        assert_eq!(m.role("carol", &[], "c4"), Some(None));
        assert_eq!(m.role("dave", &[], "c4"), Some(Some(Role::Admin)));
        assert_eq!(m.role("x", &["ops".into()], "c2"), Some(Some(Role::Admin)));
        m.replace_cluster_grants("s", "c4", Vec::new());
        assert_eq!(m.role("dave", &[], "c4"), Some(None));
        assert!(m.source_covers("s", "c2") && !m.source_covers("s", "c1") && !m.source_covers("t", "c2"));
        m.retire("s");
        assert!(m.is_empty());
        assert!(!m.is_covered("c2"));
        assert!(m.roles("system:serviceaccount:a:b", &[]).is_none());
    }
}
