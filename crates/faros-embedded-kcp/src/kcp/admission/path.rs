//! kcp's pathannotation admission.

use faros_core::status::Status;
use serde_json::Value;

use super::{Operation, Request};
use crate::clusters::PATH_ANNOTATION;
use crate::objects::meta;
use crate::state::ServerState;

/// kcp's pathannotation admission: APIExports, APIBindings and WorkspaceTypes carry their workspace's
/// canonical path in `kcp.io/path`.
pub fn annotate_path(state: &ServerState, req: &Request<'_>, obj: &mut Value) -> Result<(), Status> {
    if req.operation == Operation::Delete {
        return Ok(());
    }
    let path = state
        .clusters
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(req.cluster)
        .map(|c| c.path.clone());
    let path = path.unwrap_or_else(|| req.cluster.to_string());
    if let Some(a) = meta::annotations_mut(obj) {
        a.insert(PATH_ANNOTATION.into(), Value::String(path));
    }
    Ok(())
}
