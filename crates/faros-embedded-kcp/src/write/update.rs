//! Update: `new` replaces `old` (whole object, `/status` or `/finalize`), or removes it when its
//! deletion completes; a no-op update writes nothing.

use faros_core::status::Status;
use serde_json::Value;

use super::checks::{kcp_admit, prune_and_validate, stamp_cluster};
use super::{Stored, Writer};
use crate::kcp::admission::Operation;
use crate::objects::meta;
use crate::objects::{self, WritePart};
use crate::patch;
use crate::registry::ResourceDef;
use crate::store::WriteOp;

/// The part of the object a subresource write changes.
pub fn part(sub: Option<&str>) -> WritePart {
    match sub {
        Some("status") => WritePart::Status,
        Some("finalize") => WritePart::Finalize,
        _ => WritePart::Main,
    }
}

/// What an update did.
pub struct Updated {
    /// The stored object (the admitted one on a dry run; the last state when removed), shared with
    /// its event.
    pub object: Stored,
    pub warnings: Vec<String>,
    /// The update completed a pending deletion: the object is gone.
    pub removed: bool,
}

/// Commits `new` as the successor of `old` (or deletes it when its deletion completes). `require_rv`:
/// `new` must carry a resourceVersion. `manager`: the field manager to record (None when the caller
/// computed managedFields).
pub async fn update(
    w: &Writer<'_>,
    def: &ResourceDef,
    old: &Value,
    mut new: Value,
    sub: Option<&str>,
    require_rv: bool,
    manager: Option<&str>,
) -> Result<Updated, Status> {
    let name = meta::name(old).unwrap_or_default().to_string();
    let ns = meta::namespace(old).map(String::from);
    let expected_rv = match meta::resource_version(&new).filter(|s| !s.is_empty()) {
        Some(rv) => Some(
            rv.parse::<u64>()
                .map_err(|_| Status::bad_request(format!("invalid resourceVersion {rv:?}")))?,
        ),
        None => None,
    };
    if let Some(guard) = w.claim {
        guard.check_existing(def, old)?;
    }
    // kcp keeps an object's cluster annotation in storage, so a main-resource update whose body
    // drops it is written even when nothing else changed (a new resourceVersion: `cargo xtask kcp
    // diff`, controllers "a renewal with a stale version conflicts"); one that sends the object as
    // read (or patches it) changes nothing. Taken before the body's annotation is replaced.
    let sent_cluster = sub.is_some() || meta::annotation(&new, meta::CLUSTER_ANNOTATION).is_some();
    let remove = objects::prepare_update(def, old, &mut new, part(sub), require_rv)?;
    if let Some(guard) = w.claim
        && part(sub) == WritePart::Main
    {
        guard.admit(def, &mut new)?;
    }
    let warnings = prune_and_validate(w, def, &mut new)?;
    let now = objects::now_rfc3339();
    if let Some(m) = manager {
        patch::managed_fields::update_managed_fields(
            Some(old),
            &mut new,
            m,
            &def.schema,
            sub,
            &def.api_version(),
            &now,
        );
    }
    kcp_admit(w, def, Operation::Update, Some(old), sub, &mut new)?;
    stamp_cluster(&mut new, w.cluster);
    let key = w.key(def, ns.as_deref(), &name);
    // Like kube-apiserver, an update that changes nothing is not written: no new resourceVersion, no event.
    if !remove && sent_cluster && unchanged(old, &new) {
        if let Some(expected) = expected_rv
            && meta::resource_version(old) != Some(expected.to_string().as_str())
        {
            return Err(Status::conflict(&def.group, &def.resource, &name));
        }
        return Ok(Updated {
            object: Stored::new(old.clone()),
            warnings,
            removed: false,
        });
    }
    if w.dry_run.clone()? {
        return Ok(Updated {
            object: Stored::new(new),
            warnings,
            removed: remove,
        });
    }
    let object = if remove {
        // The answer is the object as this update left it (its last finalizer gone), at the
        // deletion's resourceVersion, as kube's storage returns it, not the one deleted.
        let deleted = w.commit(def, &name, WriteOp::Delete { key, expected_rv }).await?;
        let mut last = new;
        if let Some(rv) = meta::resource_version(&deleted) {
            meta::meta_mut(&mut last).insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        Stored::new(last)
    } else {
        w.commit(
            def,
            &name,
            WriteOp::Update {
                key,
                object: new,
                expected_rv,
            },
        )
        .await?
    };
    Ok(Updated {
        object,
        warnings,
        removed: remove,
    })
}

/// Whether `new` equals `old` apart from the resourceVersion it carries.
fn unchanged(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        v
    };
    strip(old) == strip(new)
}
