//! Server-side apply: merges the applied configuration into the live object with field ownership,
//! then creates or updates through the write pipeline (managedFields computed here).

use axum::response::Response;
use faros_core::status::Status;
use http::StatusCode;
use serde_json::Value;

use super::{PATCH_RETRIES, respond};
use crate::api::RequestContext;
use crate::objects;
use crate::objects::meta;
use crate::patch;
use crate::registry::ResourceDef;
use crate::write::store_status;

pub(super) async fn apply(
    ctx: &RequestContext,
    def: &ResourceDef,
    ns: Option<&str>,
    name: &str,
    sub: Option<&str>,
    applied: Value,
) -> Result<Response, Status> {
    let Some(manager) = ctx.params.field_manager().map(String::from) else {
        return Err(Status::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            vec![faros_core::status::StatusCause {
                reason: "FieldValueRequired".into(),
                message: "Required value: is required for apply patch".into(),
                field: "fieldManager".into(),
            }],
        ));
    };
    let api_version = def.api_version();
    if applied.get("apiVersion").and_then(Value::as_str) != Some(api_version.as_str()) {
        return Err(Status::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {}, expected: {api_version}",
            applied.get("apiVersion").and_then(Value::as_str).unwrap_or_default()
        )));
    }
    if applied.get("kind").and_then(Value::as_str) != Some(def.kind.as_str()) {
        return Err(Status::bad_request(format!(
            "Incorrect kind specified in apply patch. Specified patch kind: {}, expected: {}",
            applied.get("kind").and_then(Value::as_str).unwrap_or_default(),
            def.kind
        )));
    }
    if let Some(n) = meta::name(&applied).filter(|n| *n != name) {
        return Err(Status::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        )));
    }
    let w = ctx.writer();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let now = objects::now_rfc3339();
        let key = w.key(def, ns, name);
        let live = ctx.state.store.get(&key).map_err(|e| store_status(e, def, name))?;
        let opts = patch::apply::ApplyOptions {
            manager: &manager,
            force: ctx.params.force(),
            schema: &def.schema,
            subresource: sub,
            api_version: &api_version,
            now: &now,
        };
        let mut merged = patch::apply::server_side_apply(live.as_ref(), &applied, &opts).map_err(|e| match e {
            patch::apply::ApplyError::Conflicts(c) => patch::apply::conflict_status(&c),
            other => Status::failure(422, "Invalid", other.to_string()),
        })?;
        let result = match &live {
            None => {
                if sub.is_some() {
                    return Err(Status::not_found(&def.group, &def.resource, name));
                }
                meta::meta_mut(&mut merged).insert("name".into(), Value::String(name.into()));
                crate::write::create::create(&w, def, ns, merged, None)
                    .await
                    .map(|(stored, warnings)| respond(StatusCode::CREATED, &stored, &warnings))
            }
            Some(old) => {
                let rv = meta::resource_version(old).unwrap_or_default().to_string();
                meta::meta_mut(&mut merged).insert("resourceVersion".into(), Value::String(rv));
                crate::write::update::update(&w, def, old, merged, sub, false, None)
                    .await
                    .map(|u| respond(StatusCode::OK, &u.object, &u.warnings))
            }
        };
        match result {
            Err(s)
                if s.code == 409
                    && (s.reason == "Conflict" || s.reason == "AlreadyExists")
                    && attempt < PATCH_RETRIES =>
            {
                continue;
            }
            other => return other,
        }
    }
}
