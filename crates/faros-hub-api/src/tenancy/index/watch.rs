//! Feeding the membership index: one watch of faros' membership ClusterRoleBindings and one of the
//! `tenancy.faros.sh` APIBindings per virtual workspace URL (one per shard hosting a tenant
//! workspace), followed as the export's endpoint slice changes.
//!
//! A source's coverage is applied only once its bindings are listed: covering a workspace whose
//! bindings are not in yet would read as "not a member" there.

use std::sync::Arc;
use std::time::Duration;

use faros_core::client::ClientFactory;
use faros_core::kcp::ANNOTATION_CLUSTER;
use faros_core::kcp::apis::v1alpha2::APIBinding;
use faros_core::kcp::endpoints::UrlChanges;
use faros_core::membership::covers;
use faros_core::names;
use faros_core::wait::permitted_watcher;
use futures::StreamExt;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource, ResourceExt};
use tokio_util::sync::CancellationToken;

use super::MembershipIndex;
use super::model::{Grant, grant_of};
use crate::export_urls::{self, Follow};

/// Timings of the index's loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexSettings {
    /// How long one wait for a change of the endpoint slice lasts before it starts again.
    pub endpoint_timeout: Duration,
    /// Longest delay between attempts to read the endpoint slice.
    pub retry_delay: Duration,
    /// How often [`super::backfill`] looks for tenant workspaces without the tenancy binding.
    pub backfill_interval: Duration,
}

impl Default for IndexSettings {
    fn default() -> Self {
        Self {
            endpoint_timeout: Duration::from_secs(30),
            retry_delay: Duration::from_secs(2),
            backfill_interval: Duration::from_secs(300),
        }
    }
}

/// Runs the organization watch and the per-URL membership watches until `cancel`.
pub async fn run(
    factory: ClientFactory,
    index: Arc<MembershipIndex>,
    settings: IndexSettings,
    cancel: CancellationToken,
) {
    let mut tasks = tokio::task::JoinSet::new();
    {
        let (factory, index, cancel) = (factory.clone(), index.clone(), cancel.clone());
        tasks.spawn(async move {
            super::orgs::watch(factory, &index, cancel).await;
        });
    }
    // What the slice says now, possibly nothing (no tenant workspace bound yet): the index is
    // settled once these are listed, so the backfill does not bind what is merely not listed yet.
    let mut current = loop {
        match export_urls::current(&factory, names::TENANCY_EXPORT).await {
            Ok(urls) => break urls,
            Err(error) => {
                tracing::debug!(%error, "tenancy.faros.sh endpoint slice not readable yet");
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(settings.retry_delay) => {}
                }
            }
        }
    };
    index.expect_initial(&current);
    let mut running: std::collections::HashMap<String, tokio::task::AbortHandle> = Default::default();
    let mut start = current.clone();
    let follow = Follow {
        export: names::TENANCY_EXPORT,
        timeout: settings.endpoint_timeout,
        retry_delay: settings.retry_delay,
    };
    loop {
        for url in start.drain(..) {
            let task = tasks.spawn(source(factory.clone(), index.clone(), url.clone(), cancel.clone()));
            running.insert(url, task);
        }
        let Some(urls) = export_urls::next(&factory, follow, &cancel, &current).await else {
            break;
        };
        let changes = UrlChanges::between(current.iter().map(String::as_str), &urls);
        tracing::info!(?urls, start = ?changes.start, stop = ?changes.stop, "watching memberships through the tenancy.faros.sh virtual workspace");
        for old in &changes.stop {
            if let Some(task) = running.remove(old) {
                task.abort();
            }
            index.write().retire(old);
        }
        start = changes.start;
        current = urls;
    }
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
}

fn cluster_of<K: Resource>(obj: &K) -> Option<String> {
    obj.meta().annotations.as_ref()?.get(ANNOTATION_CLUSTER).cloned()
}

/// What one URL's watches have listed so far.
#[derive(Default)]
struct Listing {
    grants: Vec<(String, String, Grant)>,
    covered: Vec<String>,
    grants_synced: bool,
    /// Coverage listed before the bindings were: applied when they are.
    pending_cover: Option<Vec<String>>,
}

async fn source(factory: ClientFactory, index: Arc<MembershipIndex>, url: String, cancel: CancellationToken) {
    let client = match factory.virtual_workspace(&url, "*") {
        Ok(c) => c,
        Err(error) => {
            tracing::error!(%url, %error, "cannot build the tenancy virtual workspace client");
            return;
        }
    };
    let selector = format!(
        "{}={},{}",
        names::LABEL_MANAGED_BY,
        names::MANAGED_BY_FAROS,
        names::LABEL_MEMBERSHIP
    );
    let crbs: Api<ClusterRoleBinding> = Api::all(client.clone());
    let bindings: Api<APIBinding> = Api::all(client);
    let mut crbs =
        std::pin::pin!(permitted_watcher(crbs, watcher::Config::default().labels(&selector)).default_backoff());
    let mut bindings = std::pin::pin!(permitted_watcher(bindings, watcher::Config::default()).default_backoff());
    let mut l = Listing::default();
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            e = crbs.next() => match e {
                Some(Ok(e)) => on_binding(&index, &url, &mut l, e),
                Some(Err(error)) => tracing::warn!(%url, %error, "membership binding watch failed; retrying"),
                None => return,
            },
            e = bindings.next() => match e {
                Some(Ok(e)) => on_coverage(&index, &url, &mut l, e),
                Some(Err(error)) => tracing::warn!(%url, %error, "tenancy APIBinding watch failed; retrying"),
                None => return,
            },
        }
    }
}

fn on_binding(index: &MembershipIndex, url: &str, l: &mut Listing, e: Event<ClusterRoleBinding>) {
    match e {
        Event::Init => l.grants.clear(),
        Event::InitApply(b) => {
            if let (Some(cluster), Some(grant)) = (cluster_of(&b), grant_of(&b)) {
                l.grants.push((cluster, b.name_any(), grant));
            }
        }
        Event::InitDone => {
            let listed = l.grants.len();
            let mut m = index.write();
            m.replace_grants(url, std::mem::take(&mut l.grants));
            if let Some(covered) = l.pending_cover.take() {
                // The source's first listing: nothing was covered before.
                m.replace_covered(url, covered);
            }
            index.metrics.set_bindings(m.len());
            drop(m);
            l.grants_synced = true;
            tracing::info!(%url, bindings = listed, "membership bindings listed");
            index.source_synced(url);
        }
        Event::Apply(b) | Event::Delete(b) if cluster_of(&b).is_none() => {}
        Event::Apply(b) => {
            let mut m = index.write();
            m.set_grant(url, &cluster_of(&b).unwrap_or_default(), &b.name_any(), grant_of(&b));
            index.metrics.set_bindings(m.len());
        }
        Event::Delete(b) => {
            let mut m = index.write();
            m.set_grant(url, &cluster_of(&b).unwrap_or_default(), &b.name_any(), None);
            index.metrics.set_bindings(m.len());
        }
    }
}

fn on_coverage(index: &MembershipIndex, url: &str, l: &mut Listing, e: Event<APIBinding>) {
    match e {
        Event::Init => l.covered.clear(),
        Event::InitApply(b) => {
            if let (Some(cluster), true) = (cluster_of(&b), covers(&b)) {
                l.covered.push(cluster);
            }
        }
        Event::InitDone => {
            let covered = std::mem::take(&mut l.covered);
            if l.grants_synced {
                // A relist (the watch fell too far behind) shows a binding deleted meanwhile only
                // by its absence: bound again, as on its DELETED event.
                let dropped = index.write().replace_covered(url, covered);
                for cluster in dropped {
                    index.request_restore(&cluster);
                }
            } else {
                l.pending_cover = Some(covered);
            }
        }
        Event::Apply(b) | Event::Delete(b) if cluster_of(&b).is_none() => {}
        Event::Apply(b) => {
            let cluster = cluster_of(&b).unwrap_or_default();
            let covered = covers(&b);
            match (&mut l.pending_cover, l.grants_synced) {
                (_, true) => index.write().set_covered(url, &cluster, covered),
                (Some(pending), false) => {
                    pending.retain(|c| *c != cluster);
                    if covered {
                        pending.push(cluster);
                    }
                }
                (None, false) => {
                    if covered {
                        l.covered.push(cluster);
                    }
                }
            }
        }
        Event::Delete(b) => {
            let cluster = cluster_of(&b).unwrap_or_default();
            if let Some(pending) = &mut l.pending_cover {
                pending.retain(|c| *c != cluster);
            }
            index.write().set_covered(url, &cluster, false);
            // A tenant admin deleted it, or the workspace is going: either way the hub binds
            // again where the workspace still exists.
            if covers(&b) {
                index.request_restore(&cluster);
            }
        }
    }
}
