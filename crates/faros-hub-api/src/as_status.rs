//! Every error of the hub's own API is a Kubernetes `Status` (docs/hub-api.md): the handlers
//! answer with one, and this turns the rest into one too — what axum and the libraries under the
//! API router answer by themselves: `405` with an empty body for a method a route does not take,
//! `400 text/plain` from a query string the `Query` extractor rejects, `406`/`415 text/plain` from
//! the MCP transport. Their text (or, when empty, a sentence naming the method and path) becomes
//! the Status message; headers such as `Allow` and `Retry-After` are kept.
//!
//! Only the API router's answers pass here: a provider's backend or UI (the proxies) and kcp (the
//! pass-through) answer for themselves.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use faros_core::status::Status;
use http::{HeaderMap, Method, StatusCode, header};

/// Largest error body read to become the message; longer ones are cut.
const BODY_LIMIT: usize = 16 * 1024;
/// Longest message kept from such a body.
const MESSAGE_LIMIT: usize = 1024;

/// Whether an answer must be rewritten: an error that is not JSON already.
pub fn needs_status(code: StatusCode, headers: &HeaderMap) -> bool {
    if !(code.is_client_error() || code.is_server_error()) {
        return false;
    }
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| {
            let t = t.trim();
            t.eq_ignore_ascii_case("application/json") || t.to_ascii_lowercase().ends_with("+json")
        });
    !json
}

/// Kubernetes' `reason` for an HTTP status code (`StatusReason` in apimachinery).
pub fn reason(code: StatusCode) -> &'static str {
    match code.as_u16() {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Gone",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        c if c < 500 => "BadRequest",
        _ => "InternalError",
    }
}

/// The Status message: the body's text, or for an empty body a sentence about the request.
pub fn message(code: StatusCode, method: &Method, path: &str, allow: Option<&str>, body: &str) -> String {
    let body = body.trim();
    if !body.is_empty() {
        let mut text: String = body.chars().take(MESSAGE_LIMIT).collect();
        if text.len() < body.len() {
            text.push('…');
        }
        return text;
    }
    match (code, allow) {
        (StatusCode::METHOD_NOT_ALLOWED, Some(allow)) if !allow.is_empty() => {
            format!("method {method} is not allowed on {path}; allowed: {allow}")
        }
        (StatusCode::METHOD_NOT_ALLOWED, _) => format!("method {method} is not allowed on {path}"),
        _ => format!(
            "{method} {path}: {}",
            code.canonical_reason().unwrap_or("error").to_lowercase()
        ),
    }
}

/// `resp` as a Status when [`needs_status`] says so; otherwise unchanged.
pub async fn ensure(method: &Method, path: &str, resp: Response) -> Response {
    if !needs_status(resp.status(), resp.headers()) {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    // An error body that cannot be read (or is not text) leaves the sentence about the request.
    let text = axum::body::to_bytes(body, BODY_LIMIT)
        .await
        .ok()
        .and_then(|b| String::from_utf8(b.to_vec()).ok())
        .unwrap_or_default();
    let allow = parts.headers.get(header::ALLOW).and_then(|v| v.to_str().ok());
    let status = Status::failure(
        parts.status.as_u16(),
        reason(parts.status),
        message(parts.status, method, path, allow, &text),
    );
    let mut out: Response<Body> = status.into_response();
    *out.status_mut() = parts.status;
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH && !out.headers().contains_key(name) {
            out.headers_mut().append(name, value.clone());
        }
    }
    out.extensions_mut().extend(parts.extensions);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn headers(content_type: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(t) = content_type {
            h.insert(header::CONTENT_TYPE, t.parse().unwrap());
        }
        h
    }

    #[test]
    fn which_answers_become_a_status() {
        for (code, content_type, want) in [
            (405, None, true),
            (400, Some("text/plain; charset=utf-8"), true),
            (406, Some("text/plain"), true),
            (500, Some("text/html"), true),
            (404, Some("application/json"), false),
            (409, Some("application/json; charset=utf-8"), false),
            (400, Some("application/problem+json"), false),
            (200, Some("text/plain"), false),
            (204, None, false),
            (302, None, false),
        ] {
            let code = StatusCode::from_u16(code).unwrap();
            assert_eq!(
                needs_status(code, &headers(content_type)),
                want,
                "{code} {content_type:?}"
            );
        }
    }

    #[test]
    fn messages() {
        let get = Method::GET;
        let delete = Method::DELETE;
        for (code, method, allow, body, want) in [
            (
                405,
                &delete,
                Some("GET,HEAD"),
                "",
                "method DELETE is not allowed on /api/providers; allowed: GET,HEAD",
            ),
            (
                405,
                &delete,
                None,
                " ",
                "method DELETE is not allowed on /api/providers",
            ),
            (
                400,
                &get,
                None,
                "Failed to deserialize query string: includeToken: provided string was not `true` or `false`\n",
                "Failed to deserialize query string: includeToken: provided string was not `true` or `false`",
            ),
            (406, &get, None, "", "GET /api/providers: not acceptable"),
        ] {
            assert_eq!(
                message(
                    StatusCode::from_u16(code).unwrap(),
                    method,
                    "/api/providers",
                    allow,
                    body
                ),
                want
            );
        }
        let long = "x".repeat(MESSAGE_LIMIT + 10);
        let cut = message(StatusCode::BAD_REQUEST, &get, "/", None, &long);
        assert_eq!(cut.chars().count(), MESSAGE_LIMIT + 1);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn reasons_are_kubernetes() {
        for (code, want) in [
            (405, "MethodNotAllowed"),
            (406, "NotAcceptable"),
            (400, "BadRequest"),
            (418, "BadRequest"),
            (502, "InternalError"),
        ] {
            assert_eq!(reason(StatusCode::from_u16(code).unwrap()), want);
        }
    }

    #[tokio::test]
    async fn an_empty_405_becomes_a_status_and_keeps_allow() {
        let resp = Response::builder()
            .status(405)
            .header(header::ALLOW, "GET,HEAD")
            .body(Body::empty())
            .unwrap();
        let out = ensure(&Method::DELETE, "/api/providers", resp).await;
        assert_eq!(out.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(out.headers()[header::ALLOW], "GET,HEAD");
        assert_eq!(out.headers()[header::CONTENT_TYPE], "application/json");
        let body = axum::body::to_bytes(out.into_body(), 1 << 16).await.unwrap();
        let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["code"], 405);
        assert_eq!(status["reason"], "MethodNotAllowed");
    }
}
