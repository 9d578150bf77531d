//! kcp's checks on the logical cluster a request goes to: the inactive-cluster filter, and the
//! LogicalCluster object of a cluster as stored. The index itself (`crate::clusters`) sits beside the
//! registry, below the server state that holds it.

use serde_json::Value;

use crate::clusters::{LOGICAL_CLUSTER_GROUP, LOGICAL_CLUSTER_NAME, LOGICAL_CLUSTER_RESOURCE};
use crate::state::ServerState;
use crate::store::ObjectKey;

/// Whether a request to `local_path` (the path inside the cluster) of an inactive logical cluster is
/// still served: kcp lets OpenAPI and the LogicalCluster itself through, so it can be reactivated.
pub fn served_while_inactive(local_path: &str) -> bool {
    ["/openapi", "/apis/core.kcp.io/v1alpha1/logicalclusters"]
        .iter()
        .any(|p| local_path.starts_with(p))
}

/// kcp's inactive-cluster filter, before authorization and for everyone: 403
/// `logicalclusters.core.kcp.io "<name>" is forbidden: logical cluster is marked inactive`.
pub fn check_active(state: &ServerState, cluster: &str, local_path: &str) -> Result<(), faros_core::status::Status> {
    let inactive = state
        .clusters
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(cluster)
        .is_some_and(|c| c.inactive);
    if inactive && !served_while_inactive(local_path) {
        return Err(faros_core::status::Status::forbidden(format!(
            "logicalclusters.core.kcp.io \"{cluster}\" is forbidden: logical cluster is marked inactive"
        )));
    }
    Ok(())
}

/// The LogicalCluster object of `cluster`.
pub fn logical_cluster(state: &ServerState, cluster: &str) -> Option<Value> {
    let key = ObjectKey::new(
        LOGICAL_CLUSTER_GROUP,
        LOGICAL_CLUSTER_RESOURCE,
        cluster,
        "",
        LOGICAL_CLUSTER_NAME,
    );
    state.store.get(&key).ok().flatten()
}
