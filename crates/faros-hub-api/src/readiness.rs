//! Whether the faros workspace tree the hub serves from exists yet: `/readyz` stays 503 until the hub
//! reconciler has bootstrapped it, so a Service never routes tenants to a hub whose `POST /api/orgs`
//! could only answer "workspace not found".
//!
//! Until then every route but health, metrics, the JWKS and the kcp pass-through (which answers for
//! kcp itself) answers `503` with `Retry-After` and a
//! Status naming what the hub waits for ([`startup_pending`]), never a `404` for a workspace or
//! provider that is about to exist. After the tree, the catalog's first sync: before it, a provider's
//! heartbeat would find no CatalogEntry. `/readyz` then also waits for the first health probes of the
//! providers' backends ([`crate::catalog::registry::Registry::first_probes_done`]): routes are served
//! meanwhile, but a Service should not send a replica traffic its backend proxy would refuse as "not
//! probed yet" for a provider every other replica serves.
//!
//! An embedder may hold tenant routes back longer ([`TreeGate::hold`]): `faros dev` does until its
//! demo tenant exists and its quickstart is Ready, so what its README promises ("503 with
//! `Retry-After` until the banner") holds for every tenant route. Heartbeats are never held that way:
//! the providers the embedder waits for become Ready through them.
//!
//! The gate is opened by [`watch_tree`], which [`crate::Hub::spawn_background`] starts; a hub composed
//! without its background loops (in-process tests of the routes) has no tree watch, and then only the
//! registry decides `/readyz` and no route is held back.

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use faros_core::client::ClientFactory;
use faros_core::kcp::tenancy::Workspace;
use faros_core::names;
use faros_core::wait::wait_for;
use kube::Api;
use tokio_util::sync::CancellationToken;

/// The workspace whose readiness stands for the whole tree: the reconciler creates it last among the
/// ones the hub's routes need, and tenancy cannot work without it.
const GATE_WORKSPACE: &str = "tenants";
/// How long one watch for the workspace runs before it is restarted (a restart also re-resolves a
/// kcp that was not reachable yet).
const WATCH_ROUND: Duration = Duration::from_secs(300);
/// Pause after a failed watch before the next.
const RETRY: Duration = Duration::from_secs(1);
/// First retry delay while the tree's workspaces cannot be watched yet.
const FIRST_RETRY: Duration = Duration::from_millis(50);

const UNWATCHED: u8 = 0;
const WAITING: u8 = 1;
const READY: u8 = 2;

/// What `/readyz` reports about the workspace tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeState {
    /// No watch runs (a hub without its background loops): readiness does not depend on it.
    Unwatched,
    /// Watching; the tree is not bootstrapped yet.
    Waiting,
    Ready,
}

/// The tree gate, shared by the watch and `/readyz`, with an embedder's hold on tenant routes.
#[derive(Debug, Default)]
pub struct TreeGate {
    state: AtomicU8,
    hold: std::sync::RwLock<Option<String>>,
}

impl TreeGate {
    pub fn state(&self) -> TreeState {
        match self.state.load(Ordering::Acquire) {
            UNWATCHED => TreeState::Unwatched,
            WAITING => TreeState::Waiting,
            _ => TreeState::Ready,
        }
    }

    /// Marks the gate as watched, unless it is already open ([`watch_tree`] does; tests of the
    /// start-up gate too).
    pub fn watching(&self) {
        let _ = self
            .state
            .compare_exchange(UNWATCHED, WAITING, Ordering::AcqRel, Ordering::Acquire);
    }

    fn open(&self) {
        self.state.store(READY, Ordering::Release);
    }

    /// Holds tenant routes (everything [`startup_pending`] holds but heartbeats) back with `why`
    /// until [`TreeGate::release`]; a later call replaces the reason (what is still awaited).
    pub fn hold(&self, why: impl Into<String>) {
        let mut hold = self.hold.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        *hold = Some(why.into());
    }

    /// Ends the hold.
    pub fn release(&self) {
        let mut hold = self.hold.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        *hold = None;
    }

    /// The hold's reason, while there is one.
    pub fn held(&self) -> Option<String> {
        self.hold
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// Seconds a client is told to wait before retrying during start-up.
pub const STARTUP_RETRY_AFTER: u32 = 1;

/// Why the hub cannot serve its routes yet, if it cannot: the tree is being bootstrapped, or the
/// catalog has not synced. `None` once both are done (or when no tree watch runs).
pub fn startup_pending(tree: &TreeGate, registry_synced: bool) -> Option<String> {
    match tree.state() {
        TreeState::Unwatched => None,
        TreeState::Waiting => Some(waiting_message()),
        TreeState::Ready if !registry_synced => Some("starting: the catalog has not synced with kcp yet".to_string()),
        TreeState::Ready => None,
    }
}

/// Why a tenant route (any route [`startup_pending`] gates, but heartbeats) cannot be served yet:
/// start-up, then an embedder's [`TreeGate::hold`].
pub fn tenant_pending(tree: &TreeGate, registry_synced: bool) -> Option<String> {
    startup_pending(tree, registry_synced).or_else(|| tree.held())
}

/// What `/readyz` says while the tree is missing.
pub fn waiting_message() -> String {
    format!(
        "waiting for the faros workspace tree: workspace {}:{GATE_WORKSPACE} is not Ready yet (faros-hub-reconciler bootstraps it)",
        names::FAROS_PATH
    )
}

/// Watches for the tree's gate workspace to be Ready, opens `gate`, and returns. Errors (kcp not up
/// yet, `root:faros` not created yet) are retried: they are the normal start-up order.
pub async fn watch_tree(factory: ClientFactory, gate: std::sync::Arc<TreeGate>, cancel: CancellationToken) {
    gate.watching();
    let work = async {
        // `root:faros` appears within a second of start: retry quickly, then back off to RETRY.
        let mut delay = FIRST_RETRY;
        loop {
            let client = match factory.cluster(names::FAROS_PATH) {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!(error = %e, "cannot build a kcp client for the workspace tree watch");
                    tokio::time::sleep(RETRY).await;
                    continue;
                }
            };
            let api: Api<Workspace> = Api::all(client);
            match wait_for(api, GATE_WORKSPACE, |w| w.is_some_and(Workspace::is_ready), WATCH_ROUND).await {
                Ok(_) => {
                    gate.open();
                    tracing::info!(workspace = %format!("{}:{GATE_WORKSPACE}", names::FAROS_PATH), "faros workspace tree is bootstrapped");
                    return;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "faros workspace tree not ready yet");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(RETRY);
                }
            }
        }
    };
    tokio::select! {
        () = work => {}
        () = cancel.cancelled() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn startup_is_pending_until_tree_and_catalog_are_done() {
        let gate = TreeGate::default();
        assert_eq!(startup_pending(&gate, false), None, "no watch: nothing held back");
        gate.watching();
        for synced in [false, true] {
            assert!(startup_pending(&gate, synced).unwrap().contains("root:faros:tenants"));
        }
        gate.open();
        assert!(startup_pending(&gate, false).unwrap().contains("catalog"));
        assert_eq!(startup_pending(&gate, true), None);
    }

    #[test]
    fn a_hold_keeps_tenant_routes_back_but_not_heartbeats() {
        let gate = TreeGate::default();
        gate.hold("starting: faros dev is creating its demo tenant");
        // Start-up first: what the hub itself waits for is named before the embedder's hold.
        gate.watching();
        assert!(tenant_pending(&gate, true).unwrap().contains("root:faros:tenants"));
        gate.open();
        assert!(tenant_pending(&gate, false).unwrap().contains("catalog"));
        // Served: heartbeats go through ([`startup_pending`] is done), tenant routes are held.
        assert_eq!(startup_pending(&gate, true), None);
        assert_eq!(
            tenant_pending(&gate, true).as_deref(),
            Some("starting: faros dev is creating its demo tenant")
        );
        gate.hold("starting: faros dev waits for quickstart");
        assert_eq!(
            tenant_pending(&gate, true).as_deref(),
            Some("starting: faros dev waits for quickstart")
        );
        gate.release();
        assert_eq!(tenant_pending(&gate, true), None);
        // Without a tree watch (a hub composed without its loops), a hold still holds.
        let unwatched = TreeGate::default();
        unwatched.hold("x");
        assert_eq!(tenant_pending(&unwatched, false).as_deref(), Some("x"));
    }

    #[test]
    fn gate_moves_from_unwatched_through_waiting_to_ready_and_stays() {
        let gate = TreeGate::default();
        assert_eq!(gate.state(), TreeState::Unwatched);
        gate.watching();
        assert_eq!(gate.state(), TreeState::Waiting);
        gate.open();
        assert_eq!(gate.state(), TreeState::Ready);
        // A restarted watch never closes an open gate.
        gate.watching();
        assert_eq!(gate.state(), TreeState::Ready);
    }
}
