//! The membership index: who belongs to which tenant workspace, kept up to date by watches, so
//! `/api/me`, the organization and workspace lists and each route's membership check answer from
//! memory instead of asking kcp two SubjectAccessReviews per workspace per request.
//!
//! How it sees every tenant workspace with one watch: organizations and team workspaces bind the
//! `tenancy.faros.sh` APIExport by default (their WorkspaceTypes say so; the reconciler's
//! bootstrap), and that export claims read access to ClusterRoleBindings labelled
//! `app.kubernetes.io/managed-by=faros`. The hub watches them across all workspaces through the
//! export's virtual workspace ([`watch`]), with the export's bindings telling which workspaces are
//! covered. Workspaces made before the export existed get the binding from the hub ([`backfill`]);
//! the organizations themselves come from one watch of `root:faros:tenants` ([`orgs`]).
//!
//! What the index answers ([`model`]): the role a user or group holds through faros' membership
//! bindings — exactly the definition of membership ([`super::rbac`]). It never answers where it
//! cannot be sure, and [`super::access::Access`] then asks kcp as before: a workspace not covered
//! (yet), a ServiceAccount caller (kcp tells same-named ServiceAccounts apart by the cluster their
//! token came from), an index not listed yet. Writes the hub makes itself are applied at once
//! ([`MembershipIndex::wrote`]), so a replica reads its own writes; another replica sees them when
//! its watch delivers them (milliseconds). A refusal on a single workspace's route is still asked of
//! kcp ([`super::access::Access::require`]), so access granted by hand-written RBAC or a moment ago
//! through another replica is never refused there; the lists show faros memberships only.
//!
//! This module must not write anything but the `tenancy.faros.sh` bindings.

pub mod backfill;
pub mod model;
pub mod orgs;
pub mod watch;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use faros_core::kcp::Workspace;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;

use super::role::Role;
use crate::auth::Caller;
use model::{Memberships, grant_of};

/// The index shared by the routes and fed by [`watch`] (see the module docs).
#[derive(Debug, Default)]
pub struct MembershipIndex {
    memberships: RwLock<Memberships>,
    /// Organizations of `root:faros:tenants`, once listed.
    pub orgs: orgs::OrgCache,
    /// The last [`Self::uncovered_orgs`], kept until the organizations or the coverage change.
    uncovered: Mutex<Option<orgs::Uncovered>>,
    /// URLs of the endpoint slice as first read, not listed yet.
    initial: Mutex<Option<BTreeSet<String>>>,
    /// Every URL the slice published at start has been listed once.
    settled: AtomicBool,
    /// Workspaces whose tenancy binding went away ([`backfill`] binds them again).
    restores: Mutex<BTreeSet<String>>,
    /// Wakes [`backfill`]: settled, organizations listed, or a restore requested.
    changed: tokio::sync::Notify,
    pub metrics: crate::metrics::MembershipMetrics,
}

impl MembershipIndex {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Memberships> {
        self.memberships.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn write(&self) -> std::sync::RwLockWriteGuard<'_, Memberships> {
        self.memberships.write().unwrap_or_else(|p| p.into_inner())
    }

    /// An index counting its decisions in `metrics`.
    pub fn new(metrics: crate::metrics::MembershipMetrics) -> Self {
        Self {
            metrics,
            ..Self::default()
        }
    }

    /// The caller's role in `cluster`: `None` when the index cannot tell (then kcp is asked).
    pub fn role(&self, caller: &Caller, cluster: &str) -> Option<Option<Role>> {
        let answer = self.read().role(&caller.user, &caller.groups, cluster);
        if answer.is_some() {
            self.metrics.decided("index");
        }
        answer
    }

    /// Every covered workspace (logical cluster) where the caller holds a role; `None` for a
    /// caller the index does not decide for.
    pub fn roles(&self, caller: &Caller) -> Option<BTreeMap<String, Role>> {
        self.read().roles(&caller.user, &caller.groups)
    }

    /// [`Self::role`] for each of `clusters`, decided from one view of the index.
    pub fn roles_in<'c>(
        &self,
        caller: &Caller,
        clusters: impl IntoIterator<Item = &'c str>,
    ) -> Vec<Option<Option<Role>>> {
        let answers = self.read().roles_in(&caller.user, &caller.groups, clusters);
        let decided = answers.iter().filter(|a| a.is_some()).count();
        if decided > 0 {
            self.metrics.decided_n("index", decided as u64);
        }
        answers
    }

    pub fn is_covered(&self, cluster: &str) -> bool {
        self.read().is_covered(cluster)
    }

    /// [`Self::is_covered`] for each of `clusters`, from one view of the index.
    pub fn covers_each<'c>(&self, clusters: impl IntoIterator<Item = &'c str>) -> Vec<bool> {
        let memberships = self.read();
        clusters.into_iter().map(|c| memberships.is_covered(c)).collect()
    }

    /// The Ready organizations the index does not cover (or `None` before the organizations are
    /// listed): the only ones a list of organizations must ask kcp about. Walking ten thousand
    /// organizations costs milliseconds (a few cache misses each), so the answer is kept and
    /// recomputed only when an organization or the coverage changed; in steady state it is empty.
    pub fn uncovered_orgs(&self) -> Option<Arc<[Arc<Workspace>]>> {
        let orgs_generation = self.orgs.generation()?;
        let coverage_generation = self.read().coverage_generation();
        if let Some(kept) = self.uncovered.lock().unwrap_or_else(|p| p.into_inner()).as_ref()
            && kept.orgs_generation == orgs_generation
            && kept.coverage_generation == coverage_generation
        {
            return Some(kept.orgs.clone());
        }
        // Each generation is read under the same lock as what it describes, so what is kept is
        // never newer than its generations say: a change while computing only means one more
        // recomputation.
        let (orgs_generation, listed) = self.orgs.snapshot()?;
        let (coverage_generation, uncovered) = {
            let memberships = self.read();
            (
                memberships.coverage_generation(),
                orgs::ready_uncovered(listed, |c| memberships.is_covered(c)),
            )
        };
        let uncovered: Arc<[Arc<Workspace>]> = uncovered.into();
        *self.uncovered.lock().unwrap_or_else(|p| p.into_inner()) = Some(orgs::Uncovered {
            orgs_generation,
            coverage_generation,
            orgs: uncovered.clone(),
        });
        Some(uncovered)
    }

    /// Membership bindings held (for metrics and logs).
    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The URLs published when the index started; it is settled when each has been listed once.
    pub(crate) fn expect_initial(&self, urls: &[String]) {
        let pending: BTreeSet<String> = urls.iter().cloned().collect();
        let done = pending.is_empty();
        *self.initial.lock().unwrap_or_else(|p| p.into_inner()) = Some(pending);
        if done {
            self.settle();
        }
    }

    /// Source `url` listed its bindings.
    pub(crate) fn source_synced(&self, url: &str) {
        let mut initial = self.initial.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(pending) = initial.as_mut()
            && pending.remove(url)
            && pending.is_empty()
        {
            drop(initial);
            self.settle();
        }
    }

    fn settle(&self) {
        self.settled.store(true, Ordering::Release);
        self.poke();
    }

    /// Wakes [`backfill`] (something it waits for changed).
    pub(crate) fn poke(&self) {
        self.changed.notify_one();
    }

    /// Whether every source known at start has been listed: before, an uncovered workspace may only
    /// be not listed yet.
    pub fn is_settled(&self) -> bool {
        self.settled.load(Ordering::Acquire)
    }

    pub(crate) fn request_restore(&self, cluster: &str) {
        self.restores
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(cluster.to_string());
        self.changed.notify_one();
    }

    /// Keeps `cluster` for the next pass without waking it (it failed in this one; the pass's
    /// retry delay decides when).
    pub(crate) fn keep_restore(&self, cluster: &str) {
        self.restores
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(cluster.to_string());
    }

    pub(crate) fn take_restores(&self) -> BTreeSet<String> {
        std::mem::take(&mut *self.restores.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Resolves when something for [`backfill`] changed (or at once, if it did since the last call).
    pub(crate) async fn changed(&self) {
        self.changed.notified().await;
    }

    /// The hub wrote `binding` in `cluster`: applied now wherever that cluster is covered, ahead of
    /// the watch (which later delivers the same object).
    pub fn wrote(&self, cluster: &str, binding: &ClusterRoleBinding) {
        let name = binding.metadata.name.clone().unwrap_or_default();
        self.write().set_where_covered(cluster, &name, grant_of(binding));
    }

    /// The hub deleted binding `name` in `cluster`.
    pub fn removed(&self, cluster: &str, name: &str) {
        self.write().set_where_covered(cluster, name, None);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::orgs::tests::{applied, listed, org};
    use super::*;

    fn names(orgs: &[Arc<Workspace>]) -> Vec<String> {
        let mut names: Vec<String> = orgs.iter().filter_map(|o| o.metadata.name.clone()).collect();
        names.sort();
        names
    }

    /// The kept answer is the one a fresh walk gives, after every kind of change, and is reused
    /// (the same allocation) while nothing changed.
    #[test]
    fn uncovered_organizations_follow_changes() {
        let index = MembershipIndex::default();
        assert!(index.uncovered_orgs().is_none(), "not listed yet");
        listed(
            &index.orgs,
            vec![org("a", Some("c-a"), "Ready"), org("b", Some("c-b"), "Ready")],
        );
        assert_eq!(names(&index.uncovered_orgs().unwrap()), ["a", "b"]);

        index.write().set_covered("s", "c-a", true);
        let kept = index.uncovered_orgs().unwrap();
        assert_eq!(names(&kept), ["b"]);
        assert!(
            Arc::ptr_eq(&kept, &index.uncovered_orgs().unwrap()),
            "recomputed without a change"
        );

        // A second source covering the same cluster changes nothing; a grant changes nothing.
        index.write().set_covered("t", "c-a", true);
        index.wrote("c-a", &super::super::rbac::member_binding("alice", Role::Member));
        assert!(Arc::ptr_eq(&kept, &index.uncovered_orgs().unwrap()));

        applied(&index.orgs, org("c", Some("c-c"), "Initializing"));
        assert_eq!(names(&index.uncovered_orgs().unwrap()), ["b"]);
        applied(&index.orgs, org("c", Some("c-c"), "Ready"));
        assert_eq!(names(&index.uncovered_orgs().unwrap()), ["b", "c"]);

        index.write().set_covered("s", "c-b", true);
        index.write().set_covered("s", "c-c", true);
        assert!(index.uncovered_orgs().unwrap().is_empty(), "steady state");

        // Coverage lost by one of two sources keeps a cluster covered; by the last, not.
        index.write().set_covered("s", "c-a", false);
        assert!(index.uncovered_orgs().unwrap().is_empty());
        index.write().set_covered("t", "c-a", false);
        assert_eq!(names(&index.uncovered_orgs().unwrap()), ["a"]);
    }
}
