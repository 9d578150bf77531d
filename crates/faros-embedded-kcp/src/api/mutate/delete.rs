//! DELETE and deletecollection: parse DeleteOptions (body or query), delete through the write
//! pipeline, retry on conflicts without preconditions, and answer like kube-apiserver.

use axum::response::Response;
use faros_core::status::Status;
use http::StatusCode;
use serde_json::json;

use super::PATCH_RETRIES;
use crate::api::RequestContext;
use crate::api::respond::json_response;
use crate::objects::meta;
use crate::registry::ResourceDef;
use crate::write::delete::{DeleteOptions, Deleted};
use crate::write::{Writer, store_status};

fn delete_options(ctx: &RequestContext, body: &[u8]) -> Result<DeleteOptions, Status> {
    let mut opts: DeleteOptions = if body.iter().all(u8::is_ascii_whitespace) {
        DeleteOptions::default()
    } else if super::content_type(ctx).starts_with(crate::api::protobuf::MEDIA_TYPE) {
        // Go clients send DeleteOptions in protobuf.
        let value = crate::api::protobuf::decode_delete_options(body)?;
        serde_json::from_value(value).map_err(|e| Status::bad_request(format!("invalid DeleteOptions: {e}")))?
    } else {
        serde_json::from_slice(body).map_err(|e| Status::bad_request(format!("invalid DeleteOptions: {e}")))?
    };
    if opts.propagation_policy.is_none() {
        opts.propagation_policy = ctx.params.propagation_policy().map(String::from);
    }
    if opts.propagation_policy.is_none() && opts.orphan_dependents == Some(true) {
        opts.propagation_policy = Some("Orphan".into());
    }
    if let Some(p) = opts.propagation_policy.as_deref()
        && !matches!(p, "Background" | "Foreground" | "Orphan")
    {
        return Err(Status::bad_request(format!(
            "unsupported propagationPolicy {p:?}: supported values: \"Background\", \"Foreground\", \"Orphan\""
        )));
    }
    Ok(opts)
}

/// Deletes one object; returns the response body.
async fn delete_one(
    w: &Writer<'_>,
    def: &ResourceDef,
    obj: serde_json::Value,
    opts: &DeleteOptions,
    dry_run: bool,
) -> Result<serde_json::Value, Status> {
    Ok(match crate::write::delete::delete(w, def, obj, opts, dry_run).await? {
        Deleted::Pending(obj) => obj,
        // CR-like kinds return the deleted object, built-ins a success Status (both parse in kube-rs).
        Deleted::Removed(obj) if def.generation => obj,
        Deleted::Removed(obj) => {
            let name = meta::name(&obj).unwrap_or_default();
            crate::api::success_status(def, name, meta::uid(&obj).unwrap_or_default())
        }
    })
}

pub async fn delete(
    ctx: &RequestContext,
    def: &ResourceDef,
    ns: Option<&str>,
    name: &str,
    body: &[u8],
) -> Result<Response, Status> {
    let opts = delete_options(ctx, body)?;
    let dry_run = ctx.params.dry_run("DeleteOptions")? || opts.dry_run.iter().any(|d| d == "All");
    let w = ctx.writer();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let obj = w.load(def, ns, name)?;
        match delete_one(&w, def, obj, &opts, dry_run).await {
            Err(s)
                if s.code == 409
                    && s.reason == "Conflict"
                    && opts.preconditions.is_none()
                    && attempt < PATCH_RETRIES =>
            {
                continue;
            }
            Err(s) => return Err(s),
            Ok(body) => return Ok(json_response(StatusCode::OK, &body)),
        }
    }
}

pub async fn delete_collection(
    ctx: &RequestContext,
    def: &ResourceDef,
    ns: Option<&str>,
    body: &[u8],
) -> Result<Response, Status> {
    let opts = delete_options(ctx, body)?;
    let dry_run = ctx.params.dry_run("DeleteOptions")? || opts.dry_run.iter().any(|d| d == "All");
    let filter = crate::api::read::selector_filter(ctx, def)?;
    let query = crate::store::ListQuery {
        group: def.group.clone(),
        resource: def.resource.clone(),
        cluster: Some(ctx.cluster.clone()),
        namespace: if def.namespaced { ns.map(String::from) } else { None },
        limit: None,
        continue_token: None,
        filter,
        name: None,
    };
    let page = ctx.state.store.list(&query).map_err(|e| store_status(e, def, ""))?;
    let w = ctx.writer();
    let mut deleted = Vec::new();
    for obj in page.items {
        match delete_one(&w, def, obj.clone(), &opts, dry_run).await {
            Ok(_) => deleted.push(obj),
            // Removed concurrently: nothing left to do for this one.
            Err(s) if s.code == 404 || s.code == 409 => {}
            Err(s) => return Err(s),
        }
    }
    let rv = ctx.state.store.current_rv();
    Ok(json_response(
        StatusCode::OK,
        &json!({"kind": def.list_kind, "apiVersion": def.api_version(), "metadata": {"resourceVersion": rv.to_string()}, "items": deleted}),
    ))
}
