//! Binding `tenancy.faros.sh` where kcp did not: organizations and team workspaces made before
//! their WorkspaceTypes bound it by default, and workspaces whose binding was deleted.
//!
//! Runs once the index is settled (so "not covered" means not bound, not "not listed yet"), then
//! every `backfill_interval` and whenever a binding disappears. In steady state a pass walks the
//! cached organizations in memory and makes no request: team workspaces are listed only in
//! organizations that are not covered themselves, since a covered organization was made (or
//! bound) after the export existed, and so were its workspaces or they were bound with it.
//!
//! That walk never revisits a team workspace of a covered organization, so a binding to restore
//! there is kept until kcp answers for it: tried again after a failure, dropped only once kcp
//! says the workspace is gone or not the hub's to bind.

use std::sync::Arc;
use std::time::Duration;

use faros_core::kcp::Workspace;
use faros_core::kcp::apis::v1alpha2::APIBinding;
use faros_core::membership::{binds_tenancy, consumer_binding};
use faros_core::names;
use futures::StreamExt;
use kube::Api;
use kube::api::{ListParams, PostParams};
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
    let Some(orgs) = index.uncovered_orgs() else {
        return Outcome::default();
    };
    let mut targets: Vec<(String, Target)> = index
        .take_restores()
        .into_iter()
        .map(|c| (c, Target::Restore))
        .collect();
    let mut outcome = Outcome::default();
    for (org, cluster) in uncovered(tenancy, orgs.iter().cloned()) {
        targets.push((cluster, Target::Uncovered));
        let name = org.metadata.name.clone().unwrap_or_default();
        match spaces::children(tenancy, &names::org_workspace_path(&name)).await {
            Ok(children) => targets.extend(
                uncovered(tenancy, children.into_iter().map(Arc::new))
                    .into_iter()
                    .map(|(_, c)| (c, Target::Uncovered)),
            ),
            Err(error) => {
                outcome.failed += 1;
                tracing::warn!(org = %name, message = %error.message, "listing an organization's workspaces to bind tenancy.faros.sh");
            }
        }
    }
    let results: Vec<(String, Target, Bind)> = futures::stream::iter(targets)
        .map(|(cluster, target)| async move {
            let result = bind(tenancy, &cluster).await;
            (cluster, target, result)
        })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    for (cluster, target, result) in results {
        match after(target, result) {
            Next::Created => outcome.created += 1,
            Next::Done => {}
            Next::RetryPass => outcome.failed += 1,
            Next::RetryRestore => {
                outcome.failed += 1;
                index.keep_restore(&cluster);
            }
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

/// Why a pass binds a workspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// Its tenancy binding was deleted (or missing from a relist).
    Restore,
    /// Found by the walk: not covered.
    Uncovered,
}

/// What binding one workspace came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bind {
    Created,
    /// Bound already: by kcp's initializer (its claims not applied yet), or by another replica.
    Exists,
    /// The workspace is gone (404).
    Gone,
    /// Forbidden (403): at start the hub may not hold `bind` on the export yet; a workspace made
    /// by another identity the hub was never granted stays refused (and on the review path); kcp
    /// also answers 403 for a logical cluster that no longer exists.
    Refused,
    /// Anything else (a timeout, a 5xx, a dropped connection): worth trying again.
    Failed,
}

/// What a pass does after one bind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    Created,
    Done,
    /// The next pass comes sooner and finds the workspace again by its walk.
    RetryPass,
    /// The next pass comes sooner and tries this restore again: the walk would not find it.
    RetryRestore,
}

/// The decision after binding a `target`.
fn after(target: Target, result: Bind) -> Next {
    match (target, result) {
        (_, Bind::Created) => Next::Created,
        (_, Bind::Exists | Bind::Gone) => Next::Done,
        (Target::Uncovered, Bind::Refused | Bind::Failed) => Next::RetryPass,
        // A workspace whose binding kcp had accepted, now refused: gone, or no longer the hub's.
        // Retrying would keep a deleted workspace in the set for ever.
        (Target::Restore, Bind::Refused) => Next::Done,
        (Target::Restore, Bind::Failed) => Next::RetryRestore,
    }
}

/// Creates the binding in `cluster`, unless the export is bound there already.
async fn bind(tenancy: &Tenancy, cluster: &str) -> Bind {
    let api: Api<APIBinding> = match tenancy.client(cluster) {
        Ok(c) => Api::all(c),
        Err(_) => return Bind::Failed,
    };
    // Ready but not covered yet is also a workspace whose default binding (named by kcp's
    // initializer, not after the export) has not had its claims applied: a second binding there
    // would bind the export twice, so one of any name counts as bound (unless it is going).
    match api.list(&ListParams::default()).await {
        Ok(list)
            if list
                .items
                .iter()
                .any(|b| binds_tenancy(b) && b.metadata.deletion_timestamp.is_none()) =>
        {
            return Bind::Exists;
        }
        Ok(_) => {}
        Err(error) => return refusal(cluster, error),
    }
    match api.create(&PostParams::default(), &consumer_binding()).await {
        Ok(_) => Bind::Created,
        Err(kube::Error::Api(s)) if s.code == 409 => Bind::Exists,
        Err(error) => refusal(cluster, error),
    }
}

/// What an error reading or creating a workspace's bindings says of binding it.
fn refusal(cluster: &str, error: kube::Error) -> Bind {
    match error {
        kube::Error::Api(s) if s.code == 404 => Bind::Gone,
        kube::Error::Api(s) if s.code == 403 => {
            tracing::debug!(cluster, message = %s.message, "not allowed to bind tenancy.faros.sh");
            Bind::Refused
        }
        error => {
            tracing::debug!(cluster, %error, "cannot bind tenancy.faros.sh yet");
            Bind::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_follows_a_bind() {
        use Bind::*;
        use Target::*;
        let rows = [
            (Restore, Created, Next::Created),
            (Uncovered, Created, Next::Created),
            (Restore, Exists, Next::Done),
            (Uncovered, Exists, Next::Done),
            (Restore, Gone, Next::Done),
            (Uncovered, Gone, Next::Done),
            // At start the hub may not hold `bind` yet: the walk finds the workspace again.
            (Uncovered, Refused, Next::RetryPass),
            (Uncovered, Failed, Next::RetryPass),
            // A restore refused: the workspace went with its binding.
            (Restore, Refused, Next::Done),
            // A restore that failed on the way: only this set remembers it.
            (Restore, Failed, Next::RetryRestore),
        ];
        for (target, result, want) in rows {
            assert_eq!(after(target, result), want, "{target:?} {result:?}");
        }
    }
}
