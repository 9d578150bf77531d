//! Feeding the registry from kcp and writing CatalogEntry status back.
//!
//! The hub watches every CatalogEntry through the `providers.faros.sh` APIExport virtual workspace
//! (`<vw>/clusters/*`), maps each entry's `kcp.io/cluster` to its workspace path (LogicalCluster
//! `cluster`, annotation `kcp.io/path`), and lets the registry elect the authoritative one per name.
//! A restart rebuilds everything from the watch: heartbeat state included, because it is persisted
//! in status. Status is written through the same virtual workspace, only when it differs from what
//! was observed, so N replicas do not fight.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use faros_core::catalog::{CatalogEntry, CatalogEntryStatus};
use faros_core::client::ClientFactory;
use faros_core::kcp::endpoints::UrlChanges;
use faros_core::kcp::{ANNOTATION_CLUSTER, Workspace};
use faros_core::names;
use faros_runtime::reflect::{self, Update};
use kube::api::{Patch, PatchParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::catalog::registry::{Candidate, Registry, StatusWork};
use crate::metrics::Metrics;
use crate::workspace::ClusterPaths;

/// Timings of the catalog loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatalogSettings {
    /// How often readiness is re-evaluated (staleness), and unresolved paths retried.
    pub sweep_interval: Duration,
    /// How long one wait for the endpoint slice lasts before it is retried.
    pub endpoint_timeout: Duration,
    /// Delay before a failed status write is retried.
    pub retry_delay: Duration,
}

impl Default for CatalogSettings {
    fn default() -> Self {
        Self {
            sweep_interval: names::HEARTBEAT_SWEEP_INTERVAL,
            endpoint_timeout: Duration::from_secs(30),
            retry_delay: Duration::from_secs(2),
        }
    }
}

/// Errors of one kcp lookup.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("kcp client: {0}")]
    Client(#[from] faros_core::client::ClientError),
    #[error("{what}: {source}")]
    Kube {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("{0}")]
    Missing(String),
}

/// Cluster-name → workspace-path lookups (through [`ClusterPaths`]) and provider workspaces.
#[derive(Debug)]
pub struct Resolver {
    factory: ClientFactory,
    paths: Arc<ClusterPaths>,
}

impl Resolver {
    pub fn new(factory: ClientFactory, paths: Arc<ClusterPaths>) -> Self {
        Self { factory, paths }
    }

    /// The workspace path of logical cluster `cluster`.
    pub async fn path_of(&self, cluster: &str) -> Result<String, CatalogError> {
        self.paths
            .path_of(cluster)
            .await
            .map_err(|e| CatalogError::Missing(e.to_string()))
    }

    /// The logical cluster of `root:faros:providers:<name>` (for admin-applied entries).
    pub async fn provider_cluster(&self, name: &str) -> Result<String, CatalogError> {
        let api: Api<Workspace> = Api::all(self.factory.cluster(names::PROVIDERS_PATH)?);
        let ws = api.get_opt(name).await.map_err(|source| CatalogError::Kube {
            what: format!("reading Workspace {name} in {}", names::PROVIDERS_PATH),
            source,
        })?;
        ws.and_then(|w| w.spec.cluster)
            .filter(|c| !c.is_empty())
            .ok_or_else(|| {
                CatalogError::Missing(format!(
                    "{} has no logical cluster yet",
                    names::provider_workspace_path(name)
                ))
            })
    }
}

/// The catalog loops for one hub process.
pub struct Catalog {
    pub factory: ClientFactory,
    pub registry: Arc<Registry>,
    pub resolver: Arc<Resolver>,
    pub metrics: Arc<Metrics>,
    pub settings: CatalogSettings,
}

impl Catalog {
    /// Runs until `cancel`: finds the virtual workspace, watches it, writes status, sweeps.
    pub async fn run(self: Arc<Self>, cancel: CancellationToken) {
        let mut background = tokio::task::JoinSet::new();
        background.spawn(self.clone().write_statuses(cancel.clone()));
        background.spawn(self.clone().sweep(cancel.clone()));
        // The virtual workspace URLs are followed, not read once: a sharded kcp lists one per shard
        // hosting a provider workspace and adds or drops them as shards gain or lose one; kcp
        // rewrites them when a shard's address changes (a restarted embedded kcp on a new port).
        // One watch per URL, as kcp's multicluster-provider does: a URL that appears gets a watch,
        // one that goes has its watch stopped and its entries retired, the others keep running.
        let mut current: Vec<String> = Vec::new();
        let mut watches = tokio::task::JoinSet::new();
        let mut running: HashMap<String, tokio::task::AbortHandle> = HashMap::new();
        while let Some(urls) = self.endpoints(&cancel, &current).await {
            let changes = UrlChanges::between(current.iter().map(String::as_str), &urls);
            tracing::info!(
                ?urls,
                start = ?changes.start,
                stop = ?changes.stop,
                "watching CatalogEntries through the providers.faros.sh virtual workspace"
            );
            for old in &changes.stop {
                if let Some(watch) = running.remove(old) {
                    watch.abort();
                }
                self.registry.retire_source(old);
            }
            self.registry.expect_sources(urls.len());
            for url in changes.start {
                let watch = watches.spawn(self.clone().watch(url.clone(), cancel.clone()));
                running.insert(url, watch);
            }
            current = urls;
        }
        watches.abort_all();
        while background.join_next().await.is_some() {}
    }

    /// The endpoint slice's URLs once they are non-empty and differ from `current`; `None` on cancel.
    async fn endpoints(&self, cancel: &CancellationToken, current: &[String]) -> Option<Vec<String>> {
        let follow = crate::export_urls::Follow {
            export: names::PROVIDERS_EXPORT,
            timeout: self.settings.endpoint_timeout,
            retry_delay: self.settings.retry_delay,
        };
        crate::export_urls::next(&self.factory, follow, cancel, current).await
    }

    async fn candidate(&self, source: &str, entry: CatalogEntry) -> Option<Candidate> {
        let Some(cluster) = entry.annotations().get(ANNOTATION_CLUSTER).cloned() else {
            tracing::warn!(name = %entry.name_any(), "CatalogEntry without {ANNOTATION_CLUSTER} ignored");
            return None;
        };
        let path = match self.resolver.path_of(&cluster).await {
            Ok(p) => Some(p),
            Err(error) => {
                tracing::warn!(%cluster, %error, "cannot resolve the workspace of a CatalogEntry yet");
                None
            }
        };
        Some(Candidate {
            cluster,
            path,
            source: source.to_string(),
            entry,
        })
    }

    async fn watch(self: Arc<Self>, url: String, cancel: CancellationToken) {
        let client = match self.factory.virtual_workspace(&url, "*") {
            Ok(c) => c,
            Err(error) => {
                tracing::error!(%url, %error, "cannot build the virtual workspace client");
                return;
            }
        };
        let api: Api<CatalogEntry> = Api::all(client);
        let stream = faros_core::wait::permitted_watcher(api, watcher::Config::default()).default_backoff();
        reflect::drive_async(
            stream,
            cancel.cancelled(),
            |update| self.on_update(&url, update),
            |error| {
                tracing::warn!(%url, %error, "CatalogEntry watch failed; retrying");
                ControlFlow::Continue(())
            },
        )
        .await;
    }

    /// One update of a virtual workspace's CatalogEntries into the registry.
    async fn on_update(&self, url: &str, update: Update<CatalogEntry>) {
        match update {
            Update::Relisted(entries) => {
                let mut listing: Vec<Candidate> = Vec::new();
                for entry in entries {
                    listing.extend(self.candidate(url, entry).await);
                }
                tracing::info!(%url, entries = listing.len(), "CatalogEntries listed");
                self.registry.replace_source(url, listing);
                self.resolve_missing().await;
            }
            Update::Applied(entry) => {
                if let Some(c) = self.candidate(url, entry).await {
                    self.registry.upsert(c);
                    self.resolve_missing().await;
                }
            }
            Update::Deleted(entry) => {
                if let Some(cluster) = entry.annotations().get(ANNOTATION_CLUSTER) {
                    self.registry.remove(cluster, &entry.name_any());
                }
            }
        }
    }

    /// Retries unresolved paths and provider-workspace clusters of admin-applied winners.
    async fn resolve_missing(&self) {
        for (name, cluster) in self.registry.unresolved() {
            if let Ok(path) = self.resolver.path_of(&cluster).await {
                self.registry.set_path(&name, &cluster, &path);
            }
        }
        for name in self.registry.missing_provider_clusters() {
            match self.resolver.provider_cluster(&name).await {
                Ok(cluster) => self.registry.set_provider_cluster(&name, &cluster),
                Err(error) => tracing::debug!(provider = %name, %error, "provider workspace not resolvable yet"),
            }
        }
    }

    async fn sweep(self: Arc<Self>, cancel: CancellationToken) {
        let mut tick = tokio::time::interval(self.settings.sweep_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tick.tick() => {}
            }
            let ready = self.registry.reevaluate(self.registry.clock().now());
            self.metrics.set_ready_providers(ready);
            self.resolve_missing().await;
        }
    }

    async fn write_statuses(self: Arc<Self>, cancel: CancellationToken) {
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = self.registry.dirty_notified() => {}
            }
            let now = self.registry.clock().now();
            self.metrics
                .set_ready_providers(self.registry.list().iter().filter(|v| v.readiness.ready).count());
            for name in self.registry.take_dirty() {
                for work in self.registry.desired_statuses(&name, now) {
                    if !work.needs_write() {
                        continue;
                    }
                    match self.write(&work).await {
                        Ok(written) => {
                            self.metrics.status_write("ok");
                            self.registry.written(&work.name, &work.cluster, written);
                        }
                        Err(error) => {
                            self.metrics.status_write("error");
                            tracing::warn!(provider = %work.name, cluster = %work.cluster, %error, "writing CatalogEntry status failed; retrying");
                            let registry = self.registry.clone();
                            let delay = self.settings.retry_delay;
                            let name = work.name.clone();
                            tokio::spawn(async move {
                                tokio::time::sleep(delay).await;
                                registry.mark_dirty([name]);
                            });
                        }
                    }
                }
            }
        }
    }

    async fn write(&self, work: &StatusWork) -> Result<CatalogEntryStatus, CatalogError> {
        let api: Api<CatalogEntry> = Api::all(self.factory.virtual_workspace(&work.source, &work.cluster)?);
        let patch = json!({ "status": status_patch(&work.desired) });
        let updated = api
            .patch_status(&work.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| CatalogError::Kube {
                what: format!("patching status of CatalogEntry {} in {}", work.name, work.cluster),
                source,
            })?;
        Ok(updated.status.unwrap_or_else(|| work.desired.clone()))
    }
}

/// The merge patch body of `status`: the hub's fields with explicit nulls for absent ones, so a
/// field the hub stopped setting is removed rather than left stale by JSON merge semantics.
pub fn status_patch(status: &CatalogEntryStatus) -> Value {
    let mut v = serde_json::to_value(status).unwrap_or_else(|_| json!({}));
    if let Some(obj) = v.as_object_mut() {
        for key in [
            "workspace",
            "endpoints",
            "lastHeartbeat",
            "reportedVersion",
            "observedGeneration",
            "conditions",
        ] {
            obj.entry(key).or_insert(Value::Null);
        }
        if let Some(eps) = obj.get_mut("endpoints").and_then(Value::as_object_mut) {
            for key in ["ui", "backend"] {
                eps.entry(key).or_insert(Value::Null);
            }
        }
    }
    v
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use faros_core::catalog::Endpoints;
    use pretty_assertions::assert_eq;

    #[test]
    fn status_patch_nulls_what_the_hub_does_not_set() {
        let s = CatalogEntryStatus {
            endpoints: Some(Endpoints {
                ui: Some("http://q/".into()),
                backend: None,
            }),
            observed_generation: Some(2),
            ..Default::default()
        };
        assert_eq!(
            status_patch(&s),
            json!({"workspace": null, "endpoints": {"ui": "http://q/", "backend": null}, "lastHeartbeat": null,
                   "reportedVersion": null, "observedGeneration": 2, "conditions": null})
        );
    }
}
