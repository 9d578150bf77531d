//! The three proxy routes: provider UI, provider backend, kcp pass-through.

use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use faros_core::names;
use faros_core::status::Status;
use http::{Method, header};
use http_body_util::Limited;

use super::headers::{self, Forwarded, Mode};
use super::routes::{self, RouteError};
use crate::catalog::registry::Provider;
use crate::server::Peer;
use crate::state::AppState;

fn forwarded(st: &AppState, req: &Request) -> Forwarded {
    Forwarded {
        client_ip: req.extensions().get::<Peer>().map(|p| p.forwarded_for.clone()),
        proto: st.settings.public_proto,
        // The client's `Host` as it came (visible ASCII only), else the HTTP/2 `:authority`.
        host: req
            .headers()
            .get(header::HOST)
            .filter(|h| h.to_str().is_ok())
            .cloned()
            .or_else(|| {
                req.uri()
                    .authority()
                    .and_then(|a| http::HeaderValue::from_str(a.as_str()).ok())
            }),
    }
}

fn route_error(e: RouteError, path: &str) -> Status {
    match e {
        RouteError::NotAProviderPath => Status::not_found_message(format!("no provider route for {path}")),
        RouteError::DotSegment => Status::bad_request(format!("{path}: '.' and '..' path segments are not allowed")),
    }
}

fn lookup(st: &AppState, name: &str) -> Result<Arc<Provider>, Status> {
    let (provider, readiness) = st
        .registry
        .readiness(name)
        .ok_or_else(|| Status::not_found(names::PROVIDERS_GROUP, "providers", name))?;
    if !readiness.ready {
        return Err(Status::unavailable(format!(
            "provider {name:?} is not ready ({})",
            readiness.reason
        )));
    }
    Ok(provider)
}

/// The two provider surfaces the hub proxies to.
#[derive(Clone, Copy)]
enum Surface {
    Ui,
    Backend,
}

/// A provider upstream; named in 502/504 messages, formatted only when one is written.
struct Target<'a> {
    surface: Surface,
    name: &'a str,
}

impl Surface {
    fn noun(self) -> &'static str {
        match self {
            Surface::Ui => "UI",
            Surface::Backend => "backend",
        }
    }
}

impl std::fmt::Display for Target<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the {} of provider {:?}", self.surface.noun(), self.name)
    }
}

/// The Ready provider `uri` names under the surface's prefix, the upstream URL for the rest of
/// the path and where the hub mounts that surface (404 unknown route or provider, or no such
/// endpoint; 503 not Ready; 400 bad path).
fn resolve<'a>(
    st: &AppState,
    uri: &'a http::Uri,
    surface: Surface,
) -> Result<(&'a str, http::Uri, http::HeaderValue), Status> {
    let path = uri.path();
    let prefix = match surface {
        Surface::Ui => routes::UI_PREFIX,
        Surface::Backend => routes::BACKEND_PREFIX,
    };
    let (name, rest) = routes::split(path, prefix).map_err(|e| route_error(e, path))?;
    let provider = lookup(st, name)?;
    let endpoints = &provider.endpoints;
    let base = match surface {
        Surface::Ui => endpoints.ui.as_ref(),
        Surface::Backend => endpoints.backend.as_ref(),
    }
    .ok_or_else(|| Status::not_found_message(format!("provider {name:?} has no {}", surface.noun())))?;
    let target = routes::join(base, rest, uri.query())
        .map_err(|e| Status::bad_request(format!("cannot build the upstream URL: {e}")))?;
    let mount = match surface {
        Surface::Ui => provider.mounts.ui.clone(),
        Surface::Backend => provider.mounts.backend.clone(),
    };
    Ok((name, target, mount))
}

/// Rejects bodies above the limit up front (Content-Length) and caps streamed ones. A body whose
/// size is known not to exceed the limit (an empty one, or one hyper holds to its Content-Length)
/// needs no cap.
fn limit_body(st: &AppState, req: Request) -> Result<Request, Status> {
    let limit = st.settings.body_limit;
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(Status::too_large(format!(
            "request body exceeds the limit of {limit} bytes"
        )));
    }
    if req.body().size_hint().upper().is_some_and(|n| n <= limit as u64) {
        return Ok(req);
    }
    Ok(req.map(|b| Body::new(Limited::new(b, limit))))
}

fn respond(st: &AppState, route: &'static str, started: Instant, result: Result<Response, Status>) -> Response {
    st.metrics.proxied(route, started.elapsed());
    match result {
        Ok(r) => r,
        Err(s) => s.into_response(),
    }
}

/// 508 for a request that already went through a hub's provider proxy (see
/// [`headers::passed_through_hub`]).
fn refuse_loops(req: &Request) -> Result<(), Status> {
    if headers::passed_through_hub(req.headers()) {
        return Err(Status::failure(
            508,
            "LoopDetected",
            "this request already passed through a faros hub's provider proxy: a provider URL leads back to a hub",
        ));
    }
    Ok(())
}

/// `/ui/providers/{name}[/*]`: GET/HEAD of static assets from `ui.url`, anonymous and
/// credential-free ([`super::ui_assets`]).
pub async fn ui(st: &AppState, req: Request, request_id: &http::HeaderValue) -> Response {
    let started = Instant::now();
    let result = async {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return Err(Status::method_not_allowed(format!(
                "{} is not allowed on provider UIs (GET, HEAD)",
                req.method()
            )));
        }
        refuse_loops(&req)?;
        // The provider's root is no page: a UI is modules the portal's frame loads.
        if let Ok((name, "/")) = routes::split(req.uri().path(), routes::UI_PREFIX) {
            return Err(Status::not_found_message(format!(
                "provider {name:?} has no page here: /ui/providers/{name}/ serves the modules of its UI \
                 (main.js and what it loads) to the portal, which shows it at \
                 /portal/orgs/<org>/workspaces/<workspace>/providers/{name}"
            )));
        }
        if super::ui_assets::is_service_worker_fetch(req.headers()) {
            return Err(Status::forbidden(
                "provider UIs cannot register service workers on the hub's origin",
            ));
        }
        // A clone of the URI shares its bytes with the request's; the name borrows from it.
        let uri = req.uri().clone();
        let (name, target, base_path) = resolve(st, &uri, Surface::Ui)?;
        let mode = Mode::Ui { base_path };
        let headers = headers::request_headers(req.headers(), &mode, &forwarded(st, &req));
        let hop = super::Hop {
            pool: &st.providers_http,
            target,
            timeout: st.settings.upstream_timeout,
            what: &Target {
                surface: Surface::Ui,
                name,
            },
        };
        super::forward(hop, req, headers, &mode, request_id).await
    }
    .await;
    let mut resp = respond(st, "ui_proxy", started, result);
    // The portal's provider frame (an opaque origin) reads the hub's Status of a failed load too.
    resp.headers_mut().insert(
        http::header::ACCESS_CONTROL_ALLOW_ORIGIN,
        http::HeaderValue::from_static("*"),
    );
    resp
}

/// `/services/providers/{name}[/*]`: any method to `backend.url` for an authenticated caller, with
/// the verified identity instead of the caller's credentials.
pub async fn backend(st: &AppState, req: Request, request_id: &http::HeaderValue) -> Response {
    let started = Instant::now();
    let result = async {
        // Before anything else: an anonymous caller learns nothing, not even which providers exist.
        let caller = st.authn.authenticate_shared(req.headers()).await?;
        refuse_loops(&req)?;
        let uri = req.uri().clone();
        let (name, target, base_path) = resolve(st, &uri, Surface::Backend)?;
        // Before anything is stripped: the tenant the client names, checked against membership.
        let identity = st
            .tenancy
            .identity_for(&st.registry, &caller, req.headers(), name)
            .await?;
        // The revision the provider's heartbeats say it serves: the one this request reaches.
        let revision = st.registry.reported_revision(name);
        let assertion = st
            .keys
            .sign(&identity, name, revision.as_deref(), faros_core::identity::now_unix())
            .map_err(|e| Status::internal(format!("signing the identity assertion: {e}")))?;
        let mode = Mode::Backend {
            base_path,
            identity,
            assertion,
        };
        let headers = headers::request_headers(req.headers(), &mode, &forwarded(st, &req));
        let req = limit_body(st, req)?;
        let hop = super::Hop {
            pool: &st.providers_http,
            target,
            timeout: st.settings.upstream_timeout,
            what: &Target {
                surface: Surface::Backend,
                name,
            },
        };
        super::forward(hop, req, headers, &mode, request_id).await
    }
    .await;
    respond(st, "backend_proxy", started, result)
}

/// `/clusters/*` and `/services/apiexport/*`: to kcp, the caller's bearer unchanged, once the hub's
/// authenticator has admitted it (a cached TokenReview for most): kcp would accept a faros
/// component's token or an identity provider's `system:` group, which the hub serves at no door.
/// A request without a bearer goes on anonymous, for kcp to answer.
pub async fn kcp(st: &AppState, req: Request, request_id: &http::HeaderValue) -> Response {
    let started = Instant::now();
    let result = async {
        if crate::auth::bearer_token(req.headers()).is_some() {
            st.authn.authenticate_shared(req.headers()).await?;
        }
        let path_and_query = req
            .uri()
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/")
            .to_string();
        let base = st.kcp_base.to_string();
        let target: http::Uri = format!("{}{path_and_query}", base.trim_end_matches('/'))
            .parse()
            .map_err(|e| Status::bad_request(format!("cannot build the kcp URL: {e}")))?;
        let headers = headers::request_headers(req.headers(), &Mode::Kcp, &forwarded(st, &req));
        let req = limit_body(st, req)?;
        let hop = super::Hop {
            pool: &st.kcp_http,
            target,
            timeout: st.settings.kcp_timeout,
            what: &"kcp",
        };
        super::forward(hop, req, headers, &Mode::Kcp, request_id).await
    }
    .await;
    respond(st, "kcp", started, result)
}
