//! Phase `Scheduling`: the logical cluster name and shard, then the new cluster's objects and its
//! LogicalCluster, then the Workspace's `spec.cluster`, `spec.URL` and `WorkspaceScheduled`.

use serde_json::{Value, json};

use faros_core::kcp::{
    ANNOTATION_CORE_SHARD, ANNOTATION_LOGICALCLUSTER_TYPE, ANNOTATION_OWNER, ANNOTATION_WORKSPACE_CLUSTER,
    ANNOTATION_WORKSPACE_SHARD, FINALIZER_LOGICALCLUSTER,
};

use super::super::status::{Cond, initializers, set_condition, set_phase};
use super::super::types::{self, TypeInfo};
use super::super::{names, workspace_types};
use super::create::{ensure_default_objects, ensure_workspace_admin};
use super::plan::{self, LogicalClusterState, ScheduleFacts, ScheduleStep};
use super::{Next, SHARD, WS_RESOURCE, WsKey, lc_key, mirror_initializers, set_annotation, update, workspace_type};
use crate::clusters::{LOGICAL_CLUSTER_GROUP, LOGICAL_CLUSTER_NAME, LOGICAL_CLUSTER_RESOURCE, PATH_ANNOTATION};
use crate::objects::meta;
use crate::state::ServerState;
use crate::store::ObjectKey;

pub(super) async fn schedule(state: &ServerState, key: &WsKey, ws: &Value) -> Next {
    let object_key = key.object_key();
    let cluster = meta::annotation(ws, ANNOTATION_WORKSPACE_CLUSTER).map(String::from);
    let parent_path = workspace_types::path_of_cluster(state, &key.cluster);
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
    let url = || async { format!("{}/clusters/{path}", super::super::wait_server_url(state).await) };
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
    let mut finalizers = meta::finalizers(&updated);
    if !finalizers.iter().any(|f| f == FINALIZER_LOGICALCLUSTER) {
        finalizers.push(FINALIZER_LOGICALCLUSTER.into());
    }
    meta::meta_mut(&mut updated).insert("finalizers".into(), json!(finalizers));
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
    let owner = meta::annotation(ws, ANNOTATION_OWNER);
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
    // kcp copies the workspace's required groups onto its logical cluster, where they are enforced.
    if let Some(groups) = meta::annotation(ws, crate::auth::REQUIRED_GROUPS_ANNOTATION) {
        annotations[crate::auth::REQUIRED_GROUPS_ANNOTATION] = json!(groups);
    }
    let mut spec = json!({
        "owner": {"apiVersion": "tenancy.kcp.io/v1alpha1", "resource": WS_RESOURCE, "name": key.name,
                  "cluster": key.cluster, "uid": meta::uid(ws)},
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
