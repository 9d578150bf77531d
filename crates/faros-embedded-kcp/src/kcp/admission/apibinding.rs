//! APIBinding admission (kcp `pkg/admission/apibinding`, `pkg/admission/apibindingfinalizer`).

use faros_core::kcp::LABEL_APIBINDING_EXPORT;
use faros_core::status::{Status, StatusDetails};
use serde_json::Value;

use super::bind::{export_key, immutable_reference};
use crate::auth::{Attributes, Decision, GROUP_MASTERS, Verb};
use crate::kcp::admission::{Operation, Request};
use crate::kcp::apis::hash;
use crate::objects::meta;
use crate::state::ServerState;

/// Finalizer kcp's admission puts on every APIBinding; removed once the bound objects are gone.
pub const BINDING_FINALIZER: &str = "apis.kcp.io/apibinding-finalizer";

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
        let fins = meta::finalizers(obj);
        if !fins.iter().any(|f| f == BINDING_FINALIZER) {
            let meta = meta::meta_mut(obj);
            let list = meta.entry("finalizers").or_insert_with(|| Value::Array(Vec::new()));
            if let Some(a) = list.as_array_mut() {
                a.push(Value::String(BINDING_FINALIZER.into()));
            }
        }
    }
    let label = |o: &Value| meta::label(o, LABEL_APIBINDING_EXPORT).map(String::from);
    let check = match (req.operation, req.old) {
        (Operation::Create, _) | (_, None) => true,
        (_, Some(old)) => export_reference(old) != Some((path.clone(), name.clone())) || label(old) != label(obj),
    };
    if !check {
        return Ok(());
    }
    let binding_name = meta::name(obj).unwrap_or_default().to_string();
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
            let key = export_key(&cluster, &name);
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
            ..Attributes::resource(req.user, Verb::Bind.as_str(), "apis.kcp.io", "apiexports")
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
    if let Some(l) = meta::labels_mut(obj) {
        l.insert(
            LABEL_APIBINDING_EXPORT.into(),
            Value::String(hash::export_hash(&export_cluster, &name)),
        );
    }
    Ok(())
}
