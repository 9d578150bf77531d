//! What the binding plugins share: the `bind` permission on an APIExport, how an export reference
//! names its workspace, and kcp's rule that a reference, once set, never changes.

use faros_core::status::Status;
use serde_json::Value;

use crate::auth::{Attributes, Decision, Verb};
use crate::kcp::admission::Request;
use crate::objects::meta;
use crate::state::ServerState;
use crate::store::ObjectKey;

/// The storage key of APIExport `name` in logical cluster `cluster`.
pub fn export_key(cluster: &str, name: &str) -> ObjectKey {
    ObjectKey::new("apis.kcp.io", "apiexports", cluster, "", name)
}

/// kcp's CEL rule on APIBinding `spec.reference` and APIExportEndpointSlice `spec.export`
/// (`self == oldSelf`): once set, the reference cannot change.
pub fn immutable_reference(
    req: &Request<'_>,
    old: &Value,
    new: &Value,
    pointer: &str,
    field: &str,
) -> Result<(), Status> {
    if old.pointer(pointer) == new.pointer(pointer) {
        return Ok(());
    }
    let name = meta::name(new).unwrap_or_default();
    Err(Status::invalid(
        &req.def.group,
        &req.def.kind,
        name,
        vec![faros_core::status::StatusCause {
            reason: "FieldValueInvalid".into(),
            message: "Invalid value: \"object\": APIExport reference must not be changed".into(),
            field: field.into(),
        }],
    ))
}

/// An export reference as kcp's messages print it: `<path>:<name>`, or the bare name.
pub fn export_ref(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}:{name}")
    }
}

/// The logical cluster an export reference's `path` names: the request's own cluster when empty;
/// `None` when no workspace has that path.
pub fn export_cluster(state: &ServerState, req: &Request<'_>, path: &str) -> Option<String> {
    if path.is_empty() {
        return Some(req.cluster.to_string());
    }
    state
        .clusters
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .resolve(path)
        .map(String::from)
}

/// Whether the requester has `bind` on APIExport `name` in logical cluster `export_cluster`.
pub fn may_bind(state: &ServerState, req: &Request<'_>, export_cluster: &str, name: &str) -> bool {
    let attrs = Attributes {
        name,
        ..Attributes::resource(req.user, Verb::Bind.as_str(), "apis.kcp.io", "apiexports")
    };
    state
        .rbac
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .authorize(export_cluster, &attrs)
        == Decision::Allow
}
