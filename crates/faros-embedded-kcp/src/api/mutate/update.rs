//! PUT: decode the body, check its name, update through the write pipeline.

use axum::response::Response;
use faros_core::status::Status;
use http::StatusCode;

use super::{content_type, decode, manager, respond};
use crate::api::RequestContext;
use crate::objects::meta;
use crate::registry::ResourceDef;

pub async fn update(
    ctx: &RequestContext,
    def: &ResourceDef,
    ns: Option<&str>,
    name: &str,
    sub: Option<&str>,
    body: &[u8],
) -> Result<Response, Status> {
    let new = decode(body, &content_type(ctx))?;
    if let Some(body_name) = meta::name(&new).filter(|n| !n.is_empty() && *n != name) {
        return Err(Status::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let w = ctx.writer();
    // A bound resource's object as this version reads it (see `ResourceDef::served`).
    let old = def.served(w.load(def, ns, name)?)?;
    let m = manager(ctx);
    // CR-like kinds demand optimistic concurrency on PUT; built-ins allow unconditional updates.
    let updated = crate::write::update::update(&w, def, &old, new, sub, def.generation, Some(&m)).await?;
    Ok(respond(StatusCode::OK, &updated.object, &updated.warnings))
}
