//! Shared request state and the API router: which route is public, which is authenticated.
//! The proxies and the layers every request passes are in [`crate::edge`].

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use faros_core::identity::JWKS_PATH;
use faros_core::status::Status;
use http::{HeaderValue, header};

use crate::auth::{Authenticator, require_caller};
use crate::edge::HubService;
use crate::keys::KeyStore;
use crate::metrics::Metrics;
use crate::proxy::Upstream;
use crate::registry::Registry;
use crate::tokenreview::TokenReviewer;
use crate::{api, heartbeat};

/// Limits and timeouts of the HTTP surface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpSettings {
    /// Longest wait for a provider upstream's response headers (then 504).
    pub upstream_timeout: Duration,
    /// Longest wait for kcp's response headers on the pass-through (watches send headers at once).
    pub kcp_timeout: Duration,
    /// Largest request body forwarded to a provider or kcp (then 413).
    pub body_limit: usize,
    /// Scheme the hub is served with, for `X-Forwarded-Proto`.
    pub public_proto: &'static str,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            upstream_timeout: Duration::from_secs(30),
            kcp_timeout: Duration::from_secs(30),
            body_limit: 10 * 1024 * 1024,
            public_proto: "https",
        }
    }
}

/// Everything a handler needs.
pub struct Shared {
    pub registry: Arc<Registry>,
    /// Whether the faros workspace tree is bootstrapped ([`crate::readiness`]).
    pub tree: Arc<crate::readiness::TreeGate>,
    pub authn: Arc<dyn Authenticator>,
    /// Reviews heartbeat tokens in provider workspaces.
    pub reviewer: Arc<dyn TokenReviewer>,
    pub keys: Arc<KeyStore>,
    pub metrics: Arc<Metrics>,
    pub providers_http: Upstream,
    pub kcp_http: Upstream,
    /// kcp's server root (scheme, authority and any path prefix).
    pub kcp_base: http::Uri,
    pub settings: HttpSettings,
    /// Organizations, workspaces, membership, Enable/Disable, MCP federation.
    pub tenancy: Arc<crate::tenancy::Tenancy>,
    /// MCP federation; set once by [`crate::Hub::new`] (it needs the finished state).
    pub mcp: std::sync::OnceLock<Arc<crate::mcp::Federation>>,
}

/// Cheap-to-clone handle on [`Shared`].
pub type AppState = Arc<Shared>;

/// Marks a response of the API router's fallback: the request matched no route.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Unrouted;

async fn healthz() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], r#"{"status":"ok"}"#).into_response()
}

async fn readyz(State(st): State<AppState>) -> Response {
    if st.tree.state() == crate::readiness::TreeState::Waiting {
        return Status::unavailable(crate::readiness::waiting_message()).into_response();
    }
    if st.registry.is_synced() {
        "ok".into_response()
    } else {
        Status::unavailable("the catalog registry has not synced with kcp yet").into_response()
    }
}

async fn metrics(State(st): State<AppState>) -> Response {
    match st.metrics.encode() {
        Ok(text) => {
            let mut resp = text.into_response();
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
            );
            resp
        }
        Err(e) => Status::internal(format!("encoding metrics: {e}")).into_response(),
    }
}

async fn jwks(State(st): State<AppState>) -> Response {
    let mut resp = axum::Json(st.keys.jwks()).into_response();
    // Short: providers refetch on unknown kids anyway, and rotation should spread quickly.
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=60"));
    resp
}

async fn not_found(req: Request) -> Response {
    let mut resp =
        Status::not_found_message(format!("no route for {} {}", req.method(), req.uri().path())).into_response();
    resp.extensions_mut().insert(Unrouted);
    resp
}

/// The hub's API routes: everything but the proxies, which [`HubService`] dispatches by prefix
/// before this router. Public: health, metrics, JWKS, heartbeats (authenticated by their own
/// ServiceAccount rule). Everything else goes through the [`Authenticator`].
pub fn router(st: AppState) -> Router {
    let authn = st.authn.clone();
    let authenticated = Router::new()
        .route("/api/providers", get(api::list))
        .merge(crate::tenancy::routes::router());
    let authenticated = match st.mcp.get() {
        Some(fed) => authenticated.merge(crate::mcp::routes(fed.clone())),
        None => authenticated,
    }
    // route_layer: unmatched paths 404 without asking for credentials.
    .route_layer(middleware::from_fn_with_state(authn, require_caller));
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route(JWKS_PATH, get(jwks))
        .route("/api/providers/{name}/heartbeat", post(heartbeat::heartbeat))
        .merge(authenticated)
        .fallback(not_found)
        .with_state(st)
}

/// The whole hub: the proxies and [`router`] behind the layers every request passes.
pub fn service(st: AppState) -> HubService {
    HubService::new(st.clone(), router(st))
}
