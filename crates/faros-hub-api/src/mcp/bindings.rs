//! Every replica learns of every Enable and Disable: a watch of APIBindings in all workspaces
//! announces each change of a binding's Bound state ([`crate::tenancy::Tenancy::notify_bindings_changed`]),
//! so MCP sessions get `notifications/tools/list_changed` when a provider is enabled on another
//! replica, with kubectl, or when a binding the Enable request wrote becomes Bound after the
//! request's own announcement (which is what kept the notification from ever reaching clients: the
//! only announcement came while the binding was not Bound yet, and the sessions' re-read found
//! nothing new).
//!
//! A watch across all logical clusters needs kcp's shard admin (`system:masters`); real kcp refuses it
//! to the hub's usual admin identity and a front-proxy does not route it. Where it is refused the
//! watch ends (once, logged) and sessions rely on their own periodic re-read of their workspace's
//! enabled providers ([`super::federation`], every `readiness_poll`).

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use faros_core::client::ClientFactory;
use faros_core::kcp::apis::v1alpha2::APIBinding;
use faros_runtime::reflect::{self, Update};
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use tokio_util::sync::CancellationToken;

use crate::tenancy::Tenancy;
use crate::tenancy::enable::plan::is_bound;

/// The annotation kcp puts on objects of a wildcard list: their logical cluster.
const CLUSTER_ANNOTATION: &str = "kcp.io/cluster";

/// Whether a binding's Bound state moved from `before` (absent: `None`) to `after` (deleted:
/// `None`), which changes some workspace's tool set.
pub fn announces(before: Option<bool>, after: Option<bool>) -> bool {
    before.unwrap_or(false) != after.unwrap_or(false)
}

fn key(b: &APIBinding) -> String {
    let cluster = b
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CLUSTER_ANNOTATION))
        .map(String::as_str)
        .unwrap_or_default();
    format!("{cluster}/{}", b.metadata.name.as_deref().unwrap_or_default())
}

/// Watches APIBindings in every workspace until `cancel`, announcing Bound-state changes. A 403 that
/// outlasts `grace` (the hub's: [`faros_core::wait::BOOTSTRAP_GRACE`]) is kcp refusing the watch: the
/// watch then ends.
pub async fn watch(factory: ClientFactory, tenancy: Arc<Tenancy>, grace: Duration, cancel: CancellationToken) {
    let client = match factory.cluster("*") {
        Ok(c) => c,
        Err(error) => {
            tracing::error!(%error, "cannot build the APIBinding watch client");
            return;
        }
    };
    let api: Api<APIBinding> = Api::all(client);
    let config = watcher::Config::default();
    // The hub's grants arrive after it starts: a 403 that outlasts start-up is kcp's answer (below).
    // Raced against `cancel`: where kcp refuses the watch, that wait is the whole grace, and a stop
    // during it would otherwise wait it out (every in-process stack took a minute to stop).
    let listable = tokio::select! {
        _ = cancel.cancelled() => return,
        listable = faros_core::wait::until_listable(&api, &config, Some(grace)) => listable,
    };
    // Taken as kcp's answer here, before kube-runtime's watcher would log the same 403 as a warning.
    if let Err(kube::Error::Api(status)) = &listable
        && status.code == 403
    {
        return refused(&status.message);
    }
    let stream = watcher::watcher(api, config).default_backoff();
    let mut bound: HashMap<String, bool> = HashMap::new();
    reflect::drive(
        stream,
        cancel.cancelled(),
        |update| {
            let changed = match update {
                // A relist after a gap: announce once if anything moved while the watch was down.
                Update::Relisted(listed) => {
                    let listing: HashMap<String, bool> = listed.iter().map(|b| (key(b), is_bound(b))).collect();
                    let changed = listing.len() != bound.len()
                        || listing
                            .iter()
                            .any(|(k, now)| announces(bound.get(k).copied(), Some(*now)));
                    bound = listing;
                    changed
                }
                Update::Applied(b) => {
                    let now = is_bound(&b);
                    announces(bound.insert(key(&b), now), Some(now))
                }
                Update::Deleted(b) => announces(bound.remove(&key(&b)), None),
            };
            if changed {
                tenancy.notify_bindings_changed();
            }
        },
        |error| match error {
            watcher::Error::InitialListFailed(kube::Error::Api(status)) if status.code == 403 => {
                refused(&status.message);
                ControlFlow::Break(())
            }
            error => {
                tracing::warn!(%error, "APIBinding watch failed; retrying");
                ControlFlow::Continue(())
            }
        },
    )
    .await;
}

/// The watch's end where kcp refuses it (logged once).
fn refused(reason: &str) {
    tracing::info!(
        %reason,
        "kcp does not let the hub watch APIBindings in all workspaces; MCP sessions re-read their \
         workspace's enabled providers every readiness poll instead"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bound_state_changes_are_announced() {
        for (before, after, want) in [
            (None, Some(false), false),
            (None, Some(true), true),
            (Some(false), Some(true), true),
            (Some(true), Some(true), false),
            (Some(true), Some(false), true),
            (Some(true), None, true),
            (Some(false), None, false),
            (None, None, false),
        ] {
            assert_eq!(announces(before, after), want, "{before:?} -> {after:?}");
        }
    }
}
