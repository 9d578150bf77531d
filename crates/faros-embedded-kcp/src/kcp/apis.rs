//! APIExports, endpoint slices, APIBindings and permission claims.
//!
//! - `admit_binding`: kcp's APIBinding admission (finalizer, export label, the `bind` check).
//! - `admit_claimed_object`: claim labels on objects written in a consumer cluster.
//! - `run`: the controller (export identity and endpoint slices, binding phases and conditions,
//!   bound resources in the registry, claims, binding deletion), see `controller`.
//! - `export_view`: what the APIExport virtual workspace serves, from an in-memory index.

mod claims;
mod conditions;
mod controller;
mod hash;
pub mod view;

use std::sync::Arc;

use faros_core::kcp::LABEL_APIBINDING_EXPORT;
use faros_core::status::{Status, StatusDetails};
use serde_json::Value;

use super::admission::{Operation, Request};
use crate::auth::{Attributes, Decision, GROUP_MASTERS};
use crate::state::ServerState;
use view::ExportView;

pub use claims::{label_key as claim_label_key, label_value as claim_label_value};
pub use hash::export_hash;

/// Finalizer kcp's admission puts on every APIBinding; removed once the bound objects are gone.
pub const BINDING_FINALIZER: &str = "apis.kcp.io/apibinding-finalizer";
/// Namespace of the identity secrets of APIExports (in the export's logical cluster).
pub const IDENTITY_NAMESPACE: &str = "kcp-system";

/// The virtual workspace URL of an export, if the server URL is known.
pub fn virtual_workspace_url(state: &ServerState, export_cluster: &str, export_name: &str) -> Option<String> {
    let base = super::tenancy::server_url(state)?;
    Some(format!(
        "{}/services/apiexport/{export_cluster}/{export_name}",
        base.trim_end_matches('/')
    ))
}

/// What the APIExport virtual workspace serves for `export_cluster`/`export_name` (None when the
/// export does not exist or has no identity yet). Reads an in-memory index: cheap.
pub fn export_view(state: &ServerState, export_cluster: &str, export_name: &str) -> Option<ExportView> {
    state
        .apis
        .export(&(export_cluster.to_string(), export_name.to_string()))
}

/// A handle on an export's entry in the index, read at call time: long-running requests (watches)
/// see bindings made after they started.
#[derive(Clone)]
pub struct LiveExport {
    index: Arc<view::Index>,
    key: view::ExportKey,
}

impl LiveExport {
    /// Runs `f` on the export's current view (None once the export is gone).
    pub fn with<R>(&self, f: impl FnOnce(Option<&ExportView>) -> R) -> R {
        let guard = self.index.exports.read().unwrap_or_else(|p| p.into_inner());
        f(guard.get(&self.key))
    }
}

/// A live handle on `export_cluster`/`export_name` for filters that outlive one lookup.
pub fn live_export(state: &ServerState, export_cluster: &str, export_name: &str) -> Option<LiveExport> {
    Some(LiveExport {
        index: state.apis.clone(),
        key: (export_cluster.to_string(), export_name.to_string()),
    })
}

/// Runs the API export/binding controller until aborted.
pub async fn run(state: Arc<ServerState>) {
    controller::run(state).await;
}

/// The export an APIBinding refers to: `(path, name)`, path `""` meaning the binding's own workspace.
fn export_reference(obj: &Value) -> Option<(String, String)> {
    let export = obj.pointer("/spec/reference/export")?;
    let name = export.get("name").and_then(Value::as_str)?.to_string();
    let path = export
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Some((path, name))
}

/// APIBinding admission (kcp `pkg/admission/apibinding`, `pkg/admission/apibindingfinalizer`):
/// the finalizer on create, label `internal.apis.kcp.io/export`, and the `bind` check in the export's
/// workspace on create and on updates that change the reference or the label.
pub fn admit_binding(state: &ServerState, req: &Request<'_>, obj: &mut Value) -> Result<(), Status> {
    if req.operation == Operation::Delete {
        return Ok(());
    }
    if req.operation == Operation::Update
        && let Some(old) = req.old
    {
        immutable_reference(req, old, obj, "/spec/reference", "spec.reference")?;
    }
    let Some((path, name)) = export_reference(obj) else {
        // The schema requires the reference; nothing to check without one.
        return Ok(());
    };
    if req.operation == Operation::Create {
        let fins = crate::objects::finalizers(obj);
        if !fins.iter().any(|f| f == BINDING_FINALIZER) {
            let meta = crate::objects::meta_mut(obj);
            let list = meta.entry("finalizers").or_insert_with(|| Value::Array(Vec::new()));
            if let Some(a) = list.as_array_mut() {
                a.push(Value::String(BINDING_FINALIZER.into()));
            }
        }
    }
    let label = |o: &Value| {
        o.pointer("/metadata/labels")
            .and_then(|l| l.get(LABEL_APIBINDING_EXPORT))
            .and_then(Value::as_str)
            .map(String::from)
    };
    let check = match (req.operation, req.old) {
        (Operation::Create, _) | (_, None) => true,
        (_, Some(old)) => export_reference(old) != Some((path.clone(), name.clone())) || label(old) != label(obj),
    };
    if !check {
        return Ok(());
    }
    let binding_name = crate::objects::meta_str(obj, "name").unwrap_or_default().to_string();
    let action = if req.operation == Operation::Create {
        "create"
    } else {
        "update"
    };
    let target = if path.is_empty() {
        name.clone()
    } else {
        format!("{path}:{name}")
    };
    let forbidden = || {
        Status::forbidden(format!(
            "apibindings.apis.kcp.io \"{binding_name}\" is forbidden: unable to {action} APIBinding: no permission to bind to export {target}"
        ))
        .with_details(StatusDetails {
            name: binding_name.clone(),
            group: "apis.kcp.io".into(),
            kind: "apibindings".into(),
            ..Default::default()
        })
    };
    let export_cluster = match path.as_str() {
        "" => req.cluster.to_string(),
        // kcp skips the lookup for root so bootstrapping can bind before the export exists.
        "root" => "root".to_string(),
        p => {
            let cluster = state
                .clusters
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .resolve(p)
                .map(String::from)
                .ok_or_else(forbidden)?;
            let key = controller::key("apiexports", &cluster, &name);
            // Unknown workspaces and exports get the same answer, so existence does not leak.
            if !matches!(state.store.get(&key), Ok(Some(_))) {
                return Err(forbidden());
            }
            cluster
        }
    };
    if !req.user.in_group(GROUP_MASTERS) {
        let attrs = Attributes {
            name: &name,
            ..Attributes::resource(req.user, "bind", "apis.kcp.io", "apiexports")
        };
        let decision = state
            .rbac
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .authorize(&export_cluster, &attrs);
        if decision != Decision::Allow {
            return Err(forbidden());
        }
    }
    let meta = crate::objects::meta_mut(obj);
    let labels = meta
        .entry("labels")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(l) = labels.as_object_mut() {
        l.insert(
            LABEL_APIBINDING_EXPORT.into(),
            Value::String(hash::export_hash(&export_cluster, &name)),
        );
    }
    Ok(())
}

/// kcp's CEL rule on APIBinding `spec.reference` and APIExportEndpointSlice `spec.export`
/// (`self == oldSelf`): once set, the reference cannot change.
fn immutable_reference(req: &Request<'_>, old: &Value, new: &Value, pointer: &str, field: &str) -> Result<(), Status> {
    if old.pointer(pointer) == new.pointer(pointer) {
        return Ok(());
    }
    let name = crate::objects::meta_str(new, "name").unwrap_or_default();
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
    let slice_name = crate::objects::meta_str(obj, "name").unwrap_or_default().to_string();
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
        if !matches!(
            state.store.get(&controller::key("apiexports", &cluster, &name)),
            Ok(Some(_))
        ) {
            return Err(forbidden());
        }
        cluster
    };
    if !req.user.in_group(GROUP_MASTERS) && !may_bind(state, req, &export_cluster, &name) {
        return Err(forbidden());
    }
    Ok(())
}

/// An export reference as kcp's messages print it: `<path>:<name>`, or the bare name.
fn export_ref(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}:{name}")
    }
}

/// The logical cluster an export reference's `path` names: the request's own cluster when empty;
/// `None` when no workspace has that path.
fn export_cluster(state: &ServerState, req: &Request<'_>, path: &str) -> Option<String> {
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
fn may_bind(state: &ServerState, req: &Request<'_>, export_cluster: &str, name: &str) -> bool {
    let attrs = Attributes {
        name,
        ..Attributes::resource(req.user, "bind", "apis.kcp.io", "apiexports")
    };
    state
        .rbac
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .authorize(export_cluster, &attrs)
        == Decision::Allow
}

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
    let type_name = crate::objects::meta_str(obj, "name").unwrap_or_default().to_string();
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

/// Claim labels on an object being created or updated in a consumer cluster (kcp's mutating
/// permission-claims admission): for every accepted claim on its resource, label
/// `claimed.internal.apis.kcp.io/<export hash>` is set when the claim's selector matches the object
/// and removed when it does not. Meant to be called by kcp admission for non-kcp resources.
pub fn admit_claimed_object(state: &ServerState, req: &Request<'_>, obj: &mut Value) -> Result<(), Status> {
    if req.operation == Operation::Delete || req.subresource.is_some() {
        return Ok(());
    }
    let claims = state.apis.claims_for(req.cluster, &req.def.group, &req.def.resource);
    if claims.is_empty() {
        return Ok(());
    }
    controller::apply_claim_labels(obj, &claims);
    Ok(())
}
