//! Controllers over an APIExport's virtual workspace: one watch across every tenant that bound the
//! export, one reconcile per object, with a client for that object's tenant.
//!
//! kube-runtime's `Controller` keys objects by (namespace, name), so over a wildcard
//! `/clusters/*` watch two tenants' `default/hello` would be merged into one. This module keeps its
//! own store and queue keyed by [`TenantKey`] (`kcp.io/cluster`, namespace, name), which is the
//! kcp-aware equivalent:
//!
//! - events are deduplicated per key (a burst of updates is one reconcile of the newest object);
//! - a key is never reconciled twice at the same time;
//! - a failed reconcile is retried with per-key exponential backoff ([`RETRY_MIN`] doubling to
//!   [`RETRY_MAX`]); a successful one may ask to be requeued after a delay;
//! - a deleted object (including every object of a tenant that unbinds the export, which kcp
//!   deletes) is dropped from the queue, so nothing keeps retrying against a tenant that left.
//!
//! [`endpoint_url`] finds the virtual workspace URL first: kcp publishes it in the export's
//! APIExportEndpointSlice only once some workspace has bound the export, so it waits for it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Display;
use std::sync::Arc;
use std::time::Duration;

use faros_core::client::{ClientError, ClientFactory};
use faros_core::kcp::ANNOTATION_CLUSTER;
use faros_core::kcp::apis::v1alpha1::APIExportEndpointSlice;
use faros_core::wait::{WaitError, wait_for};
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Client, ResourceExt};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// First retry delay after a failed reconcile.
pub const RETRY_MIN: Duration = Duration::from_millis(500);
/// Longest retry delay.
pub const RETRY_MAX: Duration = Duration::from_secs(60);

/// Errors running a controller.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error("waiting for APIExportEndpointSlice {slice:?} to publish a URL: {source}")]
    Endpoint {
        slice: String,
        #[source]
        source: WaitError,
    },
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// Waits until the endpoint slice `slice` (in the workspace `client` targets) lists a virtual
/// workspace URL, and returns the first one.
pub async fn endpoint_url(client: Client, slice: &str, timeout: Duration) -> Result<String, ControllerError> {
    let api: Api<APIExportEndpointSlice> = Api::all(client);
    let found = wait_for(api, slice, |s| s.is_some_and(|s| !s.urls().is_empty()), timeout)
        .await
        .map_err(|source| ControllerError::Endpoint {
            slice: slice.into(),
            source,
        })?;
    Ok(found
        .and_then(|s| s.urls().first().map(|u| u.to_string()))
        .unwrap_or_default())
}

/// An object's identity across tenants.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TenantKey {
    /// Logical cluster name (`kcp.io/cluster`).
    pub cluster: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl TenantKey {
    /// The key of `obj`, `None` when kcp did not say which cluster it is in.
    pub fn of(obj: &DynamicObject) -> Option<Self> {
        let cluster = obj.annotations().get(ANNOTATION_CLUSTER)?.clone();
        Some(Self {
            cluster,
            namespace: obj.namespace(),
            name: obj.name_any(),
        })
    }
}

impl Display for TenantKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}|{ns}/{}", self.cluster, self.name),
            None => write!(f, "{}|{}", self.cluster, self.name),
        }
    }
}

/// What a reconcile gets besides the object: its tenant, and a client scoped to that tenant
/// through the virtual workspace (`<vw>/clusters/<cluster>`).
#[derive(Clone)]
pub struct Tenant {
    pub key: TenantKey,
    pub client: Client,
}

/// What to do after a successful reconcile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing until the object changes.
    AwaitChange,
    /// Reconcile again after the delay (e.g. to poll something external).
    RequeueAfter(Duration),
}

/// The per-key queue, without IO: which keys are due, which are running, and retry backoff.
#[derive(Debug, Default)]
pub struct WorkQueue {
    due: BTreeMap<TenantKey, Instant>,
    running: BTreeSet<TenantKey>,
    /// Keys that changed while running: reconcile again once they finish.
    dirty: BTreeSet<TenantKey>,
    failures: BTreeMap<TenantKey, u32>,
}

impl WorkQueue {
    /// Schedules `key` at `at` (or earlier, if it is already due sooner).
    pub fn enqueue(&mut self, key: TenantKey, at: Instant) {
        if self.running.contains(&key) {
            self.dirty.insert(key);
            return;
        }
        let slot = self.due.entry(key).or_insert(at);
        if at < *slot {
            *slot = at;
        }
    }

    /// Forgets everything about `key` (the object is gone).
    pub fn forget(&mut self, key: &TenantKey) {
        self.due.remove(key);
        self.dirty.remove(key);
        self.failures.remove(key);
    }

    /// Takes the earliest key due at `now` and marks it running.
    pub fn pop_due(&mut self, now: Instant) -> Option<TenantKey> {
        let key = self
            .due
            .iter()
            .filter(|(_, at)| **at <= now)
            .min_by_key(|(_, at)| **at)
            .map(|(k, _)| k.clone())?;
        self.due.remove(&key);
        self.running.insert(key.clone());
        Some(key)
    }

    /// When the next key becomes due.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.due.values().min().copied()
    }

    /// Records the end of a reconcile of `key`; `result` is `Ok(action)` or `Err(())`.
    /// `alive` says whether the object still exists.
    pub fn finish(&mut self, key: &TenantKey, result: Result<Action, ()>, alive: bool, now: Instant) {
        self.running.remove(key);
        let dirty = self.dirty.remove(key);
        if !alive {
            self.forget(key);
            return;
        }
        match result {
            Ok(action) => {
                self.failures.remove(key);
                if let Action::RequeueAfter(d) = action {
                    self.enqueue(key.clone(), now + d);
                }
            }
            Err(()) => {
                let n = self.failures.entry(key.clone()).or_insert(0);
                *n = n.saturating_add(1);
                let delay = RETRY_MIN.saturating_mul(1u32 << (*n - 1).min(16)).min(RETRY_MAX);
                self.enqueue(key.clone(), now + delay);
            }
        }
        if dirty {
            self.enqueue(key.clone(), now);
        }
    }

    /// Consecutive failures of `key`.
    pub fn failures(&self, key: &TenantKey) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
    }

    pub fn is_idle(&self) -> bool {
        self.due.is_empty() && self.running.is_empty()
    }
}

/// Counters of a running controller, shared with whoever wants to observe it (metrics, tests).
#[derive(Debug, Default)]
pub struct ControllerStats {
    pub reconciles: std::sync::atomic::AtomicU64,
    pub failures: std::sync::atomic::AtomicU64,
}

impl ControllerStats {
    pub fn reconciles(&self) -> u64 {
        self.reconciles.load(std::sync::atomic::Ordering::Relaxed)
    }
    pub fn failures(&self) -> u64 {
        self.failures.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A controller for one exported (or claimed) resource across all tenants.
pub struct Controller {
    factory: ClientFactory,
    vw_url: String,
    resource: ApiResource,
    concurrency: usize,
    stats: Arc<ControllerStats>,
}

impl Controller {
    /// Watches `resource` through the virtual workspace at `vw_url` (from [`endpoint_url`]).
    pub fn new(factory: ClientFactory, vw_url: &str, resource: ApiResource) -> Self {
        Self {
            factory,
            vw_url: vw_url.trim_end_matches('/').to_string(),
            resource,
            concurrency: 8,
            stats: Arc::default(),
        }
    }

    /// Counts into `stats` instead of a private counter.
    pub fn stats(mut self, stats: Arc<ControllerStats>) -> Self {
        self.stats = stats;
        self
    }

    /// How many reconciles may run at once (default 8).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// Runs until `shutdown` completes. `reconcile` errors are logged and retried with backoff.
    pub async fn run<R, Fut, E>(self, reconcile: R, shutdown: impl Future<Output = ()>) -> Result<(), ControllerError>
    where
        R: Fn(Arc<DynamicObject>, Tenant) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: Display + Send + 'static,
    {
        let all = self.factory.virtual_workspace(&self.vw_url, "*")?;
        let api: Api<DynamicObject> = Api::all_with(all, &self.resource);
        let mut events = std::pin::pin!(watcher::watcher(api, watcher::Config::default()).default_backoff());
        let mut shutdown = std::pin::pin!(shutdown);
        let reconcile = Arc::new(reconcile);
        let mut store: BTreeMap<TenantKey, Arc<DynamicObject>> = BTreeMap::new();
        let mut relist: Option<BTreeSet<TenantKey>> = None;
        let mut queue = WorkQueue::default();
        let mut tasks: JoinSet<(TenantKey, Result<Action, ()>)> = JoinSet::new();
        let kind = self.resource.kind.clone();

        loop {
            // Start whatever is due, up to the concurrency limit.
            while tasks.len() < self.concurrency {
                let Some(key) = queue.pop_due(Instant::now()) else {
                    break;
                };
                let Some(obj) = store.get(&key).cloned() else {
                    queue.finish(&key, Ok(Action::AwaitChange), false, Instant::now());
                    continue;
                };
                let client = self.factory.virtual_workspace(&self.vw_url, &key.cluster)?;
                let tenant = Tenant {
                    key: key.clone(),
                    client,
                };
                let reconcile = reconcile.clone();
                let kind = kind.clone();
                let stats = self.stats.clone();
                tasks.spawn(async move {
                    stats.reconciles.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let result = reconcile(obj, tenant).await.map_err(|e| {
                        stats.failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        tracing::warn!(%kind, object = %key, error = %e, "reconcile failed; retrying with backoff");
                    });
                    (key, result)
                });
            }
            let deadline = queue.next_deadline();
            tokio::select! {
                _ = &mut shutdown => {
                    tasks.abort_all();
                    return Ok(());
                }
                Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                    if let Ok((key, result)) = done {
                        let alive = store.contains_key(&key);
                        queue.finish(&key, result, alive, Instant::now());
                    }
                }
                _ = sleep_until(deadline), if deadline.is_some() => {}
                event = events.next() => {
                    match event {
                        Some(Ok(event)) => apply_event(event, &mut store, &mut relist, &mut queue),
                        Some(Err(e)) => tracing::warn!(%kind, error = %e, "watch failed; retrying"),
                        None => return Ok(()),
                    }
                }
            }
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Folds one watch event into the store and queue.
fn apply_event(
    event: Event<DynamicObject>,
    store: &mut BTreeMap<TenantKey, Arc<DynamicObject>>,
    relist: &mut Option<BTreeSet<TenantKey>>,
    queue: &mut WorkQueue,
) {
    let now = Instant::now();
    match event {
        Event::Init => *relist = Some(BTreeSet::new()),
        Event::InitApply(obj) | Event::Apply(obj) => {
            let Some(key) = TenantKey::of(&obj) else {
                tracing::warn!(name = %obj.name_any(), "object without {ANNOTATION_CLUSTER}; ignored");
                return;
            };
            if let Some(seen) = relist.as_mut() {
                seen.insert(key.clone());
            }
            store.insert(key.clone(), Arc::new(obj));
            queue.enqueue(key, now);
        }
        Event::Delete(obj) => {
            if let Some(key) = TenantKey::of(&obj) {
                store.remove(&key);
                queue.forget(&key);
            }
        }
        Event::InitDone => {
            // Objects deleted while the watch was down are absent from the relist.
            if let Some(seen) = relist.take() {
                let gone: Vec<TenantKey> = store.keys().filter(|k| !seen.contains(*k)).cloned().collect();
                for key in gone {
                    store.remove(&key);
                    queue.forget(&key);
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn key(cluster: &str, name: &str) -> TenantKey {
        TenantKey {
            cluster: cluster.into(),
            namespace: Some("default".into()),
            name: name.into(),
        }
    }

    fn obj(cluster: &str, name: &str) -> DynamicObject {
        let ar = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let mut o = DynamicObject::new(name, &ar).within("default");
        o.metadata.annotations = Some([(ANNOTATION_CLUSTER.to_string(), cluster.to_string())].into());
        o
    }

    #[test]
    fn same_name_in_two_tenants_are_two_keys() {
        let a = TenantKey::of(&obj("c1", "hello")).unwrap();
        let b = TenantKey::of(&obj("c2", "hello")).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.to_string(), "c1|default/hello");
        let mut no_cluster = obj("c1", "x");
        no_cluster.metadata.annotations = None;
        assert_eq!(TenantKey::of(&no_cluster), None);
    }

    #[test]
    fn queue_dedupes_serializes_and_backs_off() {
        let t0 = Instant::now();
        let mut q = WorkQueue::default();
        let k = key("c1", "a");
        q.enqueue(k.clone(), t0);
        q.enqueue(k.clone(), t0);
        assert_eq!(q.pop_due(t0), Some(k.clone()));
        assert_eq!(q.pop_due(t0), None, "deduplicated");
        // An update while running is remembered, not run concurrently.
        q.enqueue(k.clone(), t0);
        assert_eq!(q.pop_due(t0), None);
        q.finish(&k, Ok(Action::AwaitChange), true, t0);
        assert_eq!(q.pop_due(t0), Some(k.clone()), "dirty key runs again");
        // Failures back off 0.5 s, 1 s, 2 s …, success resets.
        let mut now = t0;
        for want in [500u64, 1000, 2000, 4000] {
            q.finish(&k, Err(()), true, now);
            let at = q.next_deadline().unwrap();
            assert_eq!((at - now).as_millis() as u64, want);
            assert_eq!(q.pop_due(now), None);
            now = at;
            assert_eq!(q.pop_due(now), Some(k.clone()));
        }
        assert_eq!(q.failures(&k), 4);
        q.finish(&k, Ok(Action::RequeueAfter(Duration::from_secs(10))), true, now);
        assert_eq!(q.failures(&k), 0);
        assert_eq!(q.next_deadline(), Some(now + Duration::from_secs(10)));
    }

    #[test]
    fn deleted_objects_leave_the_queue() {
        let t0 = Instant::now();
        let mut q = WorkQueue::default();
        let k = key("c1", "a");
        q.enqueue(k.clone(), t0);
        let k = q.pop_due(t0).unwrap();
        q.finish(&k, Err(()), false, t0);
        assert!(q.is_idle(), "a failing object that is gone is not retried");
        assert_eq!(q.failures(&k), 0);
    }

    #[test]
    fn events_fold_into_store_and_relist_prunes() {
        let mut store = BTreeMap::new();
        let mut relist = None;
        let mut q = WorkQueue::default();
        for e in [
            Event::Init,
            Event::InitApply(obj("c1", "a")),
            Event::InitApply(obj("c2", "a")),
            Event::InitDone,
        ] {
            apply_event(e, &mut store, &mut relist, &mut q);
        }
        assert_eq!(store.len(), 2);
        apply_event(Event::Delete(obj("c2", "a")), &mut store, &mut relist, &mut q);
        assert_eq!(store.keys().cloned().collect::<Vec<_>>(), vec![key("c1", "a")]);
        // A relist that no longer contains c1/a (deleted while disconnected) drops it.
        for e in [Event::Init, Event::InitApply(obj("c3", "b")), Event::InitDone] {
            apply_event(e, &mut store, &mut relist, &mut q);
        }
        assert_eq!(store.keys().cloned().collect::<Vec<_>>(), vec![key("c3", "b")]);
        let now = Instant::now();
        let mut due = Vec::new();
        while let Some(k) = q.pop_due(now) {
            due.push(k);
        }
        assert_eq!(due, vec![key("c3", "b")]);
    }
}
