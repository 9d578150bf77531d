//! kcp admission: checks and defaults kcp applies to its own objects before they are stored
//! (workspace types and parents, bind permission, path annotations). Called by the write pipeline
//! for every create, update and delete after the generic metadata rules and schema validation.

use faros_core::status::Status;
use serde_json::Value;

use crate::auth::UserInfo;
use crate::clusters::PATH_ANNOTATION;
use crate::registry::ResourceDef;
use crate::state::ServerState;

/// The kind of write being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

/// A write under admission.
pub struct Request<'a> {
    pub operation: Operation,
    pub user: &'a UserInfo,
    /// Logical cluster name the object lives in.
    pub cluster: &'a str,
    pub def: &'a ResourceDef,
    /// The stored object for updates and deletes.
    pub old: Option<&'a Value>,
    /// Set for writes to a subresource (`status`): kcp admission skips most checks for them.
    pub subresource: Option<&'a str>,
}

/// Runs kcp admission for `obj` (which may be mutated). Deletes pass the stored object as `obj`.
pub fn admit(state: &ServerState, req: &Request<'_>, obj: &mut Value) -> Result<(), Status> {
    if req.subresource.is_some() {
        return Ok(());
    }
    match (req.def.group.as_str(), req.def.resource.as_str()) {
        ("apis.kcp.io", "apiexports") => annotate_path(state, req, obj),
        ("apis.kcp.io", "apiresourceschemas") => super::schemas::admit_schema(req, obj),
        ("tenancy.kcp.io", "workspacetypes") => {
            annotate_path(state, req, obj)?;
            super::apis::admit_workspace_type(state, req, obj)
        }
        ("apis.kcp.io", "apibindings") => {
            annotate_path(state, req, obj)?;
            super::apis::admit_binding(state, req, obj)
        }
        ("tenancy.kcp.io", "workspaces") => super::tenancy::admit_workspace(state, req, obj),
        ("apis.kcp.io", "apiexportendpointslices") => super::apis::admit_endpoint_slice(state, req, obj),
        ("", "namespaces") if req.operation == Operation::Delete => immortal_namespace(state, req, obj),
        // Objects of other kinds may fall under a permission claim and get its label.
        (group, _) if !group.ends_with("kcp.io") && req.operation != Operation::Delete => {
            super::apis::admit_claimed_object(state, req, obj)
        }
        _ => Ok(()),
    }
}

/// Namespaces Kubernetes never deletes; kcp lets them go only with their logical cluster.
const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// kcp's workspace namespace lifecycle admission: `default`, `kube-system` and `kube-public` cannot
/// be deleted unless the logical cluster itself is being deleted.
fn immortal_namespace(state: &ServerState, req: &Request<'_>, obj: &Value) -> Result<(), Status> {
    let name = crate::objects::meta_str(obj, "name").unwrap_or_default();
    if !IMMORTAL_NAMESPACES.contains(&name) {
        return Ok(());
    }
    let cluster_deleting = super::clusters::logical_cluster(state, req.cluster)
        .is_some_and(|lc| lc.pointer("/metadata/deletionTimestamp").is_some());
    if cluster_deleting {
        return Ok(());
    }
    Err(Status::forbidden(format!(
        "namespaces \"{name}\" is forbidden: this namespace may not be deleted"
    )))
}

/// kcp's pathannotation admission: APIExports, APIBindings and WorkspaceTypes carry their workspace's
/// canonical path in `kcp.io/path`.
fn annotate_path(state: &ServerState, req: &Request<'_>, obj: &mut Value) -> Result<(), Status> {
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
    let meta = crate::objects::meta_mut(obj);
    let ann = meta.entry("annotations").or_insert_with(|| serde_json::json!({}));
    if let Some(a) = ann.as_object_mut() {
        a.insert(PATH_ANNOTATION.into(), Value::String(path));
    }
    Ok(())
}
