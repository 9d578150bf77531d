//! kcp admission: checks and defaults kcp applies to its own objects before they are stored
//! (workspace types and parents, bind permission, path annotations). Called by the write pipeline
//! for every create, update and delete after the generic metadata rules and schema validation.
//!
//! One plugin per resource family, as kcp's `pkg/admission`: `apiexport`, `apibinding`,
//! `endpoint_slice`, `workspace_type`, `workspace`, `schema`, `claims` (claim labels on other
//! objects), `namespace` (immortal namespaces), `path` (the `kcp.io/path` annotation) and `reserved`
//! (the names kcp keeps for itself); `bind` is what the binding plugins share, `field` how the
//! plugins print field errors. Admission reads the state and never writes: nothing here imports
//! the client, the write pipeline or a controller, so the write pipeline can call it without a
//! loop.

pub mod apibinding;
mod apiexport;
mod bind;
pub mod claims;
mod endpoint_slice;
mod field;
mod namespace;
mod path;
mod reserved;
mod schema;
mod workspace;
mod workspace_type;

use faros_core::status::Status;
use serde_json::Value;

use crate::auth::UserInfo;
use crate::objects::meta;
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
    reserved::admit_reserved(req, obj)?;
    // kcp's path annotation plugin also corrects the annotation on any other object that carries it.
    if req.operation != Operation::Delete
        && req.def.resource != "logicalclusters"
        && meta::annotations(obj).is_some_and(|a| a.contains_key(crate::clusters::PATH_ANNOTATION))
    {
        path::annotate_path(state, req, obj)?;
    }
    match (req.def.group.as_str(), req.def.resource.as_str()) {
        ("apis.kcp.io", "apiexports") => {
            path::annotate_path(state, req, obj)?;
            apiexport::admit_export(req, obj)
        }
        ("apis.kcp.io", "apiresourceschemas") => schema::admit_schema(req, obj),
        ("tenancy.kcp.io", "workspacetypes") => {
            path::annotate_path(state, req, obj)?;
            workspace_type::admit_workspace_type(state, req, obj)
        }
        ("apis.kcp.io", "apibindings") => {
            path::annotate_path(state, req, obj)?;
            apibinding::admit_binding(state, req, obj)
        }
        ("tenancy.kcp.io", "workspaces") => workspace::admit_workspace(state, req, obj),
        ("apis.kcp.io", "apiexportendpointslices") => endpoint_slice::admit_endpoint_slice(state, req, obj),
        ("", "namespaces") if req.operation == Operation::Delete => namespace::immortal_namespace(state, req, obj),
        // Objects of other kinds may fall under a permission claim and get its label.
        (group, _) if !group.ends_with("kcp.io") && req.operation != Operation::Delete => {
            claims::admit_claimed_object(state, req, obj)
        }
        _ => Ok(()),
    }
}
