//! The export's virtual workspace URLs, followed: one task watches the APIExportEndpointSlice and
//! publishes its URL set whenever it changes; controllers and [`crate::app::Tenants`] read it.
//!
//! kcp publishes one URL per shard that hosts a workspace bound to the export, and adds or removes
//! URLs as tenants come and go on shards: a provider reading the first URL once would never see the
//! tenants of a second shard (kcp's multicluster-provider watches every URL for this reason).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use faros_core::kcp::apis::v1alpha1::APIExportEndpointSlice;
use faros_core::kcp::endpoints;
use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use kube::{Api, Client};
use tokio::sync::watch;

/// The current URL set of one endpoint slice (empty while kcp publishes none). Cheap to clone.
#[derive(Clone, Debug)]
pub struct Endpoints {
    urls: watch::Receiver<Vec<String>>,
    homes: TenantHomes,
}

impl Endpoints {
    /// Endpoints that stay `urls` (a fixed virtual workspace, or tests).
    pub fn fixed(urls: Vec<String>) -> Self {
        let (_, rx) = watch::channel(urls);
        Self {
            urls: rx,
            homes: TenantHomes::default(),
        }
    }

    /// Endpoints the caller sets (through the returned sender): a slice followed some other way,
    /// or tests.
    pub fn manual(urls: Vec<String>) -> (watch::Sender<Vec<String>>, Self) {
        let (tx, rx) = watch::channel(urls);
        (
            tx,
            Self {
                urls: rx,
                homes: TenantHomes::default(),
            },
        )
    }

    /// Follows slice `name` in the workspace `client` targets until `shutdown`; the returned task
    /// ends then. A watch that fails is retried with backoff and leaves the last URLs in place.
    pub fn follow(
        client: Client,
        name: &str,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let (tx, rx) = watch::channel(Vec::new());
        let api: Api<APIExportEndpointSlice> = Api::all(client);
        let name = name.to_string();
        let task = tokio::spawn(async move {
            let mut slices = std::pin::pin!(watcher::watch_object(api, &name).default_backoff());
            let mut shutdown = std::pin::pin!(shutdown);
            loop {
                let next = tokio::select! {
                    _ = &mut shutdown => return,
                    next = slices.next() => next,
                };
                match next {
                    Some(Ok(slice)) => {
                        let urls = endpoints::urls(slice.as_ref());
                        tx.send_if_modified(|current| {
                            let changed = *current != urls;
                            if changed {
                                tracing::info!(slice = %name, ?urls, "virtual workspace URLs");
                                *current = urls;
                            }
                            changed
                        });
                    }
                    Some(Err(error)) => {
                        tracing::warn!(slice = %name, %error, "watching the endpoint slice failed; retrying")
                    }
                    None => return,
                }
            }
        });
        (
            Self {
                urls: rx,
                homes: TenantHomes::default(),
            },
            task,
        )
    }

    /// The URLs now.
    pub fn current(&self) -> Vec<String> {
        self.urls.borrow().clone()
    }

    /// Waits until the URLs differ from what this handle saw last, and returns them; `None` once
    /// the follower stopped.
    pub async fn changed(&mut self) -> Option<Vec<String>> {
        self.urls.changed().await.ok()?;
        Some(self.urls.borrow_and_update().clone())
    }

    /// The URLs now, marking them seen (so [`Endpoints::changed`] waits for the next change).
    pub fn seen(&mut self) -> Vec<String> {
        self.urls.borrow_and_update().clone()
    }

    /// Which URL each tenant was last seen through.
    pub fn homes(&self) -> &TenantHomes {
        &self.homes
    }
}

/// Tenant (logical cluster) → the virtual workspace URL its objects came through: a tenant lives on
/// one shard, and only that shard's URL serves it.
#[derive(Clone, Debug, Default)]
pub struct TenantHomes(Arc<Mutex<HashMap<String, String>>>);

impl TenantHomes {
    pub fn record(&self, cluster: &str, url: &str) {
        let mut homes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if homes.get(cluster).is_none_or(|u| u != url) {
            homes.insert(cluster.to_string(), url.to_string());
        }
    }

    pub fn get(&self, cluster: &str) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(cluster)
            .cloned()
    }
}
