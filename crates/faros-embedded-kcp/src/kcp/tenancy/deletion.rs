//! Deleting a workspace: its logical cluster goes with it, content first (nested workspaces
//! recursively), then the finalizer `core.kcp.io/logicalcluster` lets the Workspace go. As in kcp,
//! content with finalizers of its own is deleted and waited for first: meanwhile the Workspace
//! reports `WorkspaceContentDeleted=False` (`SomeResourcesRemain`) naming the finalizers.

use serde_json::{Value, json};

use faros_core::kcp::{ANNOTATION_WORKSPACE_CLUSTER, FINALIZER_LOGICALCLUSTER};

use crate::client::landed;
use crate::clusters::{LOGICAL_CLUSTER_GROUP, LOGICAL_CLUSTER_NAME, LOGICAL_CLUSTER_RESOURCE};
use crate::objects::meta;
use crate::state::ServerState;
use crate::store::{ObjectKey, WriteOp};

/// How often a deleted workspace looks again at content that is still finalizing.
const CONTENT_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// Passes over a cluster's content before giving up on objects that keep reappearing.
const MAX_ROUNDS: usize = 16;

/// The logical cluster a Workspace object points at, if it was scheduled.
pub fn cluster_of_workspace(ws: &Value) -> Option<String> {
    meta::annotation(ws, ANNOTATION_WORKSPACE_CLUSTER)
        .or_else(|| ws.pointer("/spec/cluster").and_then(Value::as_str))
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

/// Objects kcp's own controllers finalize, which go with their logical cluster.
fn system_finalized(key: &ObjectKey) -> bool {
    matches!(
        (key.group.as_str(), key.resource.as_str()),
        ("core.kcp.io", "logicalclusters") | ("apis.kcp.io", "apibindings") | ("tenancy.kcp.io", "workspaces")
    )
}

/// kcp's message for content still finalizing: `<finalizer> in <n> resource instances`, sorted.
pub fn remaining_message(counts: &std::collections::BTreeMap<String, usize>) -> String {
    let parts: Vec<String> = counts
        .iter()
        .map(|(f, n)| format!("{f} in {n} resource instances"))
        .collect();
    format!(
        "Some content in the logical cluster has finalizers remaining: {}",
        parts.join(", ")
    )
}

/// Deletes the content of `cluster` that carries finalizers of its own (through the write
/// pipeline, so it is marked, not removed) and counts what is still waiting, per finalizer.
async fn finalizing_content(state: &ServerState, cluster: &str) -> std::collections::BTreeMap<String, usize> {
    let mut counts = std::collections::BTreeMap::new();
    let Ok(keys) = state.store.scan_cluster(cluster) else {
        return counts;
    };
    let client = crate::client::Client::system(state);
    for key in keys.iter().filter(|k| !system_finalized(k)) {
        let Ok(Some(obj)) = state.store.get(key) else { continue };
        let finalizers = meta::finalizers(&obj);
        if finalizers.is_empty() {
            continue;
        }
        if !meta::is_deleting(&obj) {
            landed(client.delete(&key.group, &key.resource, &obj, Some("Background")).await);
        }
        for f in finalizers {
            *counts.entry(f).or_insert(0) += 1;
        }
    }
    counts
}

/// Finishes the deletion of a Workspace marked for deletion. Returns false while content inside
/// still finalizes (the caller looks again later) or when a write lost a race.
pub async fn finalize(state: &ServerState, key: &ObjectKey, ws: &Value) -> bool {
    let finalizers = meta::finalizers(ws);
    if !finalizers.iter().any(|f| f == FINALIZER_LOGICALCLUSTER) {
        return true;
    }
    if let Some(cluster) = cluster_of_workspace(ws) {
        let remaining = finalizing_content(state, &cluster).await;
        if !remaining.is_empty() {
            let message = remaining_message(&remaining);
            let mut updated = ws.clone();
            let cond = super::status::Cond {
                type_: "WorkspaceContentDeleted",
                status: false,
                reason: "SomeResourcesRemain",
                message: &message,
                severity: "Info",
            };
            super::status::set_condition(&mut updated, &cond, &crate::objects::now_rfc3339());
            if updated != *ws {
                let client = crate::client::Client::system(state);
                landed(client.update_status(&key.group, &key.resource, ws, updated).await);
            }
            // Nothing inside marks this workspace dirty when a finalizer goes: poll, at a bounded rate.
            tokio::time::sleep(CONTENT_POLL).await;
            return false;
        }
        delete_cluster(state, &cluster).await;
    }
    // Re-read: the object may have changed while the content went.
    let Ok(Some(current)) = state.store.get(key) else {
        return true;
    };
    let rest: Vec<String> = meta::finalizers(&current)
        .into_iter()
        .filter(|f| f != FINALIZER_LOGICALCLUSTER)
        .collect();
    // The Workspace goes with its last finalizer (the write pipeline removes it).
    let mut updated = current.clone();
    meta::meta_mut(&mut updated).insert("finalizers".into(), json!(rest));
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
    fn remaining_content_is_reported_like_kcp() {
        let counts = [("example.io/keep".to_string(), 2), ("a.io/x".to_string(), 1)].into();
        assert_eq!(
            remaining_message(&counts),
            "Some content in the logical cluster has finalizers remaining: a.io/x in 1 resource instances, example.io/keep in 2 resource instances"
        );
        let lc = ObjectKey::new("core.kcp.io", "logicalclusters", "c", "", "cluster");
        assert!(system_finalized(&lc));
        assert!(!system_finalized(&ObjectKey::new(
            "",
            "configmaps",
            "c",
            "default",
            "x"
        )));
    }

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
