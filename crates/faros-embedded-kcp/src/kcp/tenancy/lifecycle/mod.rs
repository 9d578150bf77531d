//! The workspace lifecycle controller: Scheduling → Initializing → Ready, and deletion.
//!
//! Each workspace needing work gets one worker future that advances it a step at a time, re-reading
//! the stored object before every step, so a restart simply resumes from whatever was committed.
//! Workers run inside the controller's own task (no detached spawns): aborting the controller stops
//! them all, and nothing outlives the server's store.
//!
//! Steps (kcp's `workspace_reconcile_{metadata,scheduling,phase}.go` and the initializers):
//! 1. no phase → `Scheduling` (label `tenancy.kcp.io/phase`);
//! 2. pick the logical cluster name: annotations `internal.tenancy.kcp.io/cluster`, shard
//!    annotations, finalizer `core.kcp.io/logicalcluster`;
//! 3. the new cluster's default objects, the owner's `workspace-admin` binding, and its
//!    LogicalCluster `cluster` in phase `Initializing` with the type chain's initializers;
//! 4. Workspace `spec.cluster`, `spec.URL`, `WorkspaceScheduled`, phase `Initializing`;
//! 5. built-in initializers (`root:universal`: namespaces `default` and `kube-system`;
//!    `system:apibindings`: default APIBindings, made as the recorded creator and done once each
//!    reports `InitialBindingCompleted`); others are left to whoever owns them (they remove
//!    themselves from the LogicalCluster's `status.initializers`);
//! 6. LogicalCluster `Ready`, then Workspace `Ready` with `WorkspaceInitialized` (both keep only the
//!    creator's user name in their owner annotation from then on).
//!
//! Which step a workspace takes is decided by `plan` (IO-free, tested as tables); `schedule` and
//! `initialize` run the steps of their phase, `create` makes a new cluster's objects; `maintain`
//! keeps the default bindings of `Maintain` types following their exports after initialization. This module
//! holds the event loop and the workers. Everything is written through the in-process client.

mod create;
mod initialize;
pub(super) mod maintain;
mod plan;
mod schedule;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::{FuturesUnordered, SelectAll};
use serde_json::{Value, json};

use super::status::{Cond, go_list, set_condition, set_phase};
use super::types::{self, TypeInfo};
use super::{bootstrap, deletion, workspace_types};
use crate::client::landed;
use crate::clusters::{LOGICAL_CLUSTER_GROUP, LOGICAL_CLUSTER_NAME, LOGICAL_CLUSTER_RESOURCE};
use crate::state::ServerState;
use crate::store::{Event, EventType, ObjectKey, WatchFilter};

const WS_GROUP: &str = "tenancy.kcp.io";
const WS_RESOURCE: &str = "workspaces";
const SHARD: &str = "root";

use crate::objects::meta;
use initialize::initialize;
use plan::{PhaseStep, needs_work};
use schedule::schedule;

/// What a worker does after a step.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// Take the next step right away.
    Now,
    /// Take the next step after the phase delay (the state just written stays visible that long).
    Later,
    /// Nothing to do until something changes (an event marks the workspace dirty again).
    Idle,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct WsKey {
    cluster: String,
    name: String,
}

impl WsKey {
    fn object_key(&self) -> ObjectKey {
        ObjectKey::new(WS_GROUP, WS_RESOURCE, self.cluster.as_str(), "", self.name.as_str())
    }
}

struct Controller {
    state: Arc<ServerState>,
    /// Workspaces with a worker, and whether something changed since its last read.
    running: Mutex<HashMap<WsKey, bool>>,
    /// Logical cluster name → the Workspace that owns it (events inside a cluster wake its owner).
    owners: Mutex<HashMap<String, WsKey>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Controller {
    /// Marks a workspace dirty; true when a new worker must be started for it.
    fn kick(&self, key: &WsKey) -> bool {
        let mut running = lock(&self.running);
        match running.get_mut(key) {
            Some(dirty) => {
                *dirty = true;
                false
            }
            None => {
                running.insert(key.clone(), false);
                true
            }
        }
    }

    fn observe(&self, event: &Event) -> Option<WsKey> {
        let key = &event.key;
        if key.group == WS_GROUP && key.resource == WS_RESOURCE {
            let ws_key = WsKey {
                cluster: key.cluster.clone(),
                name: key.name.clone(),
            };
            if let Some(cluster) = deletion::cluster_of_workspace(&event.object) {
                let mut owners = lock(&self.owners);
                if event.event_type == EventType::Deleted {
                    owners.remove(&cluster);
                } else {
                    owners.insert(cluster, ws_key.clone());
                }
            }
            return (event.event_type != EventType::Deleted).then_some(ws_key);
        }
        // A LogicalCluster or APIBinding changed inside a workspace: its owner may move on.
        lock(&self.owners).get(&key.cluster).cloned()
    }

    async fn drive(self: Arc<Self>, key: WsKey) {
        loop {
            if let Some(dirty) = lock(&self.running).get_mut(&key) {
                *dirty = false;
            }
            match step(&self.state, &key).await {
                // Yield so one busy workspace cannot starve the rest of a single-threaded runtime.
                Next::Now => tokio::task::yield_now().await,
                Next::Later => {
                    if !self.state.phase_delay.is_zero() {
                        tokio::time::sleep(self.state.phase_delay).await;
                    } else {
                        tokio::task::yield_now().await;
                    }
                }
                Next::Idle => {
                    let mut running = lock(&self.running);
                    if running.get(&key).copied().unwrap_or(false) {
                        continue;
                    }
                    running.remove(&key);
                    return;
                }
            }
        }
    }
}

fn filter(group: &str, resource: &str) -> WatchFilter {
    WatchFilter {
        group: group.into(),
        resource: resource.into(),
        cluster: None,
        namespace: None,
    }
}

/// Runs the lifecycle controller until aborted.
pub async fn run(state: Arc<ServerState>) {
    bootstrap::ensure_builtins(&state).await;
    let ctl = Arc::new(Controller {
        state: state.clone(),
        running: Mutex::new(HashMap::new()),
        owners: Mutex::new(HashMap::new()),
    });
    let mut workers = FuturesUnordered::new();
    loop {
        // List, then watch from the RV the list saw; events in between are replayed, which is harmless.
        let from = state.store.current_rv();
        let mut streams = SelectAll::new();
        let mut ok = true;
        for (g, r) in [
            (WS_GROUP, WS_RESOURCE),
            (LOGICAL_CLUSTER_GROUP, LOGICAL_CLUSTER_RESOURCE),
            ("apis.kcp.io", "apibindings"),
            (WS_GROUP, workspace_types::TYPES),
        ] {
            match state.store.watch(from, filter(g, r)) {
                Ok(s) => streams.push(s),
                Err(e) => {
                    tracing::warn!(error = %e, "workspace controller cannot watch");
                    ok = false;
                }
            }
        }
        if !ok {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        for ws in state.list_all(WS_GROUP, WS_RESOURCE, None, None) {
            let key = meta::key_of(WS_GROUP, WS_RESOURCE, &ws);
            let ws_key = WsKey {
                cluster: key.cluster,
                name: key.name,
            };
            if let Some(cluster) = deletion::cluster_of_workspace(&ws) {
                lock(&ctl.owners).insert(cluster, ws_key.clone());
            }
            if needs_work(&ws) && ctl.kick(&ws_key) {
                workers.push(ctl.clone().drive(ws_key));
            }
        }
        for t in state.list_all(WS_GROUP, workspace_types::TYPES, None, None) {
            mark_type_ready(&state, &t).await;
        }
        loop {
            tokio::select! {
                event = streams.next() => match event {
                    Some(Ok(event)) => {
                        if event.key.resource == workspace_types::TYPES {
                            if event.event_type != EventType::Deleted {
                                mark_type_ready(&state, &event.object).await;
                            }
                            continue;
                        }
                        if let Some(key) = ctl.observe(&event)
                            && ctl.kick(&key)
                        {
                            workers.push(ctl.clone().drive(key));
                        }
                    }
                    // History overrun or end: list again.
                    _ => break,
                },
                Some(()) = workers.next(), if !workers.is_empty() => {}
            }
        }
    }
}

/// kcp's WorkspaceType controller reports every type Ready (there are no virtual workspace URLs to
/// publish here, as the initializing workspaces view is not served).
async fn mark_type_ready(state: &ServerState, obj: &Value) {
    let ready = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
    if ready {
        return;
    }
    let mut updated = obj.clone();
    set_condition(
        &mut updated,
        &Cond {
            type_: "Ready",
            status: true,
            reason: "",
            message: "",
            severity: "",
        },
        &crate::objects::now_rfc3339(),
    );
    landed(
        crate::client::Client::system(state)
            .update(WS_GROUP, workspace_types::TYPES, obj, updated)
            .await,
    );
}

async fn step(state: &ServerState, key: &WsKey) -> Next {
    let object_key = key.object_key();
    let Ok(Some(ws)) = state.store.get(&object_key) else {
        return Next::Idle;
    };
    match plan::phase_step(&ws) {
        PhaseStep::Finalize => {
            if deletion::finalize(state, &object_key, &ws).await {
                Next::Idle
            } else {
                // Content inside still finalizes (nothing there marks this workspace dirty): look again.
                Next::Later
            }
        }
        PhaseStep::EnterScheduling => {
            let mut updated = ws.clone();
            set_phase(&mut updated, "Scheduling");
            update(state, &object_key, &ws, updated, Next::Later).await
        }
        PhaseStep::Schedule => schedule(state, key, &ws).await,
        PhaseStep::Initialize => initialize(state, key, &ws).await,
        PhaseStep::ReadyMetadata => {
            let mut updated = ws.clone();
            set_phase(&mut updated, "Ready");
            trim_owner(&mut updated);
            update(state, &object_key, &ws, updated, Next::Idle).await
        }
        PhaseStep::Idle => Next::Idle,
    }
}

/// Commits `updated` as the successor of `ws`; a lost race waits for the change's event.
async fn update(state: &ServerState, key: &ObjectKey, ws: &Value, updated: Value, then: Next) -> Next {
    if &updated == ws {
        // Nothing to change means nothing to wait for either: avoid spinning on a no-op.
        return Next::Idle;
    }
    let client = crate::client::Client::system(state);
    match landed(client.update(&key.group, &key.resource, ws, updated).await) {
        Some(_) => then,
        None => Next::Idle,
    }
}

/// kcp's metadata reconcilers on a Ready Workspace or LogicalCluster: the creator annotation keeps
/// only the user name (see `plan::owner_once_ready`).
fn trim_owner(obj: &mut Value) {
    let Some(value) = meta::annotation(obj, faros_core::kcp::ANNOTATION_OWNER).map(String::from) else {
        return;
    };
    if let Some(ann) = meta::annotations_mut(obj) {
        match plan::owner_once_ready(&value) {
            Some(trimmed) => ann.insert(faros_core::kcp::ANNOTATION_OWNER.into(), json!(trimmed)),
            None => ann.remove(faros_core::kcp::ANNOTATION_OWNER),
        };
    }
}

fn set_annotation(obj: &mut Value, name: &str, value: &str) {
    if let Some(ann) = meta::annotations_mut(obj) {
        ann.insert(name.into(), json!(value));
    }
}

fn workspace_type(state: &ServerState, ws: &Value) -> Option<(TypeInfo, Vec<TypeInfo>)> {
    let path = ws.pointer("/spec/type/path").and_then(Value::as_str)?;
    let name = ws.pointer("/spec/type/name").and_then(Value::as_str)?;
    let get = |p: &str, n: &str| workspace_types::lookup(state, p, n);
    let t = get(path, name)?;
    let aliases = types::aliases(&get, &t).ok()?;
    Some((t, aliases))
}

fn lc_key(cluster: &str) -> ObjectKey {
    ObjectKey::new(
        LOGICAL_CLUSTER_GROUP,
        LOGICAL_CLUSTER_RESOURCE,
        cluster,
        "",
        LOGICAL_CLUSTER_NAME,
    )
}

/// The Workspace mirrors the LogicalCluster's remaining initializers while Initializing.
fn mirror_initializers(ws: &mut Value, inits: &[String], now: &str) {
    if inits.is_empty() {
        if let Some(status) = ws.get_mut("status").and_then(Value::as_object_mut) {
            status.remove("initializers");
        }
        return;
    }
    ws["status"]["initializers"] = json!(inits);
    let message = format!("Initializers still exist: {}", go_list(inits));
    let cond = Cond {
        type_: "WorkspaceInitialized",
        status: false,
        reason: "InitializerExists",
        message: &message,
        severity: "Info",
    };
    set_condition(ws, &cond, now);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initializers_are_mirrored_with_a_condition() {
        let mut ws = json!({"metadata": {"name": "a"}, "status": {"phase": "Initializing"}});
        mirror_initializers(&mut ws, &["root:universal".into(), "system:apibindings".into()], "t");
        assert_eq!(
            ws["status"]["initializers"],
            json!(["root:universal", "system:apibindings"])
        );
        assert_eq!(
            ws["status"]["conditions"][0]["message"],
            "Initializers still exist: [root:universal system:apibindings]"
        );
        mirror_initializers(&mut ws, &[], "t");
        assert!(ws["status"].get("initializers").is_none());
    }

    #[test]
    fn which_workspaces_need_work() {
        for (ws, want) in [
            (json!({"metadata": {}}), true),
            (json!({"metadata": {}, "status": {"phase": "Initializing"}}), true),
            (
                json!({"metadata": {"labels": {"tenancy.kcp.io/phase": "Ready"}}, "status": {"phase": "Ready"}}),
                false,
            ),
            // Stopped between the status write and the metadata write.
            (json!({"metadata": {}, "status": {"phase": "Ready"}}), true),
            (
                json!({"metadata": {"deletionTimestamp": "x"}, "status": {"phase": "Ready"}}),
                true,
            ),
        ] {
            assert_eq!(needs_work(&ws), want, "{ws}");
        }
    }
}
