//! The Provider controller: a wildcard watch on the `admin.faros.sh` virtual workspace (one per
//! endpoint URL) driven by [`faros_runtime::Controller`], the runtime the provider SDK uses too.
//!
//! Why not `kube::runtime::Controller`: its store and queue key objects by (name, namespace), and a
//! wildcard watch through a virtual workspace returns same-named Providers from every workspace that
//! binds the export, which it would merge into one. Each object here is addressed by the `kcp.io/cluster`
//! annotation kcp stamps on it ([`ProviderKey`]), and writes go to `<virtual workspace>/clusters/<that
//! cluster>`.
//!
//! This module is the reconciler-specific wiring: which watches feed the runtime, which events are
//! the echoes of our own writes, metrics, and the error policy of [`provider`].

pub mod mirror;
pub mod provider;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use faros_core::client::ClientFactory;
use faros_core::provider::Provider;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;
use crate::mirror::Mirror;

pub use faros_runtime::Action;

/// A Provider's identity across workspaces: (`kcp.io/cluster`, name); Providers are cluster-scoped,
/// so `namespace` is `None`.
pub type ProviderKey = faros_runtime::ClusterKey;

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
    /// The hub API's own kcp user, granted its role in each provider workspace; `None`: none.
    pub hub_user: Option<String>,
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

    fn forget(&self, key: &ProviderKey) {
        lock(&self.own_writes).remove(key);
    }
}

/// Runs the controller over the given virtual workspace URLs until `cancel` fires. In-flight
/// reconciles are dropped on cancellation (leadership lost: stop acting at once).
pub async fn run(
    ctx: Arc<Context>,
    endpoints: Vec<String>,
    cancel: CancellationToken,
) -> Result<(), faros_core::client::ClientError> {
    let mut controller = faros_runtime::Controller::new("providers").concurrency(ctx.settings.concurrency);
    for url in endpoints {
        let api: Api<Provider> = Api::all(ctx.factory.virtual_workspace(&url, "*")?);
        let events = watcher::watcher(api, watcher::Config::default()).default_backoff();
        controller = controller.watch(Arc::<str>::from(url.as_str()), events);
    }
    let controller = {
        let (echo, gone, depth) = (ctx.clone(), ctx.clone(), ctx.clone());
        controller
            // Queueing the echo of our own status write would also cut short a pending backoff.
            .skip_echoes(move |key, p| echo.is_own_write(key, p.resource_version().as_deref()))
            .on_gone(move |key| gone.forget(key))
            .on_queue_depth(move |n| depth.metrics.set_queue_depth(n))
    };
    let mut tasks = JoinSet::new();
    if let Some(mirror) = ctx.mirror.clone() {
        tasks.spawn(mirror::watch(mirror, controller.handle(), ctx.clone(), cancel.clone()));
    }
    let reconcile = {
        let ctx = ctx.clone();
        move |provider: Arc<Provider>, request: faros_runtime::Request<Arc<str>>| {
            let ctx = ctx.clone();
            async move {
                let target = Target {
                    key: request.key,
                    endpoint: request.source,
                };
                let started = Instant::now();
                let result = provider::reconcile(provider, &target, &ctx).await;
                ctx.metrics.reconciled(
                    started.elapsed().as_secs_f64(),
                    result.as_ref().err().map(provider::Error::reason),
                );
                result
            }
        }
    };
    controller
        .run(
            reconcile,
            |_key, error, retry| provider::error_policy(error, retry),
            cancel.clone().cancelled_owned(),
        )
        .await;
    while tasks.join_next().await.is_some() {}
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use faros_core::kcp::ANNOTATION_CLUSTER;
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
                namespace: None,
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
            hub_user: None,
        };
        let ctx = Context::new(factory, settings, Arc::new(Metrics::new()));
        let key = ProviderKey {
            cluster: "c".into(),
            namespace: None,
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
