//! The portal: the tenant's web UI, served by the hub from files embedded in its binary
//! (docs/portal.md).
//!
//! - [`assets`]: the portal's ES modules, stylesheet and page (`crates/faros-hub-api/portal/`), no
//!   build step; every path under `/portal/` that is not an asset is the page, whose client-side
//!   router draws it (deep links and reloads work).
//! - [`session`]: the browser session cookie, turned into a bearer by the front door, and CSRF.
//! - [`login`]: `/api/session` (sign-in with a token, session info, sign-out with the identity
//!   provider's RP-initiated logout) and the OIDC authorization-code flow with PKCE.
//! - [`renew`]: OIDC sessions renew their ID token with the refresh token before it expires, once
//!   across replicas.
//! - [`headers`]: the security and cache headers of every portal response.
//! - [`frame`]: the sandboxed document provider UIs run in, on an opaque origin of its own.
//!
//! What it must not do: hold or hand a credential to page scripts (the cookie is HttpOnly), run a
//! provider's code in its own origin (provider UIs run in [`frame`]), or serve under `/ui/providers/` or
//! `/services/providers/` (the proxies' prefixes).

pub mod assets;
pub mod frame;
pub mod grant;
pub mod headers;
pub mod login;
pub mod renew;
pub mod session;
pub mod signed;

use axum::response::{IntoResponse, Redirect, Response};

pub use session::{SessionSettings, Sessions};

/// Where the portal lives.
pub const PREFIX: &str = "/portal";

/// `/` and `/portal`: the portal's page is `/portal/`.
pub async fn to_portal() -> Response {
    Redirect::to("/portal/").into_response()
}

/// Whether `path` is one of the portal's routes (the metrics label `portal`).
pub fn is_portal_path(path: &str) -> bool {
    path == "/"
        || path == PREFIX
        || path.starts_with("/portal/")
        || path == "/api/session"
        || path.starts_with("/api/session/")
}
