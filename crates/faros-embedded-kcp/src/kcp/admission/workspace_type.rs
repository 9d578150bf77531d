//! WorkspaceType admission.

use faros_core::status::Status;
use serde_json::Value;

use super::bind::{export_cluster, export_ref, may_bind};
use crate::auth::GROUP_MASTERS;
use crate::kcp::admission::{Operation, Request};
use crate::objects::meta;
use crate::state::ServerState;

/// kcp's WorkspaceType admission: whoever adds a `defaultAPIBindings` entry (on create, or new on
/// update) needs `bind` on that export, or workspaces of the type would bind it on their behalf.
pub fn admit_workspace_type(state: &ServerState, req: &Request<'_>, obj: &mut Value) -> Result<(), Status> {
    if req.operation == Operation::Delete || req.user.in_group(GROUP_MASTERS) {
        return Ok(());
    }
    let refs = |o: &Value| -> Vec<(String, String)> {
        o.pointer("/spec/defaultAPIBindings")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|r| {
                        let s = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
                        (s("path"), s("export"))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let old = req.old.map(refs).unwrap_or_default();
    let type_name = meta::name(obj).unwrap_or_default().to_string();
    for (path, name) in refs(obj).into_iter().filter(|r| !old.contains(r)) {
        let target = export_ref(&path, &name);
        let forbidden = || {
            Status::forbidden(format!(
                "workspacetypes.tenancy.kcp.io \"{type_name}\" is forbidden: unable to create or update WorkspaceType: no permission to bind to export {target}"
            ))
        };
        let export_cluster = export_cluster(state, req, &path).ok_or_else(forbidden)?;
        if !may_bind(state, req, &export_cluster, &name) {
            return Err(forbidden());
        }
    }
    Ok(())
}
