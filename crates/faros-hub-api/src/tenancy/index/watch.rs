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
use kube::api::ListParams;
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
                Some(Ok(e)) => {
                    for cluster in on_coverage(&index, &url, &mut l, e) {
                        cover(&factory, &index, &url, &selector, &cluster).await;
                    }
                }
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

/// Applies a coverage event; returns the workspaces that became covered after the first listing,
/// which [`cover`] lists before they count as covered.
///
/// A workspace that loses its binding forgets its grants: while it is not covered the watch may
/// not see its bindings change (kcp shows claimed objects only of workspaces that accepted the
/// claim), so what the index held could be stale by the time it is covered again.
fn on_coverage(index: &MembershipIndex, url: &str, l: &mut Listing, e: Event<APIBinding>) -> Vec<String> {
    match e {
        Event::Init => l.covered.clear(),
        Event::InitApply(b) => {
            if let (Some(cluster), true) = (cluster_of(&b), covers(&b)) {
                l.covered.push(cluster);
            }
        }
        Event::InitDone => {
            let covered = std::mem::take(&mut l.covered);
            if !l.grants_synced {
                l.pending_cover = Some(covered);
                return Vec::new();
            }
            // A relist (the watch fell too far behind): a binding deleted meanwhile shows only by
            // its absence, and is bound again as on its DELETED event; one that came back is
            // listed like any workspace covered anew.
            let mut m = index.write();
            let (kept, anew): (Vec<String>, Vec<String>) = covered.into_iter().partition(|c| m.source_covers(url, c));
            let dropped = m.replace_covered(url, kept);
            for cluster in &dropped {
                m.replace_cluster_grants(url, cluster, Vec::new());
            }
            index.metrics.set_bindings(m.len());
            drop(m);
            for cluster in dropped {
                index.request_restore(&cluster);
            }
            return anew;
        }
        Event::Apply(b) | Event::Delete(b) if cluster_of(&b).is_none() => {}
        Event::Apply(b) => {
            let cluster = cluster_of(&b).unwrap_or_default();
            let covered = covers(&b);
            match (&mut l.pending_cover, l.grants_synced) {
                (_, true) => {
                    let held = index.read().source_covers(url, &cluster);
                    match (held, covered) {
                        (false, true) => return vec![cluster],
                        (true, false) => lose(index, url, &cluster),
                        _ => {}
                    }
                }
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
            lose(index, url, &cluster);
            // A tenant admin deleted it, or the workspace is going: either way the hub binds
            // again where the workspace still exists.
            if covers(&b) {
                index.request_restore(&cluster);
            }
        }
    }
    Vec::new()
}

/// `cluster` is no longer covered by `url`: its grants go with it (see [`on_coverage`]).
fn lose(index: &MembershipIndex, url: &str, cluster: &str) {
    let mut m = index.write();
    m.set_covered(url, cluster, false);
    m.replace_cluster_grants(url, cluster, Vec::new());
    index.metrics.set_bindings(m.len());
}

/// Attempts at listing a workspace's bindings before it counts as covered.
const COVER_ATTEMPTS: u32 = 3;

/// Lists the membership bindings of `cluster` (covered anew) and then counts it covered. The
/// source's events wait meanwhile, so a change the watch delivers later is applied after the
/// listing, never under it. If kcp cannot be asked, the workspace stays uncovered: its decisions
/// stay SubjectAccessReviews, slower but never wrong, until its binding changes again.
async fn cover(factory: &ClientFactory, index: &MembershipIndex, url: &str, selector: &str, cluster: &str) {
    let api: Api<ClusterRoleBinding> = match factory.virtual_workspace(url, cluster) {
        Ok(c) => Api::all(c),
        Err(error) => {
            tracing::warn!(%url, cluster, %error, "cannot build a client to list a workspace's membership bindings");
            return;
        }
    };
    let mut delay = Duration::from_millis(100);
    for attempt in 1..=COVER_ATTEMPTS {
        match api.list(&ListParams::default().labels(selector)).await {
            Ok(list) => {
                let grants = list
                    .items
                    .iter()
                    .filter_map(|b| Some((b.name_any(), grant_of(b)?)))
                    .collect();
                let mut m = index.write();
                m.replace_cluster_grants(url, cluster, grants);
                m.set_covered(url, cluster, true);
                index.metrics.set_bindings(m.len());
                return;
            }
            Err(error) if attempt == COVER_ATTEMPTS => {
                tracing::warn!(%url, cluster, %error, "cannot list a workspace's membership bindings; its decisions stay reviews");
            }
            Err(error) => {
                tracing::debug!(%url, cluster, %error, "listing a workspace's membership bindings; retrying");
                tokio::time::sleep(delay).await;
                delay *= 4;
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    const URL: &str = "https://shard/services/apiexport/x/tenancy.faros.sh";

    fn tenancy_binding(cluster: &str, applied: bool) -> APIBinding {
        serde_json::from_value(json!({
            "metadata": {"name": names::TENANCY_EXPORT, "annotations": {ANNOTATION_CLUSTER: cluster}},
            "spec": {"reference": {"export": {"path": names::SYSTEM_CONTROLLERS_PATH, "name": names::TENANCY_EXPORT}}},
            "status": {"conditions": [{"type": faros_core::membership::CLAIMS_APPLIED,
                "status": if applied { "True" } else { "False" }, "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        }))
        .unwrap()
    }

    fn member(cluster: &str, name: &str, user: &str) -> ClusterRoleBinding {
        serde_json::from_value(json!({
            "metadata": {"name": name, "annotations": {ANNOTATION_CLUSTER: cluster},
                "labels": {names::LABEL_MANAGED_BY: names::MANAGED_BY_FAROS, names::LABEL_MEMBERSHIP: "true"}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": names::WORKSPACE_MEMBER_ROLE},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        }))
        .unwrap()
    }

    fn role(index: &MembershipIndex, user: &str, cluster: &str) -> Option<Option<super::super::super::role::Role>> {
        index.read().role(user, &[], cluster)
    }

    /// A workspace covered anew is listed before it counts; one that loses its binding forgets its
    /// grants and is bound again; a relist missing one does the same.
    #[test]
    fn coverage_follows_the_tenancy_bindings() {
        let index = MembershipIndex::new(Default::default());
        let mut l = Listing::default();
        // First listing: c1 covered, its member listed.
        on_coverage(&index, URL, &mut l, Event::Init);
        on_coverage(&index, URL, &mut l, Event::InitApply(tenancy_binding("c1", true)));
        assert!(on_coverage(&index, URL, &mut l, Event::InitDone).is_empty());
        on_binding(&index, URL, &mut l, Event::Init);
        on_binding(&index, URL, &mut l, Event::InitApply(member("c1", "m1", "ann")));
        on_binding(&index, URL, &mut l, Event::InitDone);
        assert_eq!(
            role(&index, "ann", "c1"),
            Some(Some(super::super::super::role::Role::Member))
        );

        // c2's claims applied after the first listing: listed (by `cover`) before it counts.
        assert!(on_coverage(&index, URL, &mut l, Event::Apply(tenancy_binding("c2", false))).is_empty());
        assert_eq!(
            on_coverage(&index, URL, &mut l, Event::Apply(tenancy_binding("c2", true))),
            ["c2"]
        );
        assert_eq!(role(&index, "ann", "c2"), None, "not covered until listed");
        // A status update of a covered workspace lists nothing.
        assert!(on_coverage(&index, URL, &mut l, Event::Apply(tenancy_binding("c1", true))).is_empty());

        // A tenant admin deletes c1's binding: uncovered, grants forgotten, bound again.
        on_coverage(&index, URL, &mut l, Event::Delete(tenancy_binding("c1", true)));
        assert_eq!(role(&index, "ann", "c1"), None);
        assert!(index.take_restores().contains("c1"));
        assert_eq!(index.read().len(), 0, "c1's grant is forgotten, not kept stale");
        // Covered again: listed again.
        assert_eq!(
            on_coverage(&index, URL, &mut l, Event::Apply(tenancy_binding("c1", true))),
            ["c1"]
        );

        // A relist after c3 was covered (by `cover`) and its binding deleted while the watch was away.
        index.write().set_covered(URL, "c3", true);
        index
            .write()
            .set_grant(URL, "c3", "m3", grant_of(&member("c3", "m3", "bo")));
        on_coverage(&index, URL, &mut l, Event::Init);
        on_coverage(&index, URL, &mut l, Event::InitApply(tenancy_binding("c4", true)));
        assert_eq!(
            on_coverage(&index, URL, &mut l, Event::InitDone),
            ["c4"],
            "c4 is new: listed first"
        );
        assert_eq!(role(&index, "bo", "c3"), None);
        assert!(index.take_restores().contains("c3"));
        assert_eq!(index.read().len(), 0);
    }
}
