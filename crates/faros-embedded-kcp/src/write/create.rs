//! Create: metadata rules, admission, namespace check, managedFields, kcp admission, commit.

use faros_core::status::Status;
use serde_json::Value;

use super::Writer;
use super::checks::{check_namespace, kcp_admit, prune_and_validate, stamp_cluster};
use crate::kcp::admission::Operation;
use crate::objects;
use crate::objects::meta;
use crate::patch;
use crate::registry::ResourceDef;
use crate::store::WriteOp;

/// Creates `obj` (already decoded). `managed`: the field manager to record; None when the caller
/// (server-side apply) computed managedFields itself. Returns the stored object (the admitted one
/// on a dry run) and warnings.
pub async fn create(
    w: &Writer<'_>,
    def: &ResourceDef,
    ns: Option<&str>,
    mut obj: Value,
    managed: Option<&str>,
) -> Result<(Value, Vec<String>), Status> {
    let now = objects::now_rfc3339();
    // Server-side apply computed managedFields already; metadata rules would otherwise drop them.
    let applied_fields = if managed.is_none() {
        obj.pointer("/metadata/managedFields").cloned()
    } else {
        None
    };
    if def.terminating {
        // As kube-apiserver for a terminating CRD (kcp: the binding's bound CRD).
        return Err(Status::forbidden(format!(
            "{} is forbidden: create not allowed while custom resource definition is terminating",
            faros_core::status::qualified(&def.group, &def.resource)
        )));
    }
    objects::prepare_create(def, ns, &mut obj, &now)?;
    if let Some(fields) = applied_fields {
        meta::meta_mut(&mut obj).insert("managedFields".into(), fields);
    }
    if let Some(guard) = w.claim {
        guard.admit(def, &mut obj)?;
    }
    let warnings = prune_and_validate(w, def, &mut obj)?;
    let name = meta::name(&obj).unwrap_or_default().to_string();
    if def.namespaced {
        check_namespace(w, def, ns.unwrap_or_default(), &name)?;
    }
    if let Some(m) = managed {
        let baseline = objects::create_baseline(def);
        patch::managed_fields::update_managed_fields(
            Some(&baseline),
            &mut obj,
            m,
            &def.schema,
            None,
            &def.api_version(),
            &now,
        );
    }
    kcp_admit(w, def, Operation::Create, None, None, &mut obj)?;
    // kcp's storage adds the cluster annotation on the way in and out of etcd; a dry run never
    // gets there.
    if w.dry_run.clone()? {
        return Ok((obj, warnings));
    }
    stamp_cluster(&mut obj, w.cluster);
    let key = w.key(def, ns, &name);
    let stored = w.commit(def, &name, WriteOp::Create { key, object: obj }).await?;
    Ok((stored, warnings))
}
