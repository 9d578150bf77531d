//! The organizations (Workspaces of `root:faros:tenants`), kept by one watch: `/api/me` and
//! `/api/orgs` read them from memory instead of listing ten thousand workspaces per request.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::{Arc, RwLock};

use faros_core::client::ClientFactory;
use faros_core::kcp::Workspace;
use faros_core::names;
use faros_runtime::reflect::{self, Update};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use tokio_util::sync::CancellationToken;

use super::MembershipIndex;

/// Organizations by name and by logical cluster; `None` until the first listing completed.
#[derive(Debug, Default)]
pub struct OrgCache {
    orgs: RwLock<Option<Orgs>>,
}

#[derive(Debug, Default)]
struct Orgs {
    by_name: HashMap<String, Arc<Workspace>>,
    /// Logical cluster → organization name, for the organizations that have one.
    by_cluster: HashMap<String, String>,
    /// Counts changes, so what is derived from the organizations is recomputed only after one.
    generation: u64,
}

impl Orgs {
    fn insert(&mut self, ws: Arc<Workspace>) {
        let name = ws.name_any();
        let cluster = ws.spec.cluster.clone();
        if let Some(old) = self.by_name.insert(name.clone(), ws)
            && let Some(old_cluster) = old.spec.cluster.as_ref()
            && cluster.as_ref() != Some(old_cluster)
        {
            self.by_cluster.remove(old_cluster);
        }
        if let Some(cluster) = cluster {
            self.by_cluster.insert(cluster, name);
        }
        self.generation += 1;
    }

    fn remove(&mut self, name: &str) {
        if let Some(old) = self.by_name.remove(name)
            && let Some(cluster) = &old.spec.cluster
        {
            self.by_cluster.remove(cluster);
        }
        self.generation += 1;
    }
}

impl OrgCache {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Option<Orgs>> {
        self.orgs.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Option<Orgs>> {
        self.orgs.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Every organization, once listed.
    pub fn list(&self) -> Option<Vec<Arc<Workspace>>> {
        self.snapshot().map(|(_, orgs)| orgs)
    }

    /// Every organization with the generation it was read at, once listed.
    pub(crate) fn snapshot(&self) -> Option<(u64, Vec<Arc<Workspace>>)> {
        let orgs = self.read();
        orgs.as_ref()
            .map(|o| (o.generation, o.by_name.values().cloned().collect()))
    }

    /// The generation (changes counted since start), once listed.
    pub(crate) fn generation(&self) -> Option<u64> {
        self.read().as_ref().map(|o| o.generation)
    }

    /// Organization `name`, once listed (`Some(None)`: there is none).
    pub fn get(&self, name: &str) -> Option<Option<Arc<Workspace>>> {
        self.read().as_ref().map(|o| o.by_name.get(name).cloned())
    }

    /// The organization whose logical cluster is `cluster`, once listed (`Some(None)`: none is).
    pub fn by_cluster(&self, cluster: &str) -> Option<Option<Arc<Workspace>>> {
        self.read()
            .as_ref()
            .map(|o| o.by_cluster.get(cluster).and_then(|name| o.by_name.get(name)).cloned())
    }

    fn replace(&self, listed: Vec<Workspace>) {
        let mut orgs = self.write();
        let generation = orgs.as_ref().map_or(0, |o| o.generation) + 1;
        let mut fresh = Orgs::default();
        for ws in listed {
            fresh.insert(Arc::new(ws));
        }
        fresh.generation = generation;
        *orgs = Some(fresh);
    }

    fn apply(&self, ws: Workspace) {
        if let Some(o) = self.write().as_mut() {
            o.insert(Arc::new(ws));
        }
    }

    fn delete(&self, name: &str) {
        if let Some(o) = self.write().as_mut() {
            o.remove(name);
        }
    }
}

/// The Ready organizations whose logical cluster `is_covered` does not cover (or that have none):
/// the ones the index cannot answer for, which the routes ask kcp about. Empty in steady state.
pub fn ready_uncovered(
    orgs: impl IntoIterator<Item = Arc<Workspace>>,
    is_covered: impl Fn(&str) -> bool,
) -> Vec<Arc<Workspace>> {
    orgs.into_iter()
        .filter(|ws| ws.is_ready() && !ws.spec.cluster.as_deref().is_some_and(&is_covered))
        .collect()
}

/// [`ready_uncovered`] as of a generation of the organizations and of the coverage.
#[derive(Debug)]
pub(crate) struct Uncovered {
    pub orgs_generation: u64,
    pub coverage_generation: u64,
    pub orgs: Arc<[Arc<Workspace>]>,
}

/// Watches `root:faros:tenants` into the index's organizations until `cancel`.
pub async fn watch(factory: ClientFactory, index: &MembershipIndex, cancel: CancellationToken) {
    let cache = &index.orgs;
    let client = match factory.cluster(names::TENANTS_PATH) {
        Ok(c) => c,
        Err(error) => {
            tracing::error!(%error, "cannot build the organization watch client");
            return;
        }
    };
    let api: Api<Workspace> = Api::all(client);
    let stream = faros_core::wait::permitted_watcher(api, watcher::Config::default()).default_backoff();
    reflect::drive(
        stream,
        cancel.cancelled(),
        |update| match update {
            Update::Relisted(listed) => {
                tracing::info!(organizations = listed.len(), "organizations listed");
                cache.replace(listed);
                // The backfill waits for the organizations too.
                index.poke();
            }
            Update::Applied(ws) => cache.apply(ws),
            Update::Deleted(ws) => cache.delete(&ws.name_any()),
        },
        |error| {
            // Until the tree exists (or the hub's roles in it), the watch fails and is retried.
            tracing::debug!(%error, "organization watch failed; retrying");
            ControlFlow::Continue(())
        },
    )
    .await;
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;

    /// Organization `name` in `phase`, with logical cluster `cluster` if any.
    pub(crate) fn org(name: &str, cluster: Option<&str>, phase: &str) -> Workspace {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "tenancy.kcp.io/v1alpha1",
            "kind": "Workspace",
            "metadata": {"name": name},
            "spec": {"cluster": cluster},
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    pub(crate) fn listed(cache: &OrgCache, orgs: Vec<Workspace>) {
        cache.replace(orgs);
    }

    pub(crate) fn applied(cache: &OrgCache, ws: Workspace) {
        cache.apply(ws);
    }

    fn names(orgs: &[Arc<Workspace>]) -> Vec<String> {
        let mut names: Vec<String> = orgs.iter().map(|o| o.name_any()).collect();
        names.sort();
        names
    }

    #[test]
    fn ready_and_not_covered() {
        let covered = |c: &str| c == "c-covered";
        for (org, uncovered) in [
            (org("covered", Some("c-covered"), "Ready"), false),
            (org("uncovered", Some("c-other"), "Ready"), true),
            // Ready without a cluster: nothing the index could answer for.
            (org("clusterless", None, "Ready"), true),
            // Not Ready: not listed at all, covered or not.
            (org("initializing", Some("c-other"), "Initializing"), false),
            (org("initializing-covered", Some("c-covered"), "Initializing"), false),
        ] {
            let name = org.name_any();
            let got = ready_uncovered([Arc::new(org)], covered);
            assert_eq!(!got.is_empty(), uncovered, "{name}");
        }
    }

    #[test]
    fn organizations_by_name_and_cluster() {
        let cache = OrgCache::default();
        assert_eq!(cache.generation(), None);
        assert!(cache.by_cluster("c-a").is_none(), "not listed yet");
        cache.apply(org("ignored", Some("c-x"), "Ready"));
        assert!(cache.get("ignored").is_none(), "events before the listing are not kept");

        listed(
            &cache,
            vec![org("a", Some("c-a"), "Ready"), org("b", None, "Initializing")],
        );
        let first = cache.generation().unwrap();
        assert_eq!(cache.by_cluster("c-a").flatten().unwrap().name_any(), "a");
        assert!(cache.by_cluster("c-b").flatten().is_none());

        // b gets its cluster, a moves to another (never in kcp, but the map must follow).
        cache.apply(org("b", Some("c-b"), "Ready"));
        cache.apply(org("a", Some("c-a2"), "Ready"));
        assert_eq!(cache.by_cluster("c-b").flatten().unwrap().name_any(), "b");
        assert_eq!(cache.by_cluster("c-a2").flatten().unwrap().name_any(), "a");
        assert!(cache.by_cluster("c-a").flatten().is_none());
        assert!(cache.generation().unwrap() > first);

        cache.delete("a");
        assert!(cache.by_cluster("c-a2").flatten().is_none());
        assert_eq!(cache.get("a"), Some(None));
        assert_eq!(names(&cache.list().unwrap()), ["b"]);

        // A fresh listing replaces everything and still counts as a change.
        let before = cache.generation().unwrap();
        listed(&cache, vec![org("c", Some("c-c"), "Ready")]);
        assert!(cache.generation().unwrap() > before);
        assert!(cache.by_cluster("c-b").flatten().is_none());
        assert_eq!(names(&cache.list().unwrap()), ["c"]);
    }
}
