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
    asset!("members.js", "text/javascript; charset=utf-8"),
    asset!("state.js", "text/javascript; charset=utf-8"),
    asset!("nav.js", "text/javascript; charset=utf-8"),
    asset!("theme.js", "text/javascript; charset=utf-8"),
    asset!("notfound.js", "text/javascript; charset=utf-8"),
    asset!("logo.svg", "image/svg+xml"),
    asset!("frame.js", "text/javascript; charset=utf-8"),
    asset!("frame.html", "text/html; charset=utf-8"),
];

/// Index of the provider frame's document in [`FILES`] (served by [`super::frame`], never as an asset).
const FRAME_HTML: usize = FILES.len() - 1;

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

/// The provider frame's document (its headers are [`super::frame`]'s to add).
pub fn frame_document(headers: &HeaderMap) -> Response {
    serve(FRAME_HTML, headers)
}

/// `/portal/assets/<file>`: scripts, styles and images; never a document.
pub async fn asset(Path(file): Path<String>, headers: HeaderMap) -> Response {
    match FILES
        .iter()
        .position(|(name, _, _)| *name == file && !name.ends_with(".html"))
    {
        Some(i) => {
            let mut resp = serve(i, &headers);
            if file == "frame.js" {
                // Loaded as a module by the provider frame, whose origin is opaque: CORS must say
                // yes. It is public code, fetched without credentials.
                resp.headers_mut()
                    .insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
            }
            resp
        }
        None => Status::not_found_message(format!("no portal asset {file:?}")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pages_have_no_inline_script_or_style() {
        for page in [FILES[0].2, FILES[FRAME_HTML].2] {
            for (i, _) in page.match_indices("<script") {
                let tag = &page[i..i + page[i..].find('>').unwrap_or(0)];
                assert!(tag.contains("src="), "inline script: {tag}");
            }
            assert!(!page.contains("<style"), "inline style");
            assert!(!page.contains("style=\""), "style attribute");
        }
        assert_eq!(FILES[FRAME_HTML].0, "frame.html");
        assert_eq!(etags().len(), FILES.len());
    }
}
