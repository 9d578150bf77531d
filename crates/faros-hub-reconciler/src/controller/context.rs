//! What every reconcile of one leadership term shares ([`Context`]) and how a Provider is
//! addressed ([`ProviderKey`], [`Target`]): below the controller's wiring ([`super`]), its
//! reconcile ([`super::provider`]) and its mirror step ([`super::mirror`]), which all use them.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use faros_core::client::ClientFactory;

use crate::metrics::Metrics;
use crate::mirror::Mirror;

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

    pub(super) fn remember_mirror_write(&self, secret: &str, rv: Option<String>) {
        if let Some(rv) = rv {
            lock(&self.mirror_writes).insert(secret.to_string(), Some(rv));
        }
    }

    pub(super) fn remember_mirror_delete(&self, secret: &str) {
        lock(&self.mirror_writes).insert(secret.to_string(), None);
    }

    /// True once for the watch event of our last mirror write of `secret`: an apply event with its
    /// resourceVersion (`rv`), or a delete event (`rv` None) after our delete.
    pub(super) fn is_own_mirror_event(&self, secret: &str, rv: Option<&str>) -> bool {
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

    pub(super) fn remember_own_write(&self, key: &ProviderKey, rv: Option<String>) {
        if let Some(rv) = rv {
            lock(&self.own_writes).insert(key.clone(), rv);
        }
    }

    /// True once for the resourceVersion our last status write produced.
    pub(super) fn is_own_write(&self, key: &ProviderKey, rv: Option<&str>) -> bool {
        let mut writes = lock(&self.own_writes);
        match (writes.get(key), rv) {
            (Some(ours), Some(rv)) if ours == rv => {
                writes.remove(key);
                true
            }
            _ => false,
        }
    }

    pub(super) fn forget(&self, key: &ProviderKey) {
        lock(&self.own_writes).remove(key);
    }
}
