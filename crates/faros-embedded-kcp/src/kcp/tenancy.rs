//! Workspaces, WorkspaceTypes and LogicalClusters: admission and the workspace lifecycle controller.
//! (Being written.)

use faros_core::status::Status;
use serde_json::Value;

use super::admission::Request;
use crate::api::ApiState;

/// Workspace admission: type resolution and limits, owner annotation.
pub fn admit_workspace(_state: &ApiState, _req: &Request<'_>, _obj: &mut Value) -> Result<(), Status> {
    Ok(())
}

/// Runs the workspace controllers until the process ends.
pub async fn run(_state: std::sync::Arc<ApiState>) {}
