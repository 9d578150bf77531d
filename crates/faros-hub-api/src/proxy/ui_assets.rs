//! What the UI proxy lets through, IO-free: provider UIs are static assets, never documents.
//!
//! `/ui/providers/<name>/*` is on the hub's origin and anonymous. Anything it served as a document
//! (HTML, or SVG and XML, which run scripts when opened) or as a service-worker script would run as
//! the hub itself, with the portal's session at hand. So the proxy serves only asset types, marks
//! every answer inert if opened directly (`Content-Security-Policy: sandbox; default-src 'none'`,
//! which browsers ignore for subresources), forbids sniffing, refuses service-worker script fetches,
//! and forwards only the request and response headers an asset needs (an allow-list: a provider
//! cannot set cookies, HSTS, `Service-Worker-Allowed`, `Clear-Site-Data` or CORS of its own on the
//! hub's origin, and the caller's cookies and credentials never reach it).
//!
//! The provider's code runs in the portal's sandboxed frame, an opaque origin, which loads these
//! assets cross-origin: hence `Access-Control-Allow-Origin: *` (ES modules are fetched with CORS)
//! and `Cross-Origin-Resource-Policy: cross-origin`. Both are safe because the answers are public
//! and credential-free by construction.

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

/// Request headers a static asset fetch needs; everything else stays with the hub.
const REQUEST_ALLOW: &[&str] = &[
    "accept",
    "accept-encoding",
    "accept-language",
    "cache-control",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "range",
    "user-agent",
];

/// Response headers describing an asset; everything else from the provider is dropped.
const RESPONSE_ALLOW: &[&str] = &[
    "accept-ranges",
    "age",
    "cache-control",
    "content-encoding",
    "content-length",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expires",
    "last-modified",
    "vary",
];

/// The policy that makes any answer inert when opened as a document.
pub const ASSET_CSP: &str = "sandbox; default-src 'none'";

/// Whether a request header may go to a provider's UI upstream.
pub fn request_header_allowed(name: &HeaderName) -> bool {
    REQUEST_ALLOW.contains(&name.as_str())
}

/// Why an upstream answer is not served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A media type that is not a static asset (HTML, SVG, XML, none at all…).
    NotAnAsset { content_type: String },
    /// More than one media type: browsers combine the headers and take the last type they parse,
    /// which need not be the one checked.
    SeveralTypes,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotAnAsset { content_type } => {
                write!(
                    f,
                    "the upstream answered with {content_type:?}, which is not a static asset type"
                )
            }
            Refusal::SeveralTypes => f.write_str("the upstream answered with more than one Content-Type"),
        }
    }
}

/// The essence of a `Content-Type`: `type/subtype`, lower-case, without parameters.
fn essence(value: &str) -> String {
    value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase()
}

/// Whether `media_type` (an essence) is a static asset the proxy may serve: scripts, styles,
/// images, fonts, JSON, WebAssembly and plain text; never a document type (`text/html`, any `xml`).
/// SVG is the one image that is also a document (it can carry scripts): it is served because
/// catalog icons are SVG, and it is inert when opened directly, under [`ASSET_CSP`]'s sandbox.
pub fn is_asset(media_type: &str) -> bool {
    matches!(
        media_type,
        "text/javascript"
            | "application/javascript"
            | "application/x-javascript"
            | "text/ecmascript"
            | "application/ecmascript"
            | "text/css"
            | "application/json"
            | "application/manifest+json"
            | "application/wasm"
            | "text/plain"
            | "application/octet-stream"
            | "image/svg+xml"
            | "image/png"
            | "image/jpeg"
            | "image/gif"
            | "image/webp"
            | "image/avif"
            | "image/x-icon"
            | "image/vnd.microsoft.icon"
            | "font/woff"
            | "font/woff2"
            | "font/ttf"
            | "font/otf"
            | "application/font-woff"
    )
}

/// Checks an upstream answer: at most one `Content-Type`, holding one media type (the Fetch
/// standard splits a value at commas too and keeps the last type). Answers without a body to
/// interpret (`304`, `204`) pass; any other answer must declare an asset type.
pub fn check_response(status: http::StatusCode, headers: &HeaderMap) -> Result<(), Refusal> {
    let mut types = headers.get_all(header::CONTENT_TYPE).iter();
    let first = types.next();
    if types.next().is_some() || first.is_some_and(|v| v.as_bytes().contains(&b',')) {
        return Err(Refusal::SeveralTypes);
    }
    if status == http::StatusCode::NOT_MODIFIED || status == http::StatusCode::NO_CONTENT {
        return Ok(());
    }
    let content_type = first.and_then(|v| v.to_str().ok()).map(essence).unwrap_or_default();
    if is_asset(&content_type) {
        Ok(())
    } else {
        Err(Refusal::NotAnAsset {
            content_type: if content_type.is_empty() {
                "no Content-Type".into()
            } else {
                content_type
            },
        })
    }
}

/// Keeps only the allowed response headers and adds the hub's.
pub fn rewrite_response(headers: &mut HeaderMap) {
    let drop: Vec<HeaderName> = headers
        .keys()
        .filter(|n| !RESPONSE_ALLOW.contains(&n.as_str()))
        .cloned()
        .collect();
    for name in drop {
        headers.remove(name);
    }
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(ASSET_CSP));
    headers.insert(
        HeaderName::from_static("cross-origin-resource-policy"),
        HeaderValue::from_static("cross-origin"),
    );
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
}

/// Whether the browser is fetching a service-worker script (`Service-Worker: script`): refused,
/// so no script of a provider can ever control pages of the hub's origin.
pub fn is_service_worker_fetch(headers: &HeaderMap) -> bool {
    headers.contains_key(HeaderName::from_static("service-worker"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use http::StatusCode;

    fn with_type(ct: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(ct) = ct {
            h.insert(header::CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
        }
        h
    }

    #[test]
    fn only_assets_are_served() {
        for (status, ct, ok) in [
            (StatusCode::OK, Some("text/javascript; charset=utf-8"), true),
            (StatusCode::OK, Some("Application/JavaScript"), true),
            (StatusCode::OK, Some("text/css"), true),
            (StatusCode::OK, Some("image/png"), true),
            (StatusCode::OK, Some("font/woff2"), true),
            (StatusCode::OK, Some("application/json"), true),
            (StatusCode::NOT_FOUND, Some("text/plain"), true),
            (StatusCode::OK, Some("text/html"), false),
            (StatusCode::OK, Some("text/html; charset=utf-8"), false),
            (StatusCode::NOT_FOUND, Some("text/html"), false),
            (StatusCode::OK, Some("image/svg+xml"), true),
            (StatusCode::OK, Some("application/xhtml+xml"), false),
            (StatusCode::OK, Some("text/xml"), false),
            (StatusCode::OK, Some("multipart/x-mixed-replace"), false),
            (StatusCode::OK, None, false),
            (StatusCode::NOT_MODIFIED, None, true),
            (StatusCode::NO_CONTENT, None, true),
        ] {
            assert_eq!(check_response(status, &with_type(ct)).is_ok(), ok, "{status} {ct:?}");
        }
        // Two headers, or two types in one: browsers take the last, so neither passes.
        for (first, second) in [
            ("text/javascript", Some("text/html")),
            ("text/javascript", Some("text/javascript")),
            ("text/javascript, text/html", None),
            ("text/plain,text/html", None),
        ] {
            let mut h = with_type(Some(first));
            if let Some(second) = second {
                h.append(header::CONTENT_TYPE, HeaderValue::from_str(second).unwrap());
            }
            for status in [StatusCode::OK, StatusCode::NOT_MODIFIED] {
                assert_eq!(
                    check_response(status, &h),
                    Err(Refusal::SeveralTypes),
                    "{status} {first} {second:?}"
                );
            }
        }
        assert_eq!(
            check_response(StatusCode::OK, &with_type(Some("text/html")))
                .unwrap_err()
                .to_string(),
            "the upstream answered with \"text/html\", which is not a static asset type"
        );
    }

    #[test]
    fn responses_keep_only_asset_headers() {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("content-type", "text/javascript"),
            ("etag", "\"1\""),
            ("cache-control", "max-age=60"),
            ("set-cookie", "session=evil"),
            ("service-worker-allowed", "/"),
            ("strict-transport-security", "max-age=1"),
            ("clear-site-data", "\"*\""),
            ("access-control-allow-origin", "https://evil.example"),
            ("access-control-allow-credentials", "true"),
            ("content-security-policy", "script-src *"),
            ("refresh", "0;url=https://evil.example"),
            ("location", "https://evil.example"),
        ] {
            h.append(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        rewrite_response(&mut h);
        let got = crate::proxy::test_support::sorted(&h);
        assert_eq!(
            got,
            [
                ("access-control-allow-origin", "*"),
                ("cache-control", "max-age=60"),
                ("content-security-policy", ASSET_CSP),
                ("content-type", "text/javascript"),
                ("cross-origin-resource-policy", "cross-origin"),
                ("etag", "\"1\""),
                ("referrer-policy", "no-referrer"),
                ("x-content-type-options", "nosniff"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
        );
    }

    #[test]
    fn request_headers_by_allow_list() {
        for (name, ok) in [
            ("accept", true),
            ("if-none-match", true),
            ("range", true),
            ("cookie", false),
            ("authorization", false),
            ("metadata-flavor", false),
            ("x-aws-ec2-metadata-token", false),
            ("origin", false),
            ("x-faros-user", false),
        ] {
            assert_eq!(request_header_allowed(&HeaderName::from_static(name)), ok, "{name}");
        }
        let mut sw = HeaderMap::new();
        assert!(!is_service_worker_fetch(&sw));
        sw.insert(
            HeaderName::from_static("service-worker"),
            HeaderValue::from_static("script"),
        );
        assert!(is_service_worker_fetch(&sw));
    }
}
