//! The API router: which route is public, which is authenticated. The proxies and the layers every
//! request passes are in [`crate::edge`]; the state handlers read is in [`crate::state`].

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use faros_core::identity::JWKS_PATH;
use faros_core::status::Status;
use http::{HeaderValue, header};

use crate::auth::require_caller;
use crate::catalog::{heartbeat, list};
use crate::edge::{HubService, Unrouted};
use crate::state::AppState;

async fn healthz() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], r#"{"status":"ok"}"#).into_response()
}

async fn readyz(State(st): State<AppState>) -> Response {
    if st.tree.state() == crate::readiness::TreeState::Waiting {
        return Status::unavailable(crate::readiness::waiting_message()).into_response();
    }
    if let Some(why) = st.tree.held() {
        return Status::unavailable(why).into_response();
    }
    if !st.registry.is_synced() {
        return Status::unavailable("the catalog registry has not synced with kcp yet").into_response();
    }
    if !st.registry.first_probes_done() {
        return Status::unavailable("the first health probes of the providers' backends are running").into_response();
    }
    "ok".into_response()
}

async fn metrics(State(st): State<AppState>) -> Response {
    st.metrics.response()
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
/// ServiceAccount rule). Everything else goes through the [`Authenticator`](crate::auth::Authenticator).
pub fn router(st: AppState) -> Router {
    router_with(st, true)
}

/// [`router`], with `/metrics` only when `public_metrics` (otherwise [`metrics_router`] serves it on
/// its own listener and the public port answers 404 for it).
pub fn router_with(st: AppState, public_metrics: bool) -> Router {
    let authn = st.authn.clone();
    let authenticated = Router::new()
        .route("/api/providers", get(list::list))
        .merge(crate::tenancy::routes::router());
    let authenticated = authenticated
        .merge(crate::mcp::routes(st.mcp.clone()))
        // route_layer: unmatched paths 404 without asking for credentials.
        .route_layer(middleware::from_fn_with_state(authn, require_caller));
    let public = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz));
    let public = if public_metrics {
        public.route("/metrics", get(metrics))
    } else {
        public
    };
    public
        .route(JWKS_PATH, get(jwks))
        .route("/api/providers/{name}/heartbeat", post(heartbeat::heartbeat))
        .merge(authenticated)
        .merge(crate::portal::router(st.clone()))
        .fallback(not_found)
        .with_state(st)
}

/// The whole hub: the proxies and [`router`] behind the layers every request passes.
pub fn service(st: AppState) -> HubService {
    service_with(st, true)
}

/// [`service`], with `/metrics` on the public listener only when `public_metrics`.
pub fn service_with(st: AppState, public_metrics: bool) -> HubService {
    HubService::new(st.clone(), router_with(st, public_metrics))
}

/// `/metrics` alone, for the separate metrics listener.
pub fn metrics_router(st: AppState) -> Router {
    Router::new().route("/metrics", get(metrics)).with_state(st)
}
