//! Security and cache headers of every portal response.
//!
//! The CSP allows scripts, styles and connections only from the hub's own origin: no inline
//! scripts (the page has none), no inline `<style>`, no framing of the portal, and frames only of
//! the hub's own documents (the provider frame, [`super::frame`], which sets its own stricter
//! policy and framing rule: those a handler set are kept).

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderName, HeaderValue, header};

/// The portal's Content-Security-Policy.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; \
     frame-src 'self'; frame-ancestors 'none'; object-src 'none'";

/// Adds the security headers; responses that set no cache policy of their own must be revalidated
/// (`no-cache`), so a new hub version is never served stale.
pub async fn secure(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    h.entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.entry(header::X_FRAME_OPTIONS)
        .or_insert(HeaderValue::from_static("DENY"));
    h.insert(
        HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-cache"));
    resp
}
