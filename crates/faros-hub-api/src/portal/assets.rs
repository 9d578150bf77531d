//! The portal's files, embedded at build time. Each is served with a strong `ETag` (its SHA-256)
//! and `Cache-Control: no-cache`: browsers revalidate every load and get `304` until the hub
//! binary changes.

use std::sync::OnceLock;

use axum::body::Body;
use axum::extract::Path;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use faros_core::status::Status;
use http::{HeaderValue, StatusCode, header};
use sha2::{Digest, Sha256};

macro_rules! asset {
    ($name:literal, $ty:literal) => {
        ($name, $ty, include_str!(concat!("../../portal/", $name)))
    };
}

/// (file name, content type, content).
const FILES: &[(&str, &str, &str)] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("portal.css", "text/css; charset=utf-8"),
    asset!("app.js", "text/javascript; charset=utf-8"),
    asset!("api.js", "text/javascript; charset=utf-8"),
    asset!("dom.js", "text/javascript; charset=utf-8"),
    asset!("decide.js", "text/javascript; charset=utf-8"),
    asset!("signin.js", "text/javascript; charset=utf-8"),
    asset!("shell.js", "text/javascript; charset=utf-8"),
    asset!("catalog.js", "text/javascript; charset=utf-8"),
    asset!("provider.js", "text/javascript; charset=utf-8"),
    asset!("workspace.js", "text/javascript; charset=utf-8"),
    asset!("logo.svg", "image/svg+xml"),
];

fn etags() -> &'static [String] {
    static TAGS: OnceLock<Vec<String>> = OnceLock::new();
    TAGS.get_or_init(|| {
        FILES
            .iter()
            .map(|(_, _, body)| {
                let d = Sha256::digest(body.as_bytes());
                let hex: String = d[..16].iter().map(|b| format!("{b:02x}")).collect();
                format!("\"{hex}\"")
            })
            .collect()
    })
}

fn serve(index: usize, headers: &HeaderMap) -> Response {
    let (_, ty, body) = FILES[index];
    let etag = &etags()[index];
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let mut resp = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        Response::new(Body::from(body))
    };
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ty));
    if let Ok(v) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// The portal page, for `/portal/` and every client-side route under it.
pub async fn page(headers: HeaderMap) -> Response {
    serve(0, &headers)
}

/// `/portal/assets/<file>`.
pub async fn asset(Path(file): Path<String>, headers: HeaderMap) -> Response {
    match FILES
        .iter()
        .position(|(name, _, _)| *name == file && *name != "index.html")
    {
        Some(i) => serve(i, &headers),
        None => Status::not_found_message(format!("no portal asset {file:?}")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_no_inline_script_or_style() {
        let page = FILES[0].2;
        for (i, _) in page.match_indices("<script") {
            let tag = &page[i..i + page[i..].find('>').unwrap_or(0)];
            assert!(tag.contains("src="), "inline script in index.html: {tag}");
        }
        assert!(!page.contains("<style"), "inline style in index.html");
        assert!(!page.contains("style=\""), "style attribute in index.html");
        assert_eq!(etags().len(), FILES.len());
    }
}
