//! The provider workspaces (`root:faros:providers:*`) as one watch for the whole controller, so a
//! reconcile never holds a concurrency slot while kcp readies a workspace: a reconcile that finds
//! its workspace not Ready yet parks the Provider here and ends; the watch queues it again when the
//! workspace turns Ready (or disappears). With a hundred Providers at once and fewer slots, waiting
//! in the slot made the later Providers queue behind kcp's work on the earlier ones.
//!
//! What it must not do: be the only way a Provider gets going again. A parked reconcile also asks
//! for a requeue after the workspace timeout, which then waits for the workspace in the reconcile
//! and reports it when it never turns Ready, as before; nor trust a workspace it has not seen Ready,
//! of the provider type, and not being deleted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use faros_core::kcp::Workspace;
use faros_core::names;
use faros_core::provider::Provider;
use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, ResourceExt};
use tokio_util::sync::CancellationToken;

use super::context::{Context, ProviderKey};

/// What the watch has seen, and who waits for what.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// The provider workspaces by name, as last seen.
    seen: HashMap<String, Workspace>,
    /// Parked Providers by the name of the workspace they wait for.
    waiting: HashMap<String, ProviderKey>,
}

/// IO-free: whether a reconcile may take `ws` as its provider workspace without asking kcp.
pub(crate) fn usable(ws: &Workspace) -> bool {
    ws.is_ready()
        && ws.metadata.deletion_timestamp.is_none()
        && ws.spec.cluster.as_deref().is_some_and(|c| !c.is_empty())
        && ws
            .spec
            .type_
            .as_ref()
            .is_some_and(|t| t.name == names::WORKSPACE_TYPE_PROVIDER)
}

impl State {
    /// IO-free: the workspace `name` if it is usable; otherwise parks `key` on it (until
    /// [`Self::observe`] sees it change to usable, or go away) and returns `None`.
    pub(crate) fn take_or_park(&mut self, name: &str, key: &ProviderKey) -> Option<Workspace> {
        match self.seen.get(name) {
            Some(ws) if usable(ws) => {
                self.waiting.remove(name);
                Some(ws.clone())
            }
            _ => {
                self.waiting.insert(name.to_string(), key.clone());
                None
            }
        }
    }

    /// IO-free: the workspace `name` if it is usable.
    pub(crate) fn usable(&self, name: &str) -> Option<Workspace> {
        self.seen.get(name).filter(|ws| usable(ws)).cloned()
    }

    /// IO-free: records the workspace `name` as `ws` (`None`: gone) and returns the Provider to
    /// queue: the one parked on it, once it is usable or gone.
    pub(crate) fn observe(&mut self, name: &str, ws: Option<Workspace>) -> Option<ProviderKey> {
        let wake = match &ws {
            Some(ws) => usable(ws),
            None => true,
        };
        match ws {
            Some(ws) => self.seen.insert(name.to_string(), ws),
            None => self.seen.remove(name),
        };
        if wake { self.waiting.remove(name) } else { None }
    }

    /// IO-free: after a relist, forgets the workspaces it did not list (gone meanwhile) and returns
    /// every parked Provider whose workspace is usable or gone.
    pub(crate) fn relisted(&mut self, listed: &[String]) -> Vec<ProviderKey> {
        self.seen.retain(|name, _| listed.contains(name));
        let wake: Vec<String> = self
            .waiting
            .keys()
            .filter(|name| self.seen.get(*name).is_none_or(usable))
            .cloned()
            .collect();
        let mut keys: Vec<ProviderKey> = wake.iter().filter_map(|n| self.waiting.remove(n)).collect();
        keys.sort();
        keys
    }
}

/// The shared state; cheap to clone.
#[derive(Clone, Debug, Default)]
pub(crate) struct ProviderWorkspaces(Arc<Mutex<State>>);

impl ProviderWorkspaces {
    /// Runs `f` on the state (briefly: the watch waits for it).
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        // Plain bookkeeping: still usable after a panic elsewhere.
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Watches the provider workspaces until `cancel` and queues parked Providers through `queue`.
pub(super) async fn watch(ctx: Arc<Context>, queue: faros_runtime::Handle<Provider>, cancel: CancellationToken) {
    let api: Api<Workspace> = match ctx.factory.cluster(names::PROVIDERS_PATH) {
        Ok(client) => Api::all(client),
        Err(error) => {
            // Parked Providers still come back with their requeue after the workspace timeout.
            tracing::error!(%error, "cannot watch the provider workspaces");
            return;
        }
    };
    let mut events = std::pin::pin!(watcher::watcher(api, watcher::Config::default()).default_backoff());
    let mut listed = Vec::new();
    loop {
        let event = tokio::select! {
            _ = cancel.cancelled() => return,
            e = events.next() => e,
        };
        let Some(event) = event else { return };
        let wake: Vec<ProviderKey> = match event {
            Ok(Event::Init) => {
                listed.clear();
                Vec::new()
            }
            Ok(Event::InitApply(ws)) => {
                let name = ws.name_any();
                listed.push(name.clone());
                ctx.workspaces
                    .with(|s| s.observe(&name, Some(ws)))
                    .into_iter()
                    .collect()
            }
            Ok(Event::InitDone) => ctx.workspaces.with(|s| s.relisted(&listed)),
            Ok(Event::Apply(ws)) => {
                let name = ws.name_any();
                ctx.workspaces
                    .with(|s| s.observe(&name, Some(ws)))
                    .into_iter()
                    .collect()
            }
            Ok(Event::Delete(ws)) => ctx
                .workspaces
                .with(|s| s.observe(&ws.name_any(), None))
                .into_iter()
                .collect(),
            Err(error) => {
                tracing::debug!(%error, "provider workspaces watch failed; the watcher retries");
                Vec::new()
            }
        };
        for key in wake {
            tracing::debug!(%key, "provider workspace Ready; queueing its Provider");
            queue.enqueue(key);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use faros_core::kcp::{LogicalClusterPhase, WorkspaceSpec, WorkspaceStatus, WorkspaceTypeReference};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn key(name: &str) -> ProviderKey {
        ProviderKey {
            cluster: "c".into(),
            namespace: None,
            name: name.into(),
        }
    }

    fn ws(ready: bool, type_: &str, cluster: Option<&str>, deleting: bool) -> Workspace {
        let mut ws = Workspace::new(
            "q",
            WorkspaceSpec {
                type_: Some(WorkspaceTypeReference {
                    name: type_.into(),
                    path: Some("root:faros".into()),
                }),
                cluster: cluster.map(str::to_string),
                ..Default::default()
            },
        );
        ws.status = Some(WorkspaceStatus {
            phase: Some(if ready {
                LogicalClusterPhase::Ready
            } else {
                LogicalClusterPhase::Initializing
            }),
            ..Default::default()
        });
        if deleting {
            ws.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        }
        ws
    }

    #[test]
    fn usable_table() {
        for (case, ws, want) in [
            (
                "ready provider workspace",
                ws(true, "provider", Some("abc"), false),
                true,
            ),
            ("initializing", ws(false, "provider", Some("abc"), false), false),
            ("another type", ws(true, "universal", Some("abc"), false), false),
            ("no cluster", ws(true, "provider", None, false), false),
            ("empty cluster", ws(true, "provider", Some(""), false), false),
            ("being deleted", ws(true, "provider", Some("abc"), true), false),
        ] {
            assert_eq!(usable(&ws), want, "{case}");
        }
    }

    /// (case, what the watch saw before, what it sees after parking, the Provider it queues)
    type Case = (&'static str, Option<Workspace>, Option<Workspace>, Option<ProviderKey>);

    #[test]
    fn park_then_observe_table() {
        let ready = || Some(ws(true, "provider", Some("abc"), false));
        let pending = || Some(ws(false, "provider", Some("abc"), false));
        let cases: Vec<Case> = vec![
            ("unseen, then Ready: queued", None, ready(), Some(key("q"))),
            ("initializing, then Ready: queued", pending(), ready(), Some(key("q"))),
            ("unseen, then initializing: still parked", None, pending(), None),
            ("initializing, then gone: queued", pending(), None, Some(key("q"))),
        ];
        for (case, before, after, want) in cases {
            let mut state = State::default();
            if let Some(before) = before {
                assert_eq!(state.observe("q", Some(before)), None, "{case}: nobody parked yet");
            }
            assert!(state.take_or_park("q", &key("q")).is_none(), "{case}: parks");
            let woken = state.observe("q", after);
            assert_eq!(woken, want, "{case}");
            // Queued once: a later Ready wakes only a Provider still parked.
            let again = if woken.is_some() { None } else { Some(key("q")) };
            assert_eq!(state.observe("q", ready()), again, "{case}: later Ready");
        }
    }

    #[test]
    fn a_ready_workspace_is_taken_without_parking() {
        let mut state = State::default();
        state.observe("q", Some(ws(true, "provider", Some("abc"), false)));
        assert!(state.take_or_park("q", &key("q")).is_some());
        assert!(state.usable("q").is_some());
        assert!(state.usable("other").is_none());
        assert_eq!(state.observe("q", None), None, "nobody parked");
    }

    #[test]
    fn a_relist_wakes_the_parked_whose_workspace_is_ready_or_gone() {
        let mut state = State::default();
        state.observe("ready", Some(ws(false, "provider", Some("a"), false)));
        state.observe("pending", Some(ws(false, "provider", Some("b"), false)));
        state.observe("gone", Some(ws(false, "provider", Some("c"), false)));
        for name in ["ready", "pending", "gone"] {
            assert!(state.take_or_park(name, &key(name)).is_none());
        }
        // The relist: `ready` turned Ready, `gone` was not listed.
        state
            .seen
            .insert("ready".into(), ws(true, "provider", Some("a"), false));
        let woken = state.relisted(&["ready".to_string(), "pending".to_string()]);
        assert_eq!(woken, vec![key("gone"), key("ready")]);
        assert!(!state.seen.contains_key("gone"));
        assert_eq!(state.relisted(&["ready".to_string(), "pending".to_string()]), vec![]);
    }
}
