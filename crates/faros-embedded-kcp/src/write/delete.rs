//! Delete: preconditions, kcp admission, then removal or a deletionTimestamp (finalizers pending).

use faros_core::status::Status;
use serde_json::Value;

use super::Writer;
use super::checks::kcp_admit;
use crate::kcp::admission::Operation;
use crate::objects::meta;
use crate::objects::{self, DeleteOutcome};
use crate::registry::ResourceDef;
use crate::store::WriteOp;

/// `DeleteOptions` as clients send them (body or query).
#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOptions {
    pub propagation_policy: Option<String>,
    pub orphan_dependents: Option<bool>,
    pub preconditions: Option<Preconditions>,
    #[serde(default)]
    pub dry_run: Vec<String>,
}

#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

/// What a delete did.
pub enum Deleted {
    /// The object stays (marked for deletion, or already being deleted): its current state.
    Pending(Value),
    /// The object is gone (or would be, on a dry run): its last state.
    Removed(Value),
}

/// Deletes (or marks for deletion) the stored `obj`.
pub async fn delete(
    w: &Writer<'_>,
    def: &ResourceDef,
    obj: Value,
    opts: &DeleteOptions,
    dry_run: bool,
) -> Result<Deleted, Status> {
    let name = meta::name(&obj).unwrap_or_default().to_string();
    let ns = meta::namespace(&obj).map(String::from);
    if let Some(guard) = w.claim {
        guard.check_existing(def, &obj)?;
    }
    if let Some(p) = &opts.preconditions {
        if p.uid.as_deref().is_some_and(|u| Some(u) != meta::uid(&obj)) {
            // kube's storage words it so, naming the kind (not the resource) in the details.
            return Err(Status::conflict_message(format!(
                "Operation cannot be fulfilled on {} {}: the UID in the precondition ({}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                def.kind,
                crate::auth::rbac::go_quote(&name),
                p.uid.as_deref().unwrap_or_default(),
                meta::uid(&obj).unwrap_or_default()
            ))
            .with_details(faros_core::status::StatusDetails {
                name: name.clone(),
                kind: def.kind.clone(),
                ..Default::default()
            }));
        }
        if p.resource_version
            .as_deref()
            .is_some_and(|r| Some(r) != meta::resource_version(&obj))
        {
            return Err(Status::conflict_message(format!(
                "Precondition failed: ResourceVersion in precondition: {}, ResourceVersion in object meta: {}",
                p.resource_version.as_deref().unwrap_or_default(),
                meta::resource_version(&obj).unwrap_or_default()
            )));
        }
    }
    let rv = meta::resource_version(&obj).and_then(|r| r.parse::<u64>().ok());
    let mut admitted = obj.clone();
    kcp_admit(w, def, Operation::Delete, Some(&obj), None, &mut admitted)?;
    let key = w.key(def, ns.as_deref(), &name);
    match objects::prepare_delete(def, &obj, opts.propagation_policy.as_deref(), &objects::now_rfc3339()) {
        DeleteOutcome::AlreadyDeleting => Ok(Deleted::Pending(obj)),
        DeleteOutcome::Mark(marked) => {
            if dry_run {
                return Ok(Deleted::Pending(marked));
            }
            let stored = w
                .commit(
                    def,
                    &name,
                    WriteOp::Update {
                        key,
                        object: marked,
                        expected_rv: rv,
                    },
                )
                .await?;
            Ok(Deleted::Pending(stored.into_value()))
        }
        DeleteOutcome::Remove => {
            if !dry_run {
                w.commit(def, &name, WriteOp::Delete { key, expected_rv: rv }).await?;
            }
            Ok(Deleted::Removed(obj))
        }
    }
}
