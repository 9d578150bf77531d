//! kcp's workspace namespace lifecycle admission.

use faros_core::status::Status;
use serde_json::Value;

use super::Request;
use crate::objects::meta;
use crate::state::ServerState;

/// Namespaces Kubernetes never deletes; kcp lets them go only with their logical cluster.
const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// kcp's workspace namespace lifecycle admission: `default`, `kube-system` and `kube-public` cannot
/// be deleted unless the logical cluster itself is being deleted.
pub fn immortal_namespace(state: &ServerState, req: &Request<'_>, obj: &Value) -> Result<(), Status> {
    let name = meta::name(obj).unwrap_or_default();
    if !IMMORTAL_NAMESPACES.contains(&name) {
        return Ok(());
    }
    let cluster_deleting =
        crate::kcp::clusters::logical_cluster(state, req.cluster).is_some_and(|lc| meta::is_deleting(&lc));
    if cluster_deleting {
        return Ok(());
    }
    Err(Status::forbidden(format!(
        "namespaces \"{name}\" is forbidden: this namespace may not be deleted"
    )))
}
