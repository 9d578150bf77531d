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
//! 5. built-in initializers (`root:universal`: namespace `default`; `system:apibindings`: default
//!    APIBindings, done once each reports `InitialBindingCompleted`); others are left to whoever
//!    owns them (they remove themselves from the LogicalCluster's `status.initializers`);
//! 6. LogicalCluster `Ready`, then Workspace `Ready` with `WorkspaceInitialized`.
//!
//! Which step a workspace takes is decided by `plan` (IO-free, tested as tables); this module reads
//! the facts and writes through the in-process client.

mod create;
mod plan;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::{FuturesUnordered, SelectAll};
use serde_json::{Value, json};

use faros_core::kcp::{
    ANNOTATION_CORE_SHARD, ANNOTATION_LOGICALCLUSTER_TYPE, ANNOTATION_OWNER, ANNOTATION_WORKSPACE_CLUSTER,
    ANNOTATION_WORKSPACE_SHARD, FINALIZER_LOGICALCLUSTER,
};

use super::status::{Cond, go_list, initializers, set_condition, set_phase};
use super::types::{self, TypeInfo};
use super::{catalog, deletion, names};
use crate::controllers::{landed, list_all};
use crate::kcp::clusters::{LOGICAL_CLUSTER_GROUP, LOGICAL_CLUSTER_NAME, LOGICAL_CLUSTER_RESOURCE, PATH_ANNOTATION};
use crate::state::ServerState;
use crate::store::{Event, EventType, ObjectKey, WatchFilter};

const WS_GROUP: &str = "tenancy.kcp.io";
const WS_RESOURCE: &str = "workspaces";
const SHARD: &str = "root";

use create::{default_bindings_complete, ensure_default_objects, ensure_workspace_admin};
use plan::{InitializeStep, Initializer, LogicalClusterState, PhaseStep, ScheduleFacts, ScheduleStep, needs_work};

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
                Next::Later => tokio::time::sleep(super::phase_delay()).await,
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
    catalog::ensure_builtins(&state).await;
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
            (WS_GROUP, catalog::TYPES),
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
        for ws in list_all(&state, WS_GROUP, WS_RESOURCE, None, None) {
            let key = crate::controllers::key_of(WS_GROUP, WS_RESOURCE, &ws);
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
        for t in list_all(&state, WS_GROUP, catalog::TYPES, None, None) {
            mark_type_ready(&state, &t).await;
        }
        loop {
            tokio::select! {
                event = streams.next() => match event {
                    Some(Ok(event)) => {
                        if event.key.resource == catalog::TYPES {
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
            .update(WS_GROUP, catalog::TYPES, obj, updated)
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
            deletion::finalize(state, &object_key, &ws).await;
            Next::Idle
        }
        PhaseStep::EnterScheduling => {
            let mut updated = ws.clone();
            set_phase(&mut updated, "Scheduling");
            update(state, &object_key, &ws, updated, Next::Later).await
        }
        PhaseStep::Schedule => schedule(state, key, &ws).await,
        PhaseStep::Initialize => initialize(state, key, &ws).await,
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

fn annotation<'a>(obj: &'a Value, name: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(name))
        .and_then(Value::as_str)
}

fn set_annotation(obj: &mut Value, name: &str, value: &str) {
    let meta = crate::objects::meta_mut(obj);
    let ann = meta.entry("annotations").or_insert_with(|| json!({}));
    if let Some(ann) = ann.as_object_mut() {
        ann.insert(name.into(), json!(value));
    }
}

fn workspace_type(state: &ServerState, ws: &Value) -> Option<(TypeInfo, Vec<TypeInfo>)> {
    let path = ws.pointer("/spec/type/path").and_then(Value::as_str)?;
    let name = ws.pointer("/spec/type/name").and_then(Value::as_str)?;
    let get = |p: &str, n: &str| catalog::lookup(state, p, n);
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

async fn schedule(state: &ServerState, key: &WsKey, ws: &Value) -> Next {
    let object_key = key.object_key();
    let cluster = annotation(ws, ANNOTATION_WORKSPACE_CLUSTER).map(String::from);
    let parent_path = catalog::path_of_cluster(state, &key.cluster);
    let resolved = workspace_type(state, ws);
    let lc_read = cluster.as_deref().map(|c| state.store.get(&lc_key(c)));
    let logical_cluster = match &lc_read {
        None | Some(Ok(None)) => LogicalClusterState::Missing,
        Some(Ok(Some(lc))) if lc.pointer("/status/phase").is_none() => LogicalClusterState::WithoutStatus,
        Some(Ok(Some(_))) => LogicalClusterState::Present,
        Some(Err(_)) => LogicalClusterState::Unreadable,
    };
    let facts = ScheduleFacts {
        cluster_assigned: cluster.is_some(),
        parent_known: parent_path.is_some(),
        type_resolved: resolved.is_some(),
        logical_cluster,
    };
    let step = plan::schedule_step(facts);
    let (Some(cluster), Some(parent_path), Some((t, aliases))) = (cluster, parent_path, resolved) else {
        return match step {
            ScheduleStep::AssignCluster => assign_cluster(state, &object_key, ws).await,
            ScheduleStep::Unschedulable => unschedulable(state, &object_key, ws).await,
            _ => Next::Idle,
        };
    };
    let path = format!("{parent_path}:{}", key.name);
    let url = || async { format!("{}/clusters/{path}", super::wait_server_url(state).await) };
    let lc = match lc_read {
        Some(Ok(Some(lc))) => lc,
        Some(Err(e)) => {
            tracing::warn!(error = %e, cluster, "cannot read LogicalCluster");
            return Next::Idle;
        }
        _ => Value::Null,
    };
    match step {
        ScheduleStep::RepairLogicalClusterStatus => {
            let mut with_status = lc.clone();
            with_status["status"] = lc_status(&url().await, &types::initializers(&aliases));
            update(state, &lc_key(&cluster), &lc, with_status, Next::Now).await
        }
        ScheduleStep::CreateLogicalCluster => {
            create_logical_cluster(state, key, ws, &cluster, &path, &url().await, &t, &aliases).await
        }
        ScheduleStep::MarkScheduled => {
            let mut updated = ws.clone();
            updated["spec"]["cluster"] = json!(cluster);
            updated["spec"]["URL"] = json!(url().await);
            let now = crate::objects::now_rfc3339();
            let cond = Cond {
                type_: "WorkspaceScheduled",
                status: true,
                reason: "",
                message: "",
                severity: "",
            };
            set_condition(&mut updated, &cond, &now);
            set_phase(&mut updated, "Initializing");
            mirror_initializers(&mut updated, &initializers(&lc), &now);
            update(state, &object_key, ws, updated, Next::Later).await
        }
        ScheduleStep::AssignCluster | ScheduleStep::Unschedulable | ScheduleStep::Idle => Next::Idle,
    }
}

/// Picks the logical cluster name (`spec.cluster` if given, else a free random one), the shard
/// annotations and the logical cluster finalizer.
async fn assign_cluster(state: &ServerState, object_key: &ObjectKey, ws: &Value) -> Next {
    let cluster = ws
        .pointer("/spec/cluster")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(String::from)
        .unwrap_or_else(|| unused_cluster_name(state));
    let mut updated = ws.clone();
    set_annotation(&mut updated, ANNOTATION_WORKSPACE_CLUSTER, &cluster);
    set_annotation(&mut updated, ANNOTATION_CORE_SHARD, SHARD);
    set_annotation(&mut updated, ANNOTATION_WORKSPACE_SHARD, &names::shard_hash(SHARD));
    let mut finalizers = crate::objects::finalizers(&updated);
    if !finalizers.iter().any(|f| f == FINALIZER_LOGICALCLUSTER) {
        finalizers.push(FINALIZER_LOGICALCLUSTER.into());
    }
    crate::objects::meta_mut(&mut updated).insert("finalizers".into(), json!(finalizers));
    update(state, object_key, ws, updated, Next::Now).await
}

/// `WorkspaceScheduled=False`: the workspace type does not resolve.
async fn unschedulable(state: &ServerState, object_key: &ObjectKey, ws: &Value) -> Next {
    let mut updated = ws.clone();
    let message = format!(
        "workspace type {}:{} cannot be resolved",
        ws.pointer("/spec/type/path")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        ws.pointer("/spec/type/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    );
    let cond = Cond {
        type_: "WorkspaceScheduled",
        status: false,
        reason: "Unschedulable",
        message: &message,
        severity: "Error",
    };
    set_condition(&mut updated, &cond, &crate::objects::now_rfc3339());
    update(state, object_key, ws, updated, Next::Idle).await
}

fn unused_cluster_name(state: &ServerState) -> String {
    let index = state.clusters.read().unwrap_or_else(|p| p.into_inner());
    loop {
        let name = names::random_cluster_name();
        if index.get(&name).is_none() {
            return name;
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn create_logical_cluster(
    state: &ServerState,
    key: &WsKey,
    ws: &Value,
    cluster: &str,
    path: &str,
    url: &str,
    t: &TypeInfo,
    aliases: &[TypeInfo],
) -> Next {
    ensure_default_objects(state, cluster).await;
    let owner = annotation(ws, ANNOTATION_OWNER);
    if let Some(owner) = owner {
        ensure_workspace_admin(state, cluster, owner).await;
    }
    let inits = types::initializers(aliases);
    let mut annotations = json!({
        PATH_ANNOTATION: path,
        ANNOTATION_LOGICALCLUSTER_TYPE: t.qualified(),
        ANNOTATION_CORE_SHARD: SHARD,
    });
    if let Some(owner) = owner {
        annotations[ANNOTATION_OWNER] = json!(owner);
    }
    let mut spec = json!({
        "owner": {"apiVersion": "tenancy.kcp.io/v1alpha1", "resource": WS_RESOURCE, "name": key.name,
                  "cluster": key.cluster, "uid": ws.pointer("/metadata/uid").cloned().unwrap_or(Value::Null)},
        "initializers": inits,
    });
    if let Some(created_by) = owner.and_then(|o| serde_json::from_str::<Value>(o).ok()) {
        spec["createdBy"] = created_by;
    }
    let lc = json!({
        "apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster",
        "metadata": {"name": LOGICAL_CLUSTER_NAME, "annotations": annotations},
        "spec": spec,
        "status": lc_status(url, &inits),
    });
    let status = lc["status"].clone();
    match crate::client::Client::system(state)
        .create(cluster, LOGICAL_CLUSTER_GROUP, LOGICAL_CLUSTER_RESOURCE, lc)
        .await
    {
        // A create drops the status (it is a subresource); the scheduler sets it right after.
        Ok(created) => {
            let mut with_status = created.clone();
            with_status["status"] = status;
            update(state, &lc_key(cluster), &created, with_status, Next::Now).await
        }
        Err(e) if e.code == 409 => Next::Now,
        Err(e) => {
            tracing::warn!(error = %e, cluster, "cannot create LogicalCluster");
            Next::Idle
        }
    }
}

/// A new LogicalCluster's status: Initializing, with its initializers still to run.
fn lc_status(url: &str, inits: &[String]) -> Value {
    json!({"URL": url, "phase": "Initializing", "initializers": inits})
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

async fn initialize(state: &ServerState, key: &WsKey, ws: &Value) -> Next {
    let object_key = key.object_key();
    let Some(cluster) = deletion::cluster_of_workspace(ws) else {
        return Next::Idle;
    };
    let Ok(Some(lc)) = state.store.get(&lc_key(&cluster)) else {
        return Next::Idle;
    };
    let now = crate::objects::now_rfc3339();
    let inits = initializers(&lc);
    let lc_phase = lc.pointer("/status/phase").and_then(Value::as_str).unwrap_or_default();
    let mut mirrored = ws.clone();
    mirror_initializers(&mut mirrored, &inits, &now);
    match plan::initialize_step(lc_phase, &inits, mirrored != *ws) {
        InitializeStep::WorkspaceReady => {
            let mut updated = ws.clone();
            mirror_initializers(&mut updated, &[], &now);
            let cond = Cond {
                type_: "WorkspaceInitialized",
                status: true,
                reason: "",
                message: "",
                severity: "",
            };
            set_condition(&mut updated, &cond, &now);
            set_phase(&mut updated, "Ready");
            update(state, &object_key, ws, updated, Next::Idle).await
        }
        InitializeStep::MirrorInitializers => update(state, &object_key, ws, mirrored, Next::Now).await,
        InitializeStep::LogicalClusterReady => {
            let mut ready = lc.clone();
            if !ready.get("status").is_some_and(Value::is_object) {
                ready["status"] = json!({});
            }
            ready["status"]["phase"] = json!("Ready");
            if let Some(status) = ready["status"].as_object_mut() {
                status.remove("initializers");
            }
            update(state, &lc_key(&cluster), &lc, ready, Next::Now).await
        }
        InitializeStep::RunInitializers(inits) => run_initializers(state, ws, &cluster, &lc, &inits).await,
    }
}

/// Runs the first built-in initializer that completes and removes it from the LogicalCluster.
async fn run_initializers(state: &ServerState, ws: &Value, cluster: &str, lc: &Value, inits: &[String]) -> Next {
    let aliases = workspace_type(state, ws).map(|(_, a)| a).unwrap_or_default();
    for init in inits {
        let done = match plan::initializer(init) {
            Initializer::Universal => {
                let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"},
                    "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
                match crate::client::Client::system(state)
                    .create(cluster, "", "namespaces", ns)
                    .await
                {
                    Ok(_) => true,
                    Err(e) => e.code == 409,
                }
            }
            Initializer::DefaultBindings => default_bindings_complete(state, cluster, &aliases).await,
            Initializer::Foreign => false,
        };
        if done {
            let mut updated = lc.clone();
            let rest: Vec<&String> = inits.iter().filter(|i| *i != init).collect();
            updated["status"]["initializers"] = json!(rest);
            return update(state, &lc_key(cluster), lc, updated, Next::Now).await;
        }
    }
    Next::Idle
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
            (json!({"metadata": {}, "status": {"phase": "Ready"}}), false),
            (
                json!({"metadata": {"deletionTimestamp": "x"}, "status": {"phase": "Ready"}}),
                true,
            ),
        ] {
            assert_eq!(needs_work(&ws), want, "{ws}");
        }
    }
}
