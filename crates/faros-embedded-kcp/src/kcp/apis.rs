//! APIExports, endpoint slices, APIBindings and permission claims. (Being written.)

use faros_core::status::Status;
use serde_json::Value;

use super::admission::Request;
use crate::api::ApiState;

/// APIBinding admission: the `bind` check on the referenced export.
pub fn admit_binding(_state: &ApiState, _req: &Request<'_>, _obj: &mut Value) -> Result<(), Status> {
    Ok(())
}

/// Runs the API export/binding controllers until the process ends.
pub async fn run(_state: std::sync::Arc<ApiState>) {}

/// The virtual-workspace view of one export (stub until the binding controller lands).
pub fn export_view(_state: &ApiState, _export_cluster: &str, _export_name: &str) -> Option<super::ExportView> {
    None
}
