//! Binding `tenancy.faros.sh` where kcp did not: organizations and team workspaces made before
//! their WorkspaceTypes bound it by default, and workspaces whose binding was deleted.
//!
//! Runs once the index is settled (so "not covered" means not bound, not "not listed yet"), then
//! every `backfill_interval` and whenever a binding disappears. In steady state a pass walks the
//! cached organizations in memory and makes no request: team workspaces are listed only in
//! organizations that are not covered themselves, since a covered organization was made (or
//! bound) after the export existed, and so were its workspaces or they were bound with it.

use std::sync::Arc;

use faros_core::kcp::Workspace;
use faros_core::kcp::apis::v1alpha2::APIBinding;
use faros_core::membership::consumer_binding;
use faros_core::names;
use futures::StreamExt;
use kube::Api;
use kube::api::PostParams;
use tokio_util::sync::CancellationToken;

use super::super::Tenancy;
use super::super::spaces;
use super::watch::IndexSettings;

/// Bindings created at once.
const IN_FLIGHT: usize = 16;

/// Runs passes until `cancel` (see the module docs).
pub async fn run(tenancy: Arc<Tenancy>, settings: IndexSettings, cancel: CancellationToken) {
    let mut tick = tokio::time::interval(settings.backfill_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tenancy.index.changed() => {}
            _ = tick.tick() => {}
        }
        pass(&tenancy).await;
    }
}

/// Logical clusters of `workspaces` that are Ready and not covered.
fn uncovered(tenancy: &Tenancy, workspaces: impl IntoIterator<Item = Arc<Workspace>>) -> Vec<(Arc<Workspace>, String)> {
    workspaces
        .into_iter()
        .filter(|w| w.is_ready() && w.metadata.deletion_timestamp.is_none())
        .filter_map(|w| {
            let cluster = w.spec.cluster.clone().filter(|c| !c.is_empty())?;
            (!tenancy.index.is_covered(&cluster)).then_some((w, cluster))
        })
        .collect()
}

/// One pass; returns how many bindings it created.
pub async fn pass(tenancy: &Tenancy) -> usize {
    let index = &tenancy.index;
    if !index.is_settled() {
        return 0;
    }
    let Some(orgs) = index.orgs.list() else {
        return 0;
    };
    let mut targets: Vec<String> = index.take_restores().into_iter().collect();
    for (org, cluster) in uncovered(tenancy, orgs) {
        targets.push(cluster);
        let name = org.metadata.name.clone().unwrap_or_default();
        match spaces::children(tenancy, &names::org_workspace_path(&name)).await {
            Ok(children) => targets.extend(
                uncovered(tenancy, children.into_iter().map(Arc::new))
                    .into_iter()
                    .map(|(_, c)| c),
            ),
            Err(error) => {
                tracing::warn!(org = %name, message = %error.message, "listing an organization's workspaces to bind tenancy.faros.sh")
            }
        }
    }
    if targets.is_empty() {
        return 0;
    }
    let created: usize = futures::stream::iter(targets)
        .map(|cluster| async move { usize::from(bind(tenancy, &cluster).await) })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<usize>>()
        .await
        .into_iter()
        .sum();
    if created > 0 {
        tracing::info!(
            created,
            "bound tenancy.faros.sh in tenant workspaces made before it existed"
        );
    }
    created
}

/// Creates the binding in `cluster`; `true` when this call created it.
async fn bind(tenancy: &Tenancy, cluster: &str) -> bool {
    let api: Api<APIBinding> = match tenancy.client(cluster) {
        Ok(c) => Api::all(c),
        Err(_) => return false,
    };
    match api.create(&PostParams::default(), &consumer_binding()).await {
        Ok(_) => true,
        // Bound already (its claims not applied yet), or by another replica a moment ago.
        Err(kube::Error::Api(s)) if s.code == 409 => false,
        // The workspace is gone, or made by another identity the hub was never granted.
        Err(kube::Error::Api(s)) if s.code == 403 || s.code == 404 => {
            tracing::debug!(cluster, message = %s.message, "cannot bind tenancy.faros.sh here");
            false
        }
        Err(error) => {
            tracing::warn!(cluster, %error, "binding tenancy.faros.sh");
            false
        }
    }
}
