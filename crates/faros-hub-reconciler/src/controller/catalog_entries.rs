//! CatalogEntries as a trigger for the revision step ([`crate::revision`]): when a provider's `init`
//! publishes a new state (a CatalogEntry spec change, a new `metadata.generation`), the Provider of
//! the same name is queued at once instead of at the next resync.
//!
//! One wildcard watch per URL of the `providers.faros.sh` endpoint slice (the export every provider
//! workspace binds), started once the slice has URLs (a URL added later, by a new shard, is not
//! followed: its providers' revisions advance at the resync). Status-only changes (heartbeats, probes) do not queue anything: a revision that
//! waits for health is looked at again on its own schedule, so a heartbeat every few seconds from
//! every provider does not become a reconcile each.

use std::collections::HashMap;
use std::sync::Arc;

use faros_core::catalog::CatalogEntry;
use faros_core::kcp::Workspace;
use faros_core::kcp::apis::v1alpha1::APIExportEndpointSlice;
use faros_core::names;
use faros_core::provider::Provider;
use futures::StreamExt;
use futures::stream::SelectAll;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, ResourceExt};
use tokio_util::sync::CancellationToken;

use super::context::{Context, ProviderKey};

/// How long one wait for the endpoint slice lasts before it is started again (quietly).
const ENDPOINT_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

/// IO-free: whether `entry` is a new published state (a generation not seen for its name); records it.
pub(crate) fn changed(seen: &mut HashMap<String, i64>, entry: &CatalogEntry) -> bool {
    let generation = entry.metadata.generation.unwrap_or_default();
    seen.insert(entry.name_any(), generation) != Some(generation)
}

/// Watches CatalogEntries until `cancel` and queues the Provider named like each changed one.
pub(super) async fn watch(ctx: Arc<Context>, queue: faros_runtime::Handle<Provider>, cancel: CancellationToken) {
    let Some(cluster) = providers_cluster(&ctx).await else {
        return;
    };
    let Some(urls) = endpoint_urls(&ctx, &cancel).await else {
        return;
    };
    let mut events = SelectAll::new();
    for url in &urls {
        match ctx.factory.virtual_workspace(url, "*") {
            Ok(client) => {
                let api: Api<CatalogEntry> = Api::all(client);
                events.push(
                    watcher::watcher(api, watcher::Config::default())
                        .default_backoff()
                        .boxed(),
                );
            }
            Err(error) => tracing::warn!(%error, url, "cannot watch CatalogEntries"),
        }
    }
    let mut seen = HashMap::new();
    loop {
        let event = tokio::select! {
            _ = cancel.cancelled() => return,
            e = events.next() => e,
        };
        let Some(event) = event else { return };
        let entry = match event {
            Ok(Event::Apply(entry) | Event::InitApply(entry)) => entry,
            Ok(_) => continue,
            Err(error) => {
                tracing::debug!(%error, "CatalogEntry watch failed; the watcher retries");
                continue;
            }
        };
        if changed(&mut seen, &entry) {
            let key = ProviderKey {
                cluster: cluster.clone(),
                namespace: None,
                name: entry.name_any(),
            };
            tracing::debug!(%key, "CatalogEntry changed; queueing its Provider");
            queue.enqueue(key);
        }
    }
}

/// The `providers.faros.sh` slice's URLs once it has any: kcp publishes one only when a workspace
/// binds the export, which on a fresh install is the first provider workspace. `None` when cancelled.
async fn endpoint_urls(ctx: &Context, cancel: &CancellationToken) -> Option<Vec<String>> {
    let slices: Api<APIExportEndpointSlice> = match ctx.factory.cluster(names::SYSTEM_CONTROLLERS_PATH) {
        Ok(client) => Api::all(client),
        Err(error) => {
            tracing::warn!(%error, "cannot watch CatalogEntries; new provider revisions wait for the resync");
            return None;
        }
    };
    loop {
        let published = faros_core::wait::wait_for(
            slices.clone(),
            names::PROVIDERS_EXPORT,
            |s| !faros_core::kcp::endpoints::urls(s).is_empty(),
            ENDPOINT_WAIT,
        );
        tokio::select! {
            _ = cancel.cancelled() => return None,
            r = published => match r {
                Ok(slice) => return Some(faros_core::kcp::endpoints::urls(slice.as_ref())),
                Err(error) => tracing::debug!(%error, "no providers.faros.sh endpoints yet"),
            },
        }
    }
}

/// The logical cluster of `root:faros:system:providers`, where the Providers are.
async fn providers_cluster(ctx: &Context) -> Option<String> {
    let (parent, name) = names::SYSTEM_PROVIDERS_PATH.rsplit_once(':')?;
    let api: Api<Workspace> = Api::all(ctx.factory.cluster(parent).ok()?);
    match api.get(name).await {
        Ok(ws) => ws.spec.cluster,
        Err(error) => {
            tracing::warn!(%error, "cannot resolve {}; new provider revisions wait for the resync", names::SYSTEM_PROVIDERS_PATH);
            None
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use faros_core::catalog::CatalogEntrySpec;

    #[test]
    fn only_a_new_generation_counts() {
        let mut seen = HashMap::new();
        let mut e = CatalogEntry::new("q", CatalogEntrySpec::default());
        e.metadata.generation = Some(1);
        assert!(changed(&mut seen, &e), "first sight");
        assert!(!changed(&mut seen, &e), "a status write keeps the generation");
        e.metadata.generation = Some(2);
        assert!(changed(&mut seen, &e));
    }
}
