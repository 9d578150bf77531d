//! The API router, built from one table per route group ([`GROUPS`]): each row names a route's
//! method, path, who may call it and the handler that serves it. The router applies the row's
//! [`Access`] itself, so no handler checks authentication by hand; the same tables are the route
//! list of docs/hub-api.md ([`markdown`], compared by `tests/routes.rs`) and what the route tests
//! iterate (every route that is not public refuses a request without credentials).
//!
//! This is the top of the crate with [`crate::state`]: it imports the subsystems' handlers, and they
//! extract only the sub-state they use. The proxies and the layers every request passes are in
//! [`crate::edge`], which dispatches by path prefix before this router.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter, any, get, on};
use axum::{Extension, Router};
use faros_core::identity::JWKS_PATH;
use faros_core::status::Status;
use http::{HeaderValue, header};

use crate::auth::{Authenticator, Caller, require_caller};
use crate::catalog::{heartbeat, list};
use crate::edge::{HubService, Unrouted};
use crate::mcp::routes::{MCP_ROUTE, handle as mcp};
use crate::portal::frame::{FRAME_PATH, document as frame};
use crate::portal::login::{self, CALLBACK, LOGOUT};
use crate::portal::{assets, headers, to_portal};
use crate::state::AppState;
use crate::tenancy::enable::handlers as enable;
use crate::tenancy::{kubeconfig, me, members, orgs};

/// Who may call a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Anyone; no credentials are asked for.
    Public,
    /// The provider's own ServiceAccount: the handler reviews the bearer in the provider's
    /// workspace (a provider is no hub user, so the [`Authenticator`] does not apply).
    ProviderServiceAccount,
    /// Any caller the [`Authenticator`] accepts (401 otherwise), users and ServiceAccounts alike;
    /// what they may do in a workspace is kcp's answer, asked by the handler.
    Caller,
    /// A caller who is a user, not a ServiceAccount (403 for a workload, saying it may not do
    /// this act): owning organizations and granting membership are a person's acts, whatever RBAC
    /// a workload holds.
    User(&'static str),
}

impl Access {
    /// Whether the route needs credentials at all.
    pub fn is_public(self) -> bool {
        self == Access::Public
    }

    fn describe(self) -> String {
        match self {
            Access::Public => "anyone".into(),
            Access::ProviderServiceAccount => "the provider's own ServiceAccount".into(),
            Access::Caller => "caller".into(),
            Access::User(_) => "caller, users only (ServiceAccounts: 403)".into(),
        }
    }
}

/// The HTTP method of a route; `Any` hands every method to the handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    Get,
    Post,
    Put,
    Delete,
    Any,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Any => "*",
        }
    }

    fn filter(self) -> MethodFilter {
        match self {
            Method::Get | Method::Any => MethodFilter::GET,
            Method::Post => MethodFilter::POST,
            Method::Put => MethodFilter::PUT,
            Method::Delete => MethodFilter::DELETE,
        }
    }
}

/// One route: a row of a group's table.
#[derive(Clone, Copy)]
pub struct Route {
    pub method: Method,
    pub path: &'static str,
    pub access: Access,
    /// What it answers, for the docs.
    pub what: &'static str,
    /// Serves the row's method with its handler.
    serve: fn(MethodFilter) -> MethodRouter<AppState>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} ({:?})", self.method.as_str(), self.path, self.access)
    }
}

/// A group of routes that share a purpose (and, for the portal's, its response headers).
#[derive(Debug)]
pub struct Group {
    pub name: &'static str,
    pub routes: &'static [Route],
    /// Every response gets the portal's security and cache headers ([`headers::secure`]).
    pub portal_headers: bool,
}

macro_rules! route {
    (ANY $path:expr, $access:expr, $handler:expr, $what:expr) => {
        Route {
            method: Method::Any,
            path: $path,
            access: $access,
            what: $what,
            serve: |_| any($handler),
        }
    };
    ($method:ident $path:expr, $access:expr, $handler:expr, $what:expr) => {
        Route {
            method: Method::$method,
            path: $path,
            access: $access,
            what: $what,
            serve: |filter| on(filter, $handler),
        }
    };
}

/// Where `/metrics` is served: on the public listener, or on its own ([`metrics_router`]).
const METRICS_PATH: &str = "/metrics";

/// Probes, scrapes and the assertion keys: public (the scrape on the public port asks for a
/// credential), and served during start-up.
pub const OPERATIONS: Group = Group {
    name: "operations",
    portal_headers: false,
    routes: &[
        route!(Get "/healthz", Access::Public, healthz, "`{\"status\":\"ok\"}` while the process serves"),
        route!(Get "/readyz", Access::Public, readyz, "200 once the hub can serve tenants, else 503 naming what is missing (Start-up)"),
        route!(Get METRICS_PATH, Access::Caller, metrics, "OpenMetrics, when not on `--metrics-listen` (Metrics); the separate listener asks for no credential"),
        route!(Get JWKS_PATH, Access::Public, jwks, "public keys of the identity assertion (`Cache-Control: max-age=60`)"),
    ],
};

/// The catalog and the providers' heartbeats.
pub const CATALOG: Group = Group {
    name: "catalog",
    portal_headers: false,
    routes: &[
        route!(Get "/api/providers", Access::Caller, list::list, "the catalog"),
        route!(Post "/api/providers/{name}/heartbeat", Access::ProviderServiceAccount, heartbeat::heartbeat, "`{\"version\",\"status\"}`, ≤ 4 KiB"),
    ],
};

/// Organizations, workspaces, memberships and kubeconfigs (docs/tenancy.md).
pub const TENANCY: Group = Group {
    name: "tenancy",
    portal_headers: false,
    routes: &[
        route!(Get "/api/me", Access::Caller, me::me, "who the caller is, with their organizations and workspaces"),
        route!(Get "/api/orgs", Access::Caller, orgs::list_orgs, "the organizations the caller belongs to"),
        route!(Post "/api/orgs", Access::User("create organizations"), orgs::create_org, "creates an organization; the caller becomes its admin"),
        route!(Get "/api/orgs/{org}", Access::Caller, orgs::get_org, "an organization (members)"),
        route!(Delete "/api/orgs/{org}", Access::User("delete organizations"), orgs::delete_org, "deletes an organization and its workspaces (admins)"),
        route!(Get "/api/orgs/{org}/members", Access::Caller, members::list_org, "the organization's members (members)"),
        route!(Put "/api/orgs/{org}/members/{user}", Access::User("manage memberships"), members::put_org, "grants a user a role in the organization (admins)"),
        route!(Delete "/api/orgs/{org}/members/{user}", Access::User("manage memberships"), members::delete_org, "removes a user from the organization (admins)"),
        route!(Get "/api/orgs/{org}/groups", Access::Caller, members::list_groups_org, "the IdP groups granted a role in the organization (members)"),
        route!(Put "/api/orgs/{org}/groups/{group}", Access::User("manage memberships"), members::put_group_org, "grants an IdP group a role in the organization (admins)"),
        route!(Delete "/api/orgs/{org}/groups/{group}", Access::User("manage memberships"), members::delete_group_org, "revokes an IdP group's role in the organization (admins)"),
        route!(Get "/api/orgs/{org}/workspaces", Access::Caller, orgs::list_workspaces, "the organization's workspaces the caller belongs to (members)"),
        route!(Post "/api/orgs/{org}/workspaces", Access::Caller, orgs::create_workspace, "creates a team workspace (org admins)"),
        route!(Get "/api/orgs/{org}/workspaces/{ws}", Access::Caller, orgs::get_workspace, "a team workspace (members)"),
        route!(Delete "/api/orgs/{org}/workspaces/{ws}", Access::Caller, orgs::delete_workspace, "deletes a team workspace (admins)"),
        route!(Get "/api/orgs/{org}/workspaces/{ws}/members", Access::Caller, members::list_ws, "the workspace's members (members)"),
        route!(Put "/api/orgs/{org}/workspaces/{ws}/members/{user}", Access::User("manage memberships"), members::put_ws, "grants a user a role in the workspace (admins)"),
        route!(Delete "/api/orgs/{org}/workspaces/{ws}/members/{user}", Access::User("manage memberships"), members::delete_ws, "removes a user from the workspace (admins)"),
        route!(Get "/api/orgs/{org}/workspaces/{ws}/groups", Access::Caller, members::list_groups_ws, "the IdP groups granted a role in the workspace (members)"),
        route!(Put "/api/orgs/{org}/workspaces/{ws}/groups/{group}", Access::User("manage memberships"), members::put_group_ws, "grants an IdP group a role in the workspace (admins)"),
        route!(Delete "/api/orgs/{org}/workspaces/{ws}/groups/{group}", Access::User("manage memberships"), members::delete_group_ws, "revokes an IdP group's role in the workspace (admins)"),
        route!(Get "/api/orgs/{org}/workspaces/{ws}/kubeconfig", Access::Caller, kubeconfig::kubeconfig, "a kubeconfig for the workspace through the hub (members)"),
    ],
};

/// Enable, Disable and the enabled list (Enable and Disable below).
pub const ENABLE: Group = Group {
    name: "enable",
    portal_headers: false,
    routes: &[
        route!(Get "/api/orgs/{org}/workspaces/{ws}/providers/enabled", Access::Caller, enable::list, "one row per bound provider (members)"),
        route!(Post "/api/orgs/{org}/workspaces/{ws}/providers/{name}/enable", Access::Caller, enable::enable, "binds the provider's APIExport (admins)"),
        route!(Post "/api/orgs/{org}/workspaces/{ws}/providers/{name}/disable", Access::Caller, enable::disable, "removes the binding and its grants (admins)"),
    ],
};

/// MCP federation (below).
pub const MCP: Group = Group {
    name: "mcp",
    portal_headers: false,
    routes: &[route!(ANY MCP_ROUTE, Access::Caller, mcp, "the workspace's MCP endpoint (members)")],
};

/// The portal's page and assets (docs/portal.md).
pub const PORTAL: Group = Group {
    name: "portal",
    portal_headers: true,
    routes: &[
        route!(Get "/", Access::Public, to_portal, "redirects to `/portal/`"),
        route!(Get "/portal", Access::Public, to_portal, "redirects to `/portal/`"),
        route!(Get "/portal/", Access::Public, assets::page, "the portal's page"),
        route!(Get "/portal/assets/{*file}", Access::Public, assets::asset, "the portal's modules and stylesheet"),
        route!(Get FRAME_PATH, Access::Public, frame, "the sandboxed document a provider UI runs in"),
        route!(Get "/portal/{*rest}", Access::Public, assets::page, "the portal's page (its client-side router draws the path)"),
    ],
};

/// Portal sign-in and sign-out (docs/portal.md#sessions).
pub const SESSION: Group = Group {
    name: "session",
    portal_headers: true,
    routes: &[
        route!(Post "/api/session", Access::Public, login::sign_in, "`{\"token\"}`: starts a session (same-origin proof required)"),
        route!(Get "/api/session", Access::Caller, login::whoami, "`{user, groups, expiresAt}`"),
        route!(Delete "/api/session", Access::Public, login::sign_out, "ends the session, clears the cookie"),
        route!(Get "/api/session/options", Access::Public, login::options, "how one may sign in (token, OIDC issuer)"),
        route!(Get "/api/session/oidc", Access::Public, login::oidc_start, "starts the OIDC code flow with PKCE"),
        route!(Get CALLBACK, Access::Public, login::oidc_callback, "finishes the OIDC code flow"),
        route!(Get LOGOUT, Access::Public, login::oidc_logout, "the redirect to the identity provider's logout (client ID and return address, no token)"),
    ],
};

/// Every group, in the order of the docs.
pub const GROUPS: [&Group; 7] = [&OPERATIONS, &CATALOG, &TENANCY, &ENABLE, &MCP, &PORTAL, &SESSION];

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

/// 403 for ServiceAccounts on an [`Access::User`] route; `what` says what they may not do.
async fn users_only(
    State(what): State<&'static str>,
    Extension(caller): Extension<Caller>,
    req: Request,
    next: Next,
) -> Response {
    match caller.principal().require_user(what) {
        Ok(()) => next.run(req).await,
        Err(status) => status.into_response(),
    }
}

impl Route {
    /// The row's handler behind what its [`Access`] requires. Route layers: a path that matches
    /// no route (or no method of it) answers without asking for credentials. An `Any` row's handler
    /// is its method router's fallback, which only a plain layer wraps.
    fn method_router(&self, authn: &Arc<dyn Authenticator>) -> MethodRouter<AppState> {
        let served = (self.serve)(self.method.filter());
        let any = self.method == Method::Any;
        let layered = |r: MethodRouter<AppState>, layer| if any { r.layer(layer) } else { r.route_layer(layer) };
        let authenticated = |r| layered(r, middleware::from_fn_with_state(authn.clone(), require_caller));
        match self.access {
            Access::Public | Access::ProviderServiceAccount => served,
            Access::Caller => authenticated(served),
            // Authentication runs first (the outer layer): users_only reads its Caller.
            Access::User(what) => authenticated(served.route_layer(middleware::from_fn_with_state(what, users_only))),
        }
    }
}

fn group_router(group: &Group, authn: &Arc<dyn Authenticator>, public_metrics: bool) -> Router<AppState> {
    let mut router = Router::new();
    for route in group.routes {
        if route.path == METRICS_PATH && !public_metrics {
            continue;
        }
        router = router.route(route.path, route.method_router(authn));
    }
    if group.portal_headers {
        router = router.layer(middleware::from_fn(headers::secure));
    }
    router
}

/// The hub's API routes: every group of [`GROUPS`]. The proxies are not here: [`HubService`]
/// dispatches them by prefix before this router.
pub fn router(st: AppState) -> Router {
    router_with(st, true)
}

/// [`router`], with `/metrics` only when `public_metrics` (otherwise [`metrics_router`] serves it on
/// its own listener and the public port answers 404 for it).
pub fn router_with(st: AppState, public_metrics: bool) -> Router {
    let authn = st.authn.clone();
    GROUPS
        .iter()
        .fold(Router::new(), |router, group| {
            router.merge(group_router(group, &authn, public_metrics))
        })
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
    Router::new().route(METRICS_PATH, get(metrics)).with_state(st)
}

/// The route list of docs/hub-api.md: one row per route of [`GROUPS`].
pub fn markdown() -> String {
    let mut out = String::from("| group | route | who may call | what |\n|---|---|---|---|\n");
    for group in GROUPS {
        for r in group.routes {
            out.push_str(&format!(
                "| {} | `{} {}` | {} | {} |\n",
                group.name,
                r.method.as_str(),
                r.path,
                r.access.describe(),
                r.what
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_method_and_path_is_one_row() {
        let mut seen = std::collections::HashSet::new();
        for group in GROUPS {
            for r in group.routes {
                assert!(seen.insert((r.method, r.path)), "{r:?} twice");
                assert!(r.path.starts_with('/'), "{r:?}");
            }
        }
    }

    #[test]
    fn only_the_api_is_authenticated() {
        // Probes, keys and the portal's static files must work without credentials (start-up,
        // providers fetching keys, a browser before sign-in).
        for group in [&OPERATIONS, &PORTAL] {
            assert!(
                group
                    .routes
                    .iter()
                    .all(|r| r.access.is_public() || r.path == METRICS_PATH),
                "{}",
                group.name
            );
        }
        // On the public port, what the hub serves and how often is no anonymous caller's business.
        let metrics = OPERATIONS.routes.iter().find(|r| r.path == METRICS_PATH);
        assert_eq!(metrics.map(|r| r.access), Some(Access::Caller));
        for group in [&TENANCY, &ENABLE, &MCP] {
            assert!(group.routes.iter().all(|r| !r.access.is_public()), "{}", group.name);
        }
    }
}
