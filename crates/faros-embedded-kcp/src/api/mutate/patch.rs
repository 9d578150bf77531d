//! PATCH with merge, JSON and strategic merge patches: applied to the object as read, committed
//! through the write pipeline, re-applied when a concurrent write got there first. Apply patches
//! go to `apply`.

use axum::response::Response;
use faros_core::status::Status;
use http::StatusCode;
use serde_json::Value;

use super::{PATCH_RETRIES, content_type, decode, manager, respond};
use crate::api::RequestContext;
use crate::objects::meta;
use crate::patch;
use crate::registry::ResourceDef;

/// The patch formats, by Content-Type.
enum PatchKind {
    Merge,
    Json,
    Strategic,
    Apply,
}

fn patch_kind(content_type: &str, def: &ResourceDef) -> Result<PatchKind, Status> {
    let ct = content_type.split(';').next().unwrap_or_default().trim();
    match ct {
        "application/merge-patch+json" => Ok(PatchKind::Merge),
        "application/json-patch+json" => Ok(PatchKind::Json),
        "application/strategic-merge-patch+json" if def.strategic_merge => Ok(PatchKind::Strategic),
        "application/apply-patch+yaml" | "application/apply-patch+json" | "application/apply-patch+cbor" => {
            Ok(PatchKind::Apply)
        }
        // A typed built-in's route refuses the content type before the patch handler sees it
        // (go-restful's generic 415); a custom resource's patch handler names what it takes, the
        // apply type twice as kcp's apiserver lists it.
        _ if def.typed_builtin() => Err(Status::unsupported_media_type("415: Unsupported Media Type")
            .with_details(faros_core::status::StatusDetails::default())),
        _ => Err(Status::unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/apply-patch+yaml",
        )),
    }
}

/// Go's name of a JSON value's type when it is neither an object nor `null` (which Go reads into
/// a map as an empty one).
fn not_an_object(v: &Value) -> Option<&'static str> {
    match v {
        Value::String(_) => Some("string"),
        Value::Number(_) => Some("number"),
        Value::Array(_) => Some("array"),
        Value::Bool(_) => Some("bool"),
        Value::Null | Value::Object(_) => None,
    }
}

/// PATCH. `served` is the version the client addressed when it differs from the stored `def`: the patch
/// then applies to the object converted to that version, and the result is converted back.
pub async fn patch(
    ctx: &RequestContext,
    def: &ResourceDef,
    served: Option<&ResourceDef>,
    ns: Option<&str>,
    name: &str,
    sub: Option<&str>,
    body: &[u8],
) -> Result<Response, Status> {
    let ct = content_type(ctx);
    let kind = patch_kind(&ct, def)?;
    if let (Some(v), PatchKind::Apply) = (served, &kind) {
        return Err(Status::unsupported_media_type(format!(
            "server-side apply is served for {}/{} only in its storage version {}; use that version",
            v.group,
            v.resource,
            def.api_version()
        )));
    }
    let patch_body = match kind {
        PatchKind::Apply => decode(body, "yaml")?,
        _ => decode(body, "json")?,
    };
    if let PatchKind::Apply = kind {
        return super::apply::apply(ctx, def, ns, name, sub, patch_body).await;
    }
    if let (PatchKind::Merge, Some(json_type)) = (&kind, not_an_object(&patch_body)) {
        // kube reads a merge patch into a map first; anything else is refused before it applies
        // (applied, a string would replace the whole object).
        return Err(Status::bad_request(format!(
            "error decoding patch: json: cannot unmarshal {json_type} into Go value of type map[string]interface {{}}"
        )));
    }
    let m = manager(ctx);
    let explicit_rv =
        matches!(kind, PatchKind::Merge | PatchKind::Strategic) && meta::resource_version(&patch_body).is_some();
    let w = ctx.writer();
    let mut attempt = 0;
    loop {
        attempt += 1;
        // A bound resource's object as this version reads it (see `ResourceDef::served`): the
        // patch applies to it, and managedFields compare with it, as kube's decoded old object.
        let old = def.served(w.load(def, ns, name)?)?;
        let mut new = match served {
            Some(v) => v.served(old.clone())?,
            None => old.clone(),
        };
        match kind {
            PatchKind::Merge => patch::merge_patch(&mut new, &patch_body),
            PatchKind::Json => {
                // kube-apiserver answers a JSON patch that does not apply with its generic 422,
                // which drops the reason; the reason is logged here, as it is not there.
                patch::json_patch(&mut new, &patch_body).map_err(|e| {
                    tracing::debug!(error = %e, "JSON patch does not apply");
                    Status::failure(
                        422,
                        "Invalid",
                        "the server rejected our request due to an error in our request",
                    )
                    .with_details(faros_core::status::StatusDetails::default())
                })?
            }
            PatchKind::Strategic => {
                new = patch::strategic_merge_patch(&old, &patch_body, &def.schema)
                    .map_err(|e| Status::failure(422, "Invalid", e.to_string()))?
            }
            PatchKind::Apply => unreachable!("handled above"),
        }
        if meta::name(&new).is_some_and(|n| n != name) || meta::uid(&new) != meta::uid(&old) {
            return Err(Status::bad_request(
                "metadata.name and metadata.uid cannot be changed by a patch",
            ));
        }
        if let Some(v) = served {
            new = v.stored(new)?;
        }
        if !explicit_rv {
            // The patch applies to the version just read; a concurrent write means re-applying it.
            let rv = meta::resource_version(&old).unwrap_or_default().to_string();
            meta::meta_mut(&mut new).insert("resourceVersion".into(), Value::String(rv));
        }
        match crate::write::update::update(&w, def, &old, new, sub, false, Some(&m)).await {
            Err(s) if s.code == 409 && s.reason == "Conflict" && !explicit_rv && attempt < PATCH_RETRIES => continue,
            Err(s) => return Err(s),
            Ok(u) => return Ok(respond(StatusCode::OK, &u.object, &u.warnings)),
        }
    }
}
