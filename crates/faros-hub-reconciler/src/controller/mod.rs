//! The Provider controller: a wildcard watch on the `admin.faros.sh` virtual workspace feeding a work
//! queue keyed by (logical cluster, name), drained by a fixed number of workers.
//!
//! Why not `kube::runtime::Controller`: its store and queue key objects by (name, namespace), and a
//! wildcard watch through a virtual workspace returns same-named Providers from every workspace that
//! binds the export, which it would merge into one. Each object here is addressed by the `kcp.io/cluster`
//! annotation kcp stamps on it, and writes go to `<virtual workspace>/clusters/<that cluster>`.

pub mod mirror;
pub mod provider;
pub mod queue;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use faros_core::client::ClientFactory;
use faros_core::kcp::ANNOTATION_CLUSTER;
use faros_core::provider::Provider;
use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, ResourceExt};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;
use crate::mirror::Mirror;
use queue::WorkQueue;

/// What a reconcile asks for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Reconcile again after this long even if nothing changes.
    Requeue(Duration),
    /// Only a change to the object triggers the next reconcile.
    AwaitChange,
}

/// A Provider's identity across workspaces.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProviderKey {
    /// Logical cluster name (`kcp.io/cluster`).
    pub cluster: String,
    pub name: String,
}

impl fmt::Display for ProviderKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}|{}", self.cluster, self.name)
    }
}

impl ProviderKey {
    /// The key of an object from a wildcard watch; `None` without a `kcp.io/cluster` annotation.
    pub fn of(p: &Provider) -> Option<Self> {
        let cluster = p.annotations().get(ANNOTATION_CLUSTER).filter(|c| !c.is_empty())?;
        Some(Self {
            cluster: cluster.clone(),
            name: p.name_any(),
        })
    }
}

/// Where a Provider was seen: its key and the virtual workspace URL it came through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub key: ProviderKey,
    pub endpoint: Arc<str>,
}

/// Settings of the Provider controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Base URL written into provider kubeconfigs unless `spec.serverURLOverride` is set.
    pub hub_url: String,
    /// PEM CA written into provider kubeconfigs.
    pub ca_pem: Option<String>,
    /// Write `insecure-skip-tls-verify: true` instead of the CA.
    pub insecure_provider_kubeconfigs: bool,
    /// How long one reconcile waits for a workspace to become Ready (or to disappear).
    pub workspace_timeout: Duration,
    /// How long one reconcile waits for kcp to fill the token Secret.
    pub token_timeout: Duration,
    /// Full re-reconcile period of a healthy Provider (repairs drift such as a deleted Secret).
    pub resync: Duration,
    /// Number of Providers reconciled in parallel.
    pub concurrency: usize,
}

/// Shared by every reconcile of one leadership term.
pub struct Context {
    pub factory: ClientFactory,
    pub settings: Settings,
    pub metrics: Arc<Metrics>,
    /// The kubeconfig mirror into the hosting cluster, when enabled.
    pub mirror: Option<Mirror>,
    /// resourceVersion of our own last write (status, or the finalizer before provisioning) per
    /// Provider: the watch event it causes needs no work.
    own_writes: Mutex<HashMap<ProviderKey, String>>,
    failures: Mutex<HashMap<ProviderKey, u32>>,
    /// Our own last write per mirrored Secret name: `Some(resourceVersion)` for an apply, `None` for
    /// a delete. The watch event it causes needs no work.
    mirror_writes: Mutex<HashMap<String, Option<String>>>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("factory", &self.factory)
            .field("settings", &self.settings)
            .field("mirror", &self.mirror)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The maps hold plain bookkeeping; after a panic elsewhere they are still usable.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Context {
    pub fn new(factory: ClientFactory, settings: Settings, metrics: Arc<Metrics>) -> Self {
        Self {
            factory,
            settings,
            metrics,
            mirror: None,
            own_writes: Mutex::default(),
            failures: Mutex::default(),
            mirror_writes: Mutex::default(),
        }
    }

    /// Enables the kubeconfig mirror.
    pub fn with_mirror(mut self, mirror: Option<Mirror>) -> Self {
        self.mirror = mirror;
        self
    }

    fn remember_mirror_write(&self, secret: &str, rv: Option<String>) {
        if let Some(rv) = rv {
            lock(&self.mirror_writes).insert(secret.to_string(), Some(rv));
        }
    }

    fn remember_mirror_delete(&self, secret: &str) {
        lock(&self.mirror_writes).insert(secret.to_string(), None);
    }

    /// True once for the watch event of our last mirror write of `secret`: an apply event with its
    /// resourceVersion (`rv`), or a delete event (`rv` None) after our delete.
    fn is_own_mirror_event(&self, secret: &str, rv: Option<&str>) -> bool {
        let mut writes = lock(&self.mirror_writes);
        let ours = match (writes.get(secret), rv) {
            (Some(Some(ours)), Some(rv)) => ours == rv,
            (Some(None), None) => true,
            _ => false,
        };
        if ours {
            writes.remove(secret);
        }
        ours
    }

    fn remember_own_write(&self, key: &ProviderKey, rv: Option<String>) {
        if let Some(rv) = rv {
            lock(&self.own_writes).insert(key.clone(), rv);
        }
    }

    /// True once for the resourceVersion our last status write produced.
    fn is_own_write(&self, key: &ProviderKey, rv: Option<&str>) -> bool {
        let mut writes = lock(&self.own_writes);
        match (writes.get(key), rv) {
            (Some(ours), Some(rv)) if ours == rv => {
                writes.remove(key);
                true
            }
            _ => false,
        }
    }

    fn record_failure(&self, key: &ProviderKey) -> u32 {
        let mut failures = lock(&self.failures);
        let n = failures.entry(key.clone()).or_insert(0);
        *n = n.saturating_add(1);
        *n
    }

    fn reset_failures(&self, key: &ProviderKey) {
        lock(&self.failures).remove(key);
    }

    fn forget(&self, key: &ProviderKey) {
        lock(&self.own_writes).remove(key);
        lock(&self.failures).remove(key);
    }
}

#[derive(Clone)]
struct Cached {
    provider: Arc<Provider>,
    endpoint: Arc<str>,
}

type Store = Arc<Mutex<HashMap<ProviderKey, Cached>>>;

/// Runs the controller over the given virtual workspace URLs until `cancel` fires. In-flight
/// reconciles are dropped on cancellation (leadership lost: stop acting at once).
pub async fn run(
    ctx: Arc<Context>,
    endpoints: Vec<String>,
    cancel: CancellationToken,
) -> Result<(), faros_core::client::ClientError> {
    let store: Store = Arc::default();
    let queue = Arc::new(WorkQueue::new());
    let mut tasks = JoinSet::new();
    for url in endpoints {
        let api: Api<Provider> = Api::all(ctx.factory.virtual_workspace(&url, "*")?);
        tasks.spawn(watch(
            api,
            Arc::from(url.as_str()),
            store.clone(),
            queue.clone(),
            ctx.clone(),
            cancel.clone(),
        ));
    }
    if let Some(mirror) = ctx.mirror.clone() {
        tasks.spawn(mirror::watch(
            mirror,
            store.clone(),
            queue.clone(),
            ctx.clone(),
            cancel.clone(),
        ));
    }
    for _ in 0..ctx.settings.concurrency.max(1) {
        tasks.spawn(worker(ctx.clone(), store.clone(), queue.clone(), cancel.clone()));
    }
    cancel.cancelled().await;
    queue.close();
    while tasks.join_next().await.is_some() {}
    Ok(())
}

async fn watch(
    api: Api<Provider>,
    endpoint: Arc<str>,
    store: Store,
    queue: Arc<WorkQueue<ProviderKey>>,
    ctx: Arc<Context>,
    cancel: CancellationToken,
) {
    let mut events = std::pin::pin!(watcher::watcher(api, watcher::Config::default()).default_backoff());
    let mut relisted: HashSet<ProviderKey> = HashSet::new();
    let keyed = |p: Provider| match ProviderKey::of(&p) {
        Some(key) => Some((key, p)),
        None => {
            tracing::warn!(name = %p.name_any(), "Provider without a kcp.io/cluster annotation; cannot address it, skipping");
            None
        }
    };
    loop {
        let event = tokio::select! {
            _ = cancel.cancelled() => return,
            e = events.next() => e,
        };
        let Some(event) = event else { return };
        match event {
            Ok(Event::Init) => relisted.clear(),
            Ok(Event::InitApply(p)) => {
                let Some((key, p)) = keyed(p) else { continue };
                let cached = Cached {
                    provider: Arc::new(p),
                    endpoint: endpoint.clone(),
                };
                lock(&store).insert(key.clone(), cached);
                relisted.insert(key.clone());
                queue.add(key);
            }
            Ok(Event::Apply(p)) => {
                let Some((key, p)) = keyed(p) else { continue };
                // The echo of our own status write needs no work; queueing it would also cut short a
                // pending backoff (the queue keeps the earliest due time).
                let echo = ctx.is_own_write(&key, p.resource_version().as_deref());
                let cached = Cached {
                    provider: Arc::new(p),
                    endpoint: endpoint.clone(),
                };
                lock(&store).insert(key.clone(), cached);
                if !echo {
                    queue.add(key);
                }
            }
            Ok(Event::InitDone) => {
                // Objects deleted while the watch was down vanish here.
                lock(&store).retain(|k, c| c.endpoint != endpoint || relisted.contains(k));
                relisted.clear();
            }
            Ok(Event::Delete(p)) => {
                if let Some((key, _)) = keyed(p) {
                    lock(&store).remove(&key);
                    ctx.forget(&key);
                }
            }
            Err(error) => tracing::warn!(%endpoint, %error, "watching Providers failed; retrying with backoff"),
        }
        ctx.metrics.set_queue_depth(queue.len());
    }
}

async fn worker(ctx: Arc<Context>, store: Store, queue: Arc<WorkQueue<ProviderKey>>, cancel: CancellationToken) {
    loop {
        let key = tokio::select! {
            _ = cancel.cancelled() => return,
            k = queue.next() => k,
        };
        let Some(key) = key else { return };
        ctx.metrics.set_queue_depth(queue.len());
        let cached = lock(&store).get(&key).cloned();
        let Some(cached) = cached else {
            queue.done(&key);
            continue;
        };
        let target = Target {
            key: key.clone(),
            endpoint: cached.endpoint,
        };
        let started = Instant::now();
        let result = tokio::select! {
            _ = cancel.cancelled() => {
                queue.done(&key);
                return;
            }
            r = provider::reconcile(cached.provider, &target, &ctx) => r,
        };
        let action = match &result {
            Ok(action) => {
                ctx.reset_failures(&key);
                *action
            }
            Err(error) => {
                tracing::warn!(%key, %error, "reconcile failed");
                provider::error_policy(&key, error, &ctx)
            }
        };
        ctx.metrics.reconciled(
            started.elapsed().as_secs_f64(),
            result.as_ref().err().map(provider::Error::reason),
        );
        if let Action::Requeue(after) = action {
            queue.add_after(key.clone(), after);
        }
        queue.done(&key);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use faros_core::provider::ProviderSpec;

    #[test]
    fn key_needs_the_cluster_annotation() {
        let mut p = Provider::new("q", ProviderSpec::default());
        assert_eq!(ProviderKey::of(&p), None);
        p.annotations_mut().insert(ANNOTATION_CLUSTER.into(), String::new());
        assert_eq!(ProviderKey::of(&p), None);
        p.annotations_mut().insert(ANNOTATION_CLUSTER.into(), "abc".into());
        let key = ProviderKey::of(&p).unwrap();
        assert_eq!(
            key,
            ProviderKey {
                cluster: "abc".into(),
                name: "q".into()
            }
        );
        assert_eq!(key.to_string(), "abc|q");
    }

    #[test]
    fn same_name_in_two_workspaces_are_two_keys() {
        let mk = |cluster: &str| {
            let mut p = Provider::new("q", ProviderSpec::default());
            p.annotations_mut().insert(ANNOTATION_CLUSTER.into(), cluster.into());
            ProviderKey::of(&p).unwrap()
        };
        assert_ne!(mk("a"), mk("b"));
    }

    #[tokio::test]
    async fn own_status_write_is_recognised_once() {
        let config = kube::Config::new("https://127.0.0.1:1".parse().unwrap());
        let factory = ClientFactory::new(config).unwrap();
        let settings = Settings {
            hub_url: "https://hub".into(),
            ca_pem: None,
            insecure_provider_kubeconfigs: false,
            workspace_timeout: Duration::from_secs(1),
            token_timeout: Duration::from_secs(1),
            resync: Duration::from_secs(300),
            concurrency: 1,
        };
        let ctx = Context::new(factory, settings, Arc::new(Metrics::new()));
        let key = ProviderKey {
            cluster: "c".into(),
            name: "q".into(),
        };
        assert!(!ctx.is_own_write(&key, Some("5")));
        ctx.remember_own_write(&key, Some("5".into()));
        assert!(!ctx.is_own_write(&key, Some("4")), "an older event is not ours");
        assert!(ctx.is_own_write(&key, Some("5")));
        assert!(
            !ctx.is_own_write(&key, Some("5")),
            "only once: a resync must do the full work"
        );
        assert_eq!(ctx.record_failure(&key), 1);
        assert_eq!(ctx.record_failure(&key), 2);
        ctx.reset_failures(&key);
        assert_eq!(ctx.record_failure(&key), 1);

        assert!(!ctx.is_own_mirror_event("q-kubeconfig", Some("7")));
        ctx.remember_mirror_write("q-kubeconfig", Some("7".into()));
        assert!(
            !ctx.is_own_mirror_event("q-kubeconfig", None),
            "a delete after our apply is not ours"
        );
        assert!(!ctx.is_own_mirror_event("q-kubeconfig", Some("6")));
        assert!(ctx.is_own_mirror_event("q-kubeconfig", Some("7")));
        assert!(!ctx.is_own_mirror_event("q-kubeconfig", Some("7")), "only once");
        ctx.remember_mirror_delete("q-kubeconfig");
        assert!(
            !ctx.is_own_mirror_event("q-kubeconfig", Some("8")),
            "a recreation after our delete is not ours"
        );
        assert!(ctx.is_own_mirror_event("q-kubeconfig", None));
    }
}
