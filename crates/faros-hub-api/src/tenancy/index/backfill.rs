//! Binding `tenancy.faros.sh` where kcp did not: organizations and team workspaces made before
//! their WorkspaceTypes bound it by default, and workspaces whose binding was deleted.
//!
//! Runs once the index is settled (so "not covered" means not bound, not "not listed yet"), then
//! every `backfill_interval` and whenever a binding disappears. In steady state a pass walks the
//! cached organizations in memory and makes no request: team workspaces are listed only in
//! organizations that are not covered themselves, since a covered organization was made (or
//! bound) after the export existed, and so were its workspaces or they were bound with it.

use std::sync::Arc;
use std::time::Duration;

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

/// First delay before a pass that could not bind everything is tried again: at start the hub may
/// not hold `bind` on the export yet (the reconciler's bootstrap grants it).
const FIRST_RETRY: Duration = Duration::from_secs(1);

/// Runs passes until `cancel` (see the module docs).
pub async fn run(tenancy: Arc<Tenancy>, settings: IndexSettings, cancel: CancellationToken) {
    let mut wait = Duration::ZERO;
    let mut retry = FIRST_RETRY;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tenancy.index.changed() => {}
            _ = tokio::time::sleep(wait) => {}
        }
        let outcome = pass(&tenancy).await;
        if outcome.failed > 0 {
            wait = retry.min(settings.backfill_interval);
            retry = (retry * 2).min(settings.backfill_interval);
        } else {
            wait = settings.backfill_interval;
            retry = FIRST_RETRY;
        }
    }
}

/// What one pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub created: usize,
    /// Workspaces it could not bind (retried sooner than the interval).
    pub failed: usize,
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

/// One pass.
pub async fn pass(tenancy: &Tenancy) -> Outcome {
    let index = &tenancy.index;
    if !index.is_settled() {
        return Outcome::default();
    }
    let Some(orgs) = index.orgs.list() else {
        return Outcome::default();
    };
    let mut targets: Vec<String> = index.take_restores().into_iter().collect();
    let mut outcome = Outcome::default();
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
                outcome.failed += 1;
                tracing::warn!(org = %name, message = %error.message, "listing an organization's workspaces to bind tenancy.faros.sh");
            }
        }
    }
    let results: Vec<Bind> = futures::stream::iter(targets)
        .map(|cluster| async move { bind(tenancy, &cluster).await })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    for r in results {
        match r {
            Bind::Created => outcome.created += 1,
            Bind::Failed => outcome.failed += 1,
            Bind::Exists | Bind::Gone => {}
        }
    }
    if outcome.created > 0 {
        tracing::info!(
            created = outcome.created,
            "bound tenancy.faros.sh in tenant workspaces made before it existed"
        );
    }
    outcome
}

/// What binding one workspace came to.
enum Bind {
    Created,
    /// Bound already (its claims not applied yet), or by another replica a moment ago.
    Exists,
    /// The workspace is gone.
    Gone,
    Failed,
}

/// Creates the binding in `cluster`.
async fn bind(tenancy: &Tenancy, cluster: &str) -> Bind {
    let api: Api<APIBinding> = match tenancy.client(cluster) {
        Ok(c) => Api::all(c),
        Err(_) => return Bind::Failed,
    };
    match api.create(&PostParams::default(), &consumer_binding()).await {
        Ok(_) => Bind::Created,
        Err(kube::Error::Api(s)) if s.code == 409 => Bind::Exists,
        Err(kube::Error::Api(s)) if s.code == 404 => Bind::Gone,
        // Refused: at start the hub may not hold `bind` on the export yet; a workspace made by
        // another identity the hub was never granted stays refused (and on the review path).
        Err(error) => {
            tracing::debug!(cluster, %error, "cannot bind tenancy.faros.sh yet");
            Bind::Failed
        }
    }
}
