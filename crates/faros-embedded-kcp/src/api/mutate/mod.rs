//! Mutating requests over HTTP (named apart from the write pipeline, `crate::write`, which they
//! call), one verb per module: create (POST), update (PUT), patch (merge, JSON,
//! strategic), apply (server-side apply) and delete/deletecollection.
//!
//! These handlers decode bodies and options, pick the field manager, retry patches on conflicts and
//! build responses; the admission and commit steps are the write pipeline's (`crate::write`), the
//! same as for in-process writers. They must not admit or commit objects any other way.

mod apply;
mod create;
mod delete;
mod patch;
mod update;

use axum::response::Response;
use faros_core::status::Status;
use http::{HeaderValue, StatusCode, header};
use serde_json::Value;

pub use create::create;
pub use delete::{delete, delete_collection};
pub use patch::patch;
pub use update::update;

use super::RequestContext;
use super::respond::json_bytes;
use crate::write::{Stored, Writer};

/// How many times a patch is re-applied when the object changed underneath it.
const PATCH_RETRIES: usize = 8;

impl RequestContext {
    /// The write pipeline as this request's user, in its cluster, with its options.
    pub fn writer(&self) -> Writer<'_> {
        Writer {
            state: &self.state,
            user: &self.user,
            cluster: &self.cluster,
            field_validation: self.params.field_validation(),
            dry_run: self.params.dry_run(match self.method {
                http::Method::PUT => "UpdateOptions",
                http::Method::PATCH => "PatchOptions",
                http::Method::DELETE => "DeleteOptions",
                _ => "CreateOptions",
            }),
            claim: self.claim.as_deref(),
        }
    }
}

/// Decodes a request body: JSON, or YAML where the content type says so.
pub fn decode(body: &[u8], content_type: &str) -> Result<Value, Status> {
    if content_type.starts_with("application/vnd.kubernetes.protobuf") {
        return super::protobuf::decode(body);
    }
    if !(content_type.contains("json") || content_type.contains("yaml") || content_type.is_empty()) {
        return Err(Status::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got {content_type})"
        )));
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(Status::bad_request("the request body is empty"));
    }
    let value = if content_type.contains("yaml") {
        let text = std::str::from_utf8(body).map_err(|_| Status::bad_request("the request body is not UTF-8"))?;
        serde_saphyr::from_str::<Value>(text).map_err(|e| Status::bad_request(format!("error decoding YAML: {e}")))?
    } else {
        serde_json::from_slice::<Value>(body)
            .map_err(|e| Status::bad_request(format!("error decoding request body as JSON: {e}")))?
    };
    Ok(value)
}

fn content_type(ctx: &RequestContext) -> String {
    ctx.headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_ascii_lowercase()
}

/// The field manager of a non-apply write: `fieldManager`, else the user agent's product name.
pub(in crate::api) fn manager(ctx: &RequestContext) -> String {
    if let Some(m) = ctx.params.field_manager() {
        return m.chars().take(128).collect();
    }
    let ua = ctx
        .headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("unknown");
    ua.split('/').next().unwrap_or("unknown").chars().take(128).collect()
}

/// The answer to a write: the object as stored (its stored text when the write stored it).
fn respond(code: StatusCode, stored: &Stored, warnings: &[String]) -> Response {
    let mut resp = json_bytes(code, stored.json());
    for w in warnings {
        if let Ok(v) = HeaderValue::from_str(&format!("299 - {:?}", w)) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}
