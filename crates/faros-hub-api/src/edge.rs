//! The hub's front door: what every request passes (a request ID, a tracing span, the request count
//! by route and status) and the dispatch by path prefix to the proxies or the API router.
//!
//! Both are one hand-written service with one boxed future per request. The proxies are the hub's
//! hot path: as a stack of tower-http and `from_fn` layers in front of an axum router, each layer
//! boxed and cloned per request, this plumbing cost as much CPU as forwarding the request itself.
//! The API routes, where handlers do far more work, keep the router.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use faros_core::identity::JWKS_PATH;
use faros_core::status::Status;
use http::{HeaderName, HeaderValue, Request};
use tower::{Service, ServiceExt};
use tracing::Instrument;

use crate::proxy::{handlers, routes};
use crate::state::AppState;

/// Marks a response of the API router's fallback: the request matched no route (its metrics label
/// is then `other`, whatever the path looked like).
#[derive(Clone, Copy, Debug)]
pub struct Unrouted;

const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The metrics label of a request path. Fixed strings keep the label set bounded.
pub fn route_label(path: &str) -> &'static str {
    match target(path) {
        Target::Ui => "ui_proxy",
        Target::Backend => "backend_proxy",
        Target::Kcp if path.starts_with("/clusters/") => "kcp",
        Target::Kcp => "kcp_apiexport",
        Target::Api => match path {
            p if crate::portal::is_portal_path(p) => "portal",
            "/healthz" | "/readyz" => "health",
            "/metrics" => "metrics",
            JWKS_PATH => "jwks",
            "/api/providers" => "api_providers",
            p if p.starts_with("/api/orgs/") && p.ends_with("/mcp") => "mcp",
            "/api/me" | "/api/orgs" => "tenancy",
            p if p.starts_with("/api/orgs/") => "tenancy",
            p if p.starts_with("/api/providers/") && p.ends_with("/heartbeat") => "heartbeat",
            _ => "other",
        },
    }
}

/// Who serves a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Ui,
    Backend,
    Kcp,
    Api,
}

fn target(path: &str) -> Target {
    // `/ui/providers/<name>` and `/services/providers/<name>` without a slash are proxy routes too.
    let under = |prefix: &str| path.starts_with(prefix) || path == prefix.trim_end_matches('/');
    if under(routes::BACKEND_PREFIX) {
        Target::Backend
    } else if under(routes::UI_PREFIX) {
        Target::Ui
    } else if path.starts_with("/clusters/") || path.starts_with("/services/apiexport/") {
        Target::Kcp
    } else {
        Target::Api
    }
}

/// The hub as one service: see the module docs.
#[derive(Clone)]
pub struct HubService {
    st: AppState,
    api: Router,
}

impl HubService {
    /// `api` serves every path that is not a proxy route.
    pub fn new(st: AppState, api: Router) -> Self {
        Self { st, api }
    }
}

impl Service<Request<Body>> for HubService {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<Body>) -> Self::Future {
        // A client's own ID is kept, so a request can be followed across systems.
        let id = match req.headers().get(&X_REQUEST_ID) {
            Some(id) => id.clone(),
            None => {
                let id = next_request_id();
                req.headers_mut().insert(X_REQUEST_ID, id.clone());
                id
            }
        };
        // Over HTTP/2 and HTTP/1.1 alike, an answer given before the body was read must reach a
        // client that is still sending: the unread rest is drained in the background. A request
        // without a body (most GETs) has nothing left to drain.
        if !axum::body::HttpBody::is_end_stream(req.body()) {
            let (parts, body) = req.into_parts();
            req = Request::from_parts(parts, faros_core::drain::drain_on_drop(body));
        }
        let path = req.uri().path();
        let label = route_label(path);
        let target = target(path);
        // The portal's page and assets are static: served during start-up too, so the browser
        // shows the hub's 503 Status of the API calls instead of a bare JSON page.
        let portal_page = path == "/" || path == crate::portal::PREFIX || path.starts_with("/portal/");
        // A span costs a proxied request about a sixth of the hub's instructions for it (fields
        // formatted, a slab slot, an enter and exit per poll), so at the shipped level (info) the
        // proxies' requests go without one and their warnings name the request themselves
        // (`proxy::forward`); `debug` gives them the span as well. API requests, which do far more
        // work, always have it.
        let span = match target {
            Target::Api => tracing::info_span!(
                "request",
                method = %req.method(),
                path = %path,
                request_id = %id.to_str().unwrap_or_default(),
            ),
            Target::Backend | Target::Ui | Target::Kcp => tracing::debug_span!(
                "request",
                method = %req.method(),
                path = %path,
                request_id = %id.to_str().unwrap_or_default(),
            ),
        };
        let st = self.st.clone();
        let api = self.api.clone();
        Box::pin(
            async move {
                let started = Instant::now();
                // A portal session cookie becomes the request's bearer (REST API and both proxies
                // alike); a cookie-authenticated change without the same-origin proof is refused.
                let refused = crate::portal::session::apply(&st.sessions, st.settings.public_proto, &mut req)
                    .await
                    .err();
                let pending = match (target, label) {
                    // kcp's pass-through answers for kcp itself, which serves before the hub's
                    // tree exists (providers' init reaches their workspace through it).
                    (Target::Kcp, _) => None,
                    // Probes, scrapes and providers' key fetches work during start-up.
                    (_, "health" | "metrics" | "jwks") => None,
                    _ if portal_page => None,
                    // Providers become Ready through their heartbeats: an embedder's hold (which
                    // may wait for exactly that) never applies to them.
                    (_, "heartbeat") => crate::readiness::startup_pending(&st.tree, st.registry.is_synced()),
                    _ => crate::readiness::tenant_pending(&st.tree, st.registry.is_synced()),
                };
                let mut resp = match (refused, pending, target) {
                    (Some(csrf), _, _) => csrf.into_response(),
                    (None, Some(why), _) => Status::unavailable(why)
                        .retry_after(crate::readiness::STARTUP_RETRY_AFTER)
                        .into_response(),
                    (None, None, Target::Backend) => handlers::backend(&st, req, &id).await,
                    (None, None, Target::Ui) => handlers::ui(&st, req, &id).await,
                    (None, None, Target::Kcp) => handlers::kcp(&st, req, &id).await,
                    // Boxed: the router's future would otherwise size (and so the copies of) every
                    // proxied request's future too.
                    (None, None, Target::Api) => {
                        Box::pin(async move {
                            let (method, path) = (req.method().clone(), req.uri().path().to_string());
                            let resp = match api.oneshot(req).await {
                                Ok(resp) => resp,
                                Err(never) => match never {},
                            };
                            // What axum and the MCP transport answer by themselves is a Status too.
                            crate::as_status::ensure(&method, &path, resp).await
                        })
                        .await
                    }
                };
                let matched = resp.extensions().get::<Unrouted>().is_none();
                let code = resp.status();
                st.metrics.request(if matched { label } else { "other" }, code.as_u16());
                resp.headers_mut().entry(X_REQUEST_ID).or_insert(id);
                // At debug even for 5xx: a provider that is not Ready answers 503 to every request;
                // the registry logs readiness changes once instead.
                tracing::debug!(
                    status = code.as_u16(),
                    latency_ms = started.elapsed().as_secs_f64() * 1e3,
                    "served"
                );
                Ok(resp)
            }
            .instrument(span),
        )
    }
}

/// Request IDs shaped like UUIDv4, unique per process without a `getrandom` call per request: a
/// random 64-bit prefix drawn once, and a counter run through a bijection of the 62 low bits
/// (so no two requests of one process share an ID, and IDs do not read as a sequence).
fn next_request_id() -> HeaderValue {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static PREFIX: OnceLock<u64> = OnceLock::new();
    let prefix = *PREFIX.get_or_init(|| uuid::Uuid::new_v4().as_u64_pair().0);
    let id = request_uuid(prefix, COUNTER.fetch_add(1, Ordering::Relaxed));
    let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
    // Hex digits and hyphens are always a valid header value.
    HeaderValue::from_str(id.hyphenated().encode_lower(&mut buf)).unwrap_or(HeaderValue::from_static("-"))
}

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
        assert_eq!(next_request_id().len(), uuid::fmt::Hyphenated::LENGTH);
        assert_ne!(next_request_id(), next_request_id());
    }

    #[test]
    fn route_labels_and_targets() {
        for (path, label, want) in [
            ("/healthz", "health", Target::Api),
            ("/api/providers", "api_providers", Target::Api),
            ("/api/providers/q/heartbeat", "heartbeat", Target::Api),
            ("/api/orgs/a/workspaces/w/mcp", "mcp", Target::Api),
            ("/api/orgs/a/workspaces/w/providers/q/enable", "tenancy", Target::Api),
            ("/api/me", "tenancy", Target::Api),
            ("/ui/providers/q/main.js", "ui_proxy", Target::Ui),
            ("/ui/providers/q", "ui_proxy", Target::Ui),
            ("/ui/providers", "ui_proxy", Target::Ui),
            ("/ui/providersx", "other", Target::Api),
            ("/services/providers/q/api", "backend_proxy", Target::Backend),
            ("/services/providers/q", "backend_proxy", Target::Backend),
            ("/services/apiexport/x/y/clusters/*/apis", "kcp_apiexport", Target::Kcp),
            ("/clusters/root/api/v1/namespaces", "kcp", Target::Kcp),
            ("/clusters", "other", Target::Api),
            ("/.well-known/faros/jwks.json", "jwks", Target::Api),
            ("/nope", "other", Target::Api),
            ("/", "portal", Target::Api),
            ("/portal/orgs/a/workspaces/b/catalog", "portal", Target::Api),
            ("/api/session", "portal", Target::Api),
            ("/api/sessionx", "other", Target::Api),
        ] {
            assert_eq!((route_label(path), target(path)), (label, want), "{path}");
        }
    }
}
