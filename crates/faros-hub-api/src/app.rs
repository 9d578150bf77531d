//! Shared request state and the router: which route is public, which is authenticated, and the
//! layers every request passes (request ID, tracing, metrics).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use faros_core::identity::JWKS_PATH;
use faros_core::status::Status;
use http::{HeaderValue, header};
use tower::ServiceBuilder;
use tower_http::request_id::{MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer};
use tower_http::trace::{DefaultOnFailure, TraceLayer};

use crate::auth::{Authenticator, require_caller};
use crate::keys::KeyStore;
use crate::metrics::Metrics;
use crate::proxy::Upstream;
use crate::registry::Registry;
use crate::tokenreview::TokenReviewer;
use crate::{api, heartbeat, proxy};

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

/// The metrics label of a request path. Fixed strings keep the label set bounded.
pub fn route_label(path: &str) -> &'static str {
    match path {
        "/healthz" | "/readyz" => "health",
        "/metrics" => "metrics",
        JWKS_PATH => "jwks",
        "/api/providers" => "api_providers",
        p if p.starts_with("/api/orgs/") && p.ends_with("/mcp") => "mcp",
        "/api/me" | "/api/orgs" => "tenancy",
        p if p.starts_with("/api/orgs/") => "tenancy",
        p if p.starts_with("/api/providers/") && p.ends_with("/heartbeat") => "heartbeat",
        p if p.starts_with("/ui/providers/") => "ui_proxy",
        p if p.starts_with("/services/providers/") => "backend_proxy",
        p if p.starts_with("/clusters/") => "kcp",
        p if p.starts_with("/services/apiexport/") => "kcp_apiexport",
        _ => "other",
    }
}

/// Marks a response of the router's fallback: the request matched no route.
#[derive(Clone, Copy, Debug)]
struct Unrouted;

/// Counts every request by route and status. It wraps the whole router (see [`router`]), so it
/// learns that no route matched from the fallback's [`Unrouted`] marker, not from `MatchedPath`.
async fn count(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let label = route_label(req.uri().path());
    let resp = next.run(req).await;
    let matched = resp.extensions().get::<Unrouted>().is_none();
    st.metrics
        .request(if matched { label } else { "other" }, resp.status().as_u16());
    resp
}

/// Request IDs shaped like UUIDv4, unique per process without a `getrandom` call per request: a
/// random 64-bit prefix drawn once, and a counter run through a bijection of the 62 low bits
/// (so no two requests of one process share an ID, and IDs do not read as a sequence).
#[derive(Clone, Copy, Debug, Default)]
pub struct FastRequestId;

static REQUEST_COUNTER: AtomicU64 = AtomicU64::new(0);
static REQUEST_PREFIX: OnceLock<u64> = OnceLock::new();

const LOW62: u64 = (1 << 62) - 1;

/// A bijection of `0..2^62`: odd multipliers and xor-shifts are each invertible modulo 2^62.
fn scramble62(mut x: u64) -> u64 {
    x &= LOW62;
    x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15) & LOW62;
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9) & LOW62;
    x ^= x >> 32;
    x
}

/// The UUID of the `n`th request under `prefix`: version 4, RFC 4122 variant.
fn request_uuid(prefix: u64, n: u64) -> uuid::Uuid {
    let high = (prefix & !0xF000) | 0x4000;
    let low = scramble62(n) | (0b10 << 62);
    uuid::Uuid::from_u64_pair(high, low)
}

impl MakeRequestId for FastRequestId {
    fn make_request_id<B>(&mut self, _: &http::Request<B>) -> Option<RequestId> {
        let prefix = *REQUEST_PREFIX.get_or_init(|| uuid::Uuid::new_v4().as_u64_pair().0);
        let id = request_uuid(prefix, REQUEST_COUNTER.fetch_add(1, Ordering::Relaxed));
        let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
        HeaderValue::from_str(id.hyphenated().encode_lower(&mut buf))
            .ok()
            .map(RequestId::new)
    }
}

async fn healthz() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], r#"{"status":"ok"}"#).into_response()
}

async fn readyz(State(st): State<AppState>) -> Response {
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

/// The hub router. Public: health, metrics, JWKS, heartbeats (authenticated by their own
/// ServiceAccount rule), provider UIs (static assets, never credentialed) and the kcp
/// pass-through (kcp authenticates). Everything else goes through the [`Authenticator`].
pub fn router(st: AppState) -> Router {
    let authn = st.authn.clone();
    let authenticated = Router::new()
        .route("/api/providers", get(api::list))
        .route("/services/providers/{name}", any(proxy::handlers::backend))
        .route("/services/providers/{name}/", any(proxy::handlers::backend))
        .route("/services/providers/{name}/{*rest}", any(proxy::handlers::backend))
        .merge(crate::tenancy::routes::router());
    let authenticated = match st.mcp.get() {
        Some(fed) => authenticated.merge(crate::mcp::routes(fed.clone())),
        None => authenticated,
    }
    // route_layer: unmatched paths 404 without asking for credentials.
    .route_layer(middleware::from_fn_with_state(authn, require_caller));
    let routes = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route(JWKS_PATH, get(jwks))
        .route("/api/providers/{name}/heartbeat", post(heartbeat::heartbeat))
        .route("/ui/providers/{name}", any(proxy::handlers::ui))
        .route("/ui/providers/{name}/", any(proxy::handlers::ui))
        .route("/ui/providers/{name}/{*rest}", any(proxy::handlers::ui))
        .route("/clusters/{*rest}", any(proxy::handlers::kcp))
        .route("/services/apiexport/{*rest}", any(proxy::handlers::kcp))
        .merge(authenticated)
        .fallback(not_found)
        .with_state(st.clone());
    // The layers every request passes wrap the finished router once. `Router::layer` would wrap each
    // route instead, and every layer would then box and clone the route's service per request.
    let layered = ServiceBuilder::new()
        .layer(SetRequestIdLayer::x_request_id(FastRequestId))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &Request| {
                    let id = req
                        .headers()
                        .get("x-request-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default();
                    tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id = %id)
                })
                // A not-Ready provider answers 503 on every request; readiness changes are logged
                // once by the registry instead.
                .on_failure(DefaultOnFailure::new().level(tracing::Level::DEBUG)),
        )
        .layer(middleware::from_fn_with_state(st, count))
        .service(routes);
    Router::new().fallback_service(layered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_v4_uuids_unique_per_process() {
        let mut seen = std::collections::HashSet::new();
        for n in 0..10_000 {
            let id = request_uuid(0xFFFF_FFFF_FFFF_FFFF, n);
            assert_eq!(id.get_version_num(), 4, "{id}");
            assert_eq!(id.get_variant(), uuid::Variant::RFC4122, "{id}");
            assert!(seen.insert(id), "duplicate {id} at {n}");
        }
        // Counters that differ only above bit 62 would collide; they are 2^62 requests apart.
        assert_eq!(scramble62(0), 0);
        assert_ne!(scramble62(1), 1);
        let made = FastRequestId.make_request_id(&http::Request::new(())).unwrap();
        assert_eq!(made.header_value().len(), uuid::fmt::Hyphenated::LENGTH);
    }

    #[test]
    fn route_labels() {
        for (path, want) in [
            ("/healthz", "health"),
            ("/api/providers", "api_providers"),
            ("/api/providers/q/heartbeat", "heartbeat"),
            ("/api/orgs/a/workspaces/w/mcp", "mcp"),
            ("/api/orgs/a/workspaces/w/providers/q/enable", "tenancy"),
            ("/api/me", "tenancy"),
            ("/ui/providers/q/main.js", "ui_proxy"),
            ("/services/providers/q/api", "backend_proxy"),
            ("/services/apiexport/x/y/clusters/*/apis", "kcp_apiexport"),
            ("/clusters/root/api/v1/namespaces", "kcp"),
            ("/.well-known/faros/jwks.json", "jwks"),
            ("/nope", "other"),
        ] {
            assert_eq!(route_label(path), want, "{path}");
        }
    }
}
