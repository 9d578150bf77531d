//! Deleting a workspace: its logical cluster goes with it, content first (nested workspaces
//! recursively), then the finalizer `core.kcp.io/logicalcluster` lets the Workspace go.

use serde_json::{Value, json};

use faros_core::kcp::{ANNOTATION_WORKSPACE_CLUSTER, FINALIZER_LOGICALCLUSTER};

use crate::controllers::landed;
use crate::kcp::clusters::{LOGICAL_CLUSTER_GROUP, LOGICAL_CLUSTER_NAME, LOGICAL_CLUSTER_RESOURCE};
use crate::state::ServerState;
use crate::store::{ObjectKey, WriteOp};

/// Passes over a cluster's content before giving up on objects that keep reappearing.
const MAX_ROUNDS: usize = 16;

/// The logical cluster a Workspace object points at, if it was scheduled.
pub fn cluster_of_workspace(ws: &Value) -> Option<String> {
    ws.pointer("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION_WORKSPACE_CLUSTER))
        .or_else(|| ws.pointer("/spec/cluster"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(String::from)
}

/// Removes every object of `cluster` (children's clusters first) and forgets the cluster's
/// resources and RBAC. Finalizers inside are not waited for: the whole logical cluster goes.
pub async fn delete_cluster(state: &ServerState, cluster: &str) {
    if cluster == "root" || cluster.is_empty() {
        return;
    }
    // The LogicalCluster first: the path stops resolving, so nobody adds content meanwhile.
    let lc = ObjectKey::new(
        LOGICAL_CLUSTER_GROUP,
        LOGICAL_CLUSTER_RESOURCE,
        cluster,
        "",
        LOGICAL_CLUSTER_NAME,
    );
    if matches!(state.store.get(&lc), Ok(Some(_))) {
        purge(state, lc).await;
    }
    for _ in 0..MAX_ROUNDS {
        let keys = match state.store.scan_cluster(cluster) {
            Ok(keys) => keys,
            Err(e) => {
                tracing::warn!(error = %e, cluster, "cannot list logical cluster content for deletion");
                break;
            }
        };
        if keys.is_empty() {
            break;
        }
        for key in &keys {
            if key.group == "tenancy.kcp.io" && key.resource == "workspaces" {
                let child = state
                    .store
                    .get(key)
                    .ok()
                    .flatten()
                    .and_then(|ws| cluster_of_workspace(&ws));
                if let Some(child) = child {
                    Box::pin(delete_cluster(state, &child)).await;
                }
            }
        }
        // APIBindings last: watchers of an APIExport's virtual workspace see objects only while
        // their cluster binds the export, and must see these objects' deletions (kcp delivers them).
        let (bindings, content): (Vec<_>, Vec<_>) = keys
            .into_iter()
            .partition(|k| k.group == "apis.kcp.io" && k.resource == "apibindings");
        for key in content.into_iter().chain(bindings) {
            purge(state, key).await;
        }
    }
    state.registry.set_cluster_resources(cluster, Vec::new());
    state
        .rbac
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .remove_cluster(cluster);
    state
        .clusters
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .remove(cluster);
}

/// Finishes the deletion of a Workspace marked for deletion. Returns false when a write lost a race.
pub async fn finalize(state: &ServerState, key: &ObjectKey, ws: &Value) -> bool {
    let finalizers = crate::objects::finalizers(ws);
    if !finalizers.iter().any(|f| f == FINALIZER_LOGICALCLUSTER) {
        return true;
    }
    if let Some(cluster) = cluster_of_workspace(ws) {
        delete_cluster(state, &cluster).await;
    }
    // Re-read: the object may have changed while the content went.
    let Ok(Some(current)) = state.store.get(key) else {
        return true;
    };
    let rest: Vec<String> = crate::objects::finalizers(&current)
        .into_iter()
        .filter(|f| f != FINALIZER_LOGICALCLUSTER)
        .collect();
    // The Workspace goes with its last finalizer (the write pipeline removes it).
    let mut updated = current.clone();
    crate::objects::meta_mut(&mut updated).insert("finalizers".into(), json!(rest));
    let client = crate::client::Client::system(state);
    landed(client.update(&key.group, &key.resource, &current, updated).await).is_some()
}

/// Drops one object of a logical cluster being deleted from storage, bypassing the write pipeline:
/// this is the removal of the cluster itself, not a write to it — no finalizer, admission or schema
/// applies to content whose logical cluster is gone (kcp removes it the same way). The commit hook
/// still runs, so watchers see the deletions and the indexes forget the objects.
async fn purge(state: &ServerState, key: ObjectKey) {
    match state
        .store
        .write(vec![WriteOp::Delete { key, expected_rv: None }])
        .await
    {
        Ok(events) => state.committed(&events),
        Err(e) => tracing::debug!(error = %e, "logical cluster content already gone"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_of_a_workspace() {
        let cases = [
            (
                json!({"metadata": {"annotations": {"internal.tenancy.kcp.io/cluster": "abc"}}}),
                Some("abc"),
            ),
            (json!({"metadata": {}, "spec": {"cluster": "def"}}), Some("def")),
            (json!({"metadata": {}, "spec": {"cluster": ""}}), None),
            (json!({"metadata": {}, "spec": {}}), None),
        ];
        for (ws, want) in cases {
            assert_eq!(cluster_of_workspace(&ws).as_deref(), want, "{ws}");
        }
    }
}
