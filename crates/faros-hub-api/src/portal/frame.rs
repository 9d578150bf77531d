//! `/portal/frame?provider=<name>`: the document a provider's UI runs in.
//!
//! A provider's `main.js` is the provider's code. Run in the portal's origin it could use the
//! tenant's session for anything (read a kubeconfig with the tenant's token, make someone org
//! admin, write through `/clusters`; docs/security.md, the `ui_proxy` door). So it runs here instead: a hub-owned page whose
//! CSP begins with `sandbox allow-scripts allow-forms`, which gives it an opaque origin even when
//! opened directly (no cookies, no storage of the hub, requests to the hub without the
//! SameSite=Strict session, no access to the portal), and which lets it load code only from
//! `/ui/providers/<name>/` (plus the bootstrap, `frame.js`) and connect nowhere else. The portal
//! talks to it by postMessage and performs only calls to the provider's own backend for it
//! (`portal/decide.js`, `bridgeRequest`).

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, Uri, header};
use axum::response::{IntoResponse, Response};
use faros_core::names;
use faros_core::status::Status;

use super::assets;
use crate::serving::HttpSettings;
use crate::tenancy::Tenancy;

/// Where the provider frame is served.
pub const FRAME_PATH: &str = "/portal/frame";

#[derive(Debug, serde::Deserialize)]
pub struct FrameQuery {
    provider: String,
}

/// The frame document's Content-Security-Policy for provider `name` on the hub at `origin`.
pub fn csp(origin: &str, name: &str) -> String {
    let ui = format!("{origin}{}/", names::ui_proxy_prefix(name));
    format!(
        "sandbox allow-scripts allow-forms; default-src 'none'; \
         script-src {origin}/portal/assets/frame.js {ui}; style-src {ui} 'unsafe-inline'; \
         img-src {ui} data: blob:; font-src {ui}; media-src {ui}; connect-src {ui}; \
         base-uri 'none'; form-action 'none'; object-src 'none'; frame-src 'none'; \
         worker-src 'none'; manifest-src 'none'; frame-ancestors {origin}"
    )
}

pub async fn document(
    State(tenancy): State<Arc<Tenancy>>,
    State(http): State<HttpSettings>,
    query: Result<Query<FrameQuery>, axum::extract::rejection::QueryRejection>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let run = || -> Result<Response, Status> {
        let Query(q) = query.map_err(|e| Status::bad_request(format!("{FRAME_PATH}: {e}")))?;
        names::validate_dns_label(&q.provider)
            .map_err(|e| Status::bad_request(format!("provider {:?}: {e}", q.provider)))?;
        // The CSP names the hub's origin: in a sandboxed document 'self' names nothing usable.
        let origin = crate::tenancy::kubeconfig::public_url(
            tenancy.settings.public_url.as_deref(),
            &headers,
            &uri,
            http.public_proto,
        )?;
        let mut resp = assets::frame_document(&headers);
        let h = resp.headers_mut();
        let policy = HeaderValue::from_str(&csp(&origin, &q.provider))
            .map_err(|e| Status::internal(format!("building the frame's CSP: {e}")))?;
        h.insert(header::CONTENT_SECURITY_POLICY, policy);
        // For browsers without frame-ancestors: only the portal (same origin) may embed it.
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("SAMEORIGIN"));
        Ok(resp)
    };
    run().unwrap_or_else(IntoResponse::into_response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_confines_the_frame_to_its_provider() {
        let p = csp("https://hub.example", "quickstart");
        let directive = |name: &str| {
            p.split(';')
                .map(str::trim)
                .find(|d| d.split_whitespace().next() == Some(name))
                .unwrap_or_default()
                .to_string()
        };
        assert_eq!(directive("sandbox"), "sandbox allow-scripts allow-forms");
        assert!(!p.contains("allow-same-origin") && !p.contains("allow-top-navigation") && !p.contains("allow-popups"));
        assert_eq!(
            directive("script-src"),
            "script-src https://hub.example/portal/assets/frame.js https://hub.example/ui/providers/quickstart/"
        );
        assert_eq!(
            directive("connect-src"),
            "connect-src https://hub.example/ui/providers/quickstart/"
        );
        assert_eq!(directive("frame-ancestors"), "frame-ancestors https://hub.example");
        assert_eq!(directive("form-action"), "form-action 'none'");
        assert!(!p.contains("/api/") && !p.contains("/services/") && !p.contains("/clusters"));
    }
}
