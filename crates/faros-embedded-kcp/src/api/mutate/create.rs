//! POST: decode the body, create through the write pipeline.

use axum::response::Response;
use faros_core::status::Status;
use http::StatusCode;

use super::{content_type, decode, manager, respond};
use crate::api::RequestContext;
use crate::registry::ResourceDef;

pub async fn create(
    ctx: &RequestContext,
    def: &ResourceDef,
    ns: Option<&str>,
    body: &[u8],
) -> Result<Response, Status> {
    let obj = decode(body, &content_type(ctx))?;
    let m = manager(ctx);
    let (stored, warnings) = crate::write::create::create(&ctx.writer(), def, ns, obj, Some(&m)).await?;
    Ok(respond(StatusCode::CREATED, &stored, &warnings))
}
