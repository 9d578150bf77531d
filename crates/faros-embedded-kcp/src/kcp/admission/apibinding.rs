//! APIBinding admission (kcp `pkg/admission/apibinding`, `pkg/admission/apibindingfinalizer`).

use faros_core::kcp::{LABEL_APIBINDING_EXPORT, LABEL_CLAIMED_PREFIX};
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
    // kcp's admission checks `bind` on the reference an update asks for before the CRD rule that
    // the reference is immutable answers: a changed reference to an export the caller may not
    // bind is a 403, and only a bindable one meets the 422.
    let immutable = match (req.operation, req.old) {
        (Operation::Update, Some(old)) => immutable_reference(req, old, obj, "/spec/reference", "spec.reference").err(),
        _ => None,
    };
    admit_reference(state, req, obj)?;
    immutable.map_or(Ok(()), Err)
}

/// The finalizer, the export label and the `bind` check of [`admit_binding`].
fn admit_reference(state: &ServerState, req: &Request<'_>, obj: &mut Value) -> Result<(), Status> {
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
    let export_hash = hash::export_hash(&export_cluster, &name);
    // kcp's permission claim labeler marks every binding of an existing export as claimed by it
    // with a constant value (the reflexive claim), so the export's owner sees the binding through
    // the virtual workspace whatever claims it accepted; an accepted claim's own value stays. The
    // labeler is a controller there: a create's answer has no such label yet, later writes do.
    let export_exists = req.operation == Operation::Update
        && matches!(state.store.get(&export_key(&export_cluster, &name)), Ok(Some(_)));
    if let Some(l) = meta::labels_mut(obj) {
        if export_exists {
            l.entry(format!("{LABEL_CLAIMED_PREFIX}{export_hash}"))
                .or_insert_with(|| Value::String(reflexive_claim_value()));
        }
        l.insert(LABEL_APIBINDING_EXPORT.into(), Value::String(export_hash));
    }
    Ok(())
}

/// The value of the reflexive claim label: kcp's base62 of the constant bytes 0–9, 0–9, 0–7.
fn reflexive_claim_value() -> String {
    let bytes: Vec<u8> = (0u8..28).map(|i| i % 10).collect();
    hash::base62(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reflexive_claim_value_is_kcps_constant() {
        // As kcp v0.32.3 labels its own bindings (recorded in e2e/kcp-diff/recorded/apis.json).
        assert_eq!(reflexive_claim_value(), "LstvmbbzVDDOn90ZbhzSQO5U3DMCf88h1pZ");
    }
}
