//! APIExportEndpointSlice admission.

use faros_core::status::Status;
use serde_json::Value;

use super::bind::{export_cluster, export_key, export_ref, immutable_reference, may_bind};
use crate::auth::GROUP_MASTERS;
use crate::kcp::admission::{Operation, Request};
use crate::objects::meta;
use crate::state::ServerState;

/// APIExportEndpointSlice admission (kcp `pkg/admission/apiexportendpointslice`): the export must
/// exist and the user needs `bind` on it; unknown workspaces, unknown exports and missing
/// permission get the same 403, so existence does not leak. `spec.export` is immutable.
pub fn admit_endpoint_slice(state: &ServerState, req: &Request<'_>, obj: &mut Value) -> Result<(), Status> {
    match (req.operation, req.old) {
        (Operation::Create, _) => {}
        (Operation::Update, Some(old)) => return immutable_reference(req, old, obj, "/spec/export", "spec.export"),
        _ => return Ok(()),
    }
    let s = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
    let (path, name) = (s("/spec/export/path"), s("/spec/export/name"));
    let slice_name = meta::name(obj).unwrap_or_default().to_string();
    let target = export_ref(&path, &name);
    let forbidden = || {
        Status::forbidden(format!(
            "apiexportendpointslices.apis.kcp.io \"{slice_name}\" is forbidden: unable to create APIExportEndpointSlice: no permission to bind to export {target}"
        ))
    };
    let export_cluster = if path.is_empty() {
        req.cluster.to_string()
    } else {
        let cluster = export_cluster(state, req, &path).ok_or_else(forbidden)?;
        if !matches!(state.store.get(&export_key(&cluster, &name)), Ok(Some(_))) {
            return Err(forbidden());
        }
        cluster
    };
    if !req.user.in_group(GROUP_MASTERS) && !may_bind(state, req, &export_cluster, &name) {
        return Err(forbidden());
    }
    Ok(())
}
