//! The API router, built from one table per route group ([`GROUPS`]): each row names a route's
//! method, path, who may call it ([`Who`], and for `/api/orgs/{org}/…` the [`Scope`]: the
//! organization or workspace it acts on and the least role there) and the handler that serves it.
//! The router applies both itself, so no handler checks authentication or membership by hand: a
//! scoped handler receives the resolved target as [`crate::tenancy::scope::Scoped`]. The same
//! tables are the route list of docs/hub-api.md ([`markdown`], compared by `tests/routes.rs`) and
//! what the route tests iterate (every route that is not public refuses a request without
//! credentials; every scoped route refuses a stranger and a member short of its role).
//!
//! This is the top of the crate with [`crate::state`]: it imports the subsystems' handlers, and they
//! extract only the sub-state they use. The proxies and the layers every request passes are in
//! [`crate::edge`], which dispatches by path prefix before this router.

use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter, any, get, on};
use axum::{Extension, Router};
use faros_core::identity::JWKS_PATH;
use faros_core::status::Status;
use http::{HeaderValue, header};

use crate::auth::{Caller, require_caller};
use crate::catalog::{heartbeat, list};
use crate::edge::{HubService, Unrouted};
use crate::mcp::routes::{MCP_ROUTE, handle as mcp};
use crate::portal::frame::{FRAME_PATH, document as frame};
use crate::portal::login::{self, CALLBACK, LOGOUT};
use crate::portal::{assets, headers, to_portal};
use crate::state::AppState;
use crate::tenancy::enable::handlers as enable;
use crate::tenancy::scope::{self, Scope};
use crate::tenancy::{Role, kubeconfig, me, members, orgs};

/// Who may call a route at all: the credential it asks for. What a caller may do within a tenant
/// is the row's [`Scope`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Who {
    /// Anyone; no credentials are asked for.
    Public,
    /// The provider's own ServiceAccount: the handler reviews the bearer in the provider's
    /// workspace (a provider is no hub user, so the [`Authenticator`](crate::auth::Authenticator) does not apply).
    ProviderServiceAccount,
    /// Any caller the [`Authenticator`](crate::auth::Authenticator) accepts (401 otherwise), users and ServiceAccounts alike;
    /// what they may do in a workspace is kcp's answer, asked by the row's [`Scope`].
    Caller,
    /// A caller who is a user, not a ServiceAccount (403 for a workload, saying it may not do
    /// this act): owning organizations and granting membership are a person's acts, whatever RBAC
    /// a workload holds.
    User(&'static str),
}

impl Who {
    /// Whether the route needs credentials at all.
    pub fn is_public(self) -> bool {
        self == Who::Public
    }

    fn describe(self) -> &'static str {
        match self {
            Who::Public => "anyone",
            Who::ProviderServiceAccount => "the provider's own ServiceAccount",
            Who::Caller => "caller",
            Who::User(_) => "caller, users only (ServiceAccounts: 403)",
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
    pub who: Who,
    /// The organization or workspace the row acts on, checked before the handler runs.
    pub scope: Scope,
    /// What it answers, for the docs.
    pub what: &'static str,
    /// Serves the row's method with its handler.
    serve: fn(MethodFilter) -> MethodRouter<AppState>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} ({:?}, {:?})",
            self.method.as_str(),
            self.path,
            self.who,
            self.scope
        )
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
    (ANY $path:expr, $who:expr, $scope:expr, $handler:expr, $what:expr) => {
        Route {
            method: Method::Any,
            path: $path,
            who: $who,
            scope: $scope,
            what: $what,
            serve: |_| any($handler),
        }
    };
    ($method:ident $path:expr, $who:expr, $scope:expr, $handler:expr, $what:expr) => {
        Route {
            method: Method::$method,
            path: $path,
            who: $who,
            scope: $scope,
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
        route!(Get "/healthz", Who::Public, Scope::None, healthz, "`{\"status\":\"ok\"}` while the process serves"),
        route!(Get "/readyz", Who::Public, Scope::None, readyz, "200 once the hub can serve tenants, else 503 naming what is missing (Start-up)"),
        route!(Get METRICS_PATH, Who::Caller, Scope::None, metrics, "OpenMetrics, when not on `--metrics-listen` (Metrics); the separate listener asks for no credential"),
        route!(Get JWKS_PATH, Who::Public, Scope::None, jwks, "public keys of the identity assertion (`Cache-Control: max-age=60`)"),
    ],
};

/// The catalog and the providers' heartbeats.
pub const CATALOG: Group = Group {
    name: "catalog",
    portal_headers: false,
    routes: &[
        route!(Get "/api/providers", Who::Caller, Scope::None, list::list, "the catalog"),
        route!(Post "/api/providers/{name}/heartbeat", Who::ProviderServiceAccount, Scope::None, heartbeat::heartbeat, "`{\"version\",\"status\",\"revision\"}`, ≤ 4 KiB"),
    ],
};

/// Organizations, workspaces, memberships and kubeconfigs (docs/tenancy.md).
pub const TENANCY: Group = Group {
    name: "tenancy",
    portal_headers: false,
    routes: &[
        route!(Get "/api/me", Who::Caller, Scope::None, me::me, "who the caller is, with their organizations and workspaces"),
        route!(Get "/api/orgs", Who::Caller, Scope::None, orgs::list_orgs, "the organizations the caller belongs to"),
        route!(Post "/api/orgs", Who::User("create organizations"), Scope::None, orgs::create_org, "creates an organization; the caller becomes its admin"),
        route!(Get "/api/orgs/{org}", Who::Caller, Scope::Org(Role::Member), orgs::get, "an organization"),
        route!(Delete "/api/orgs/{org}", Who::User("delete organizations"), Scope::Org(Role::Admin), orgs::delete, "deletes an organization and its workspaces"),
        route!(Get "/api/orgs/{org}/members", Who::Caller, Scope::Org(Role::Member), members::list, "the organization's members"),
        route!(Put "/api/orgs/{org}/members/{user}", Who::User("manage memberships"), Scope::Org(Role::Admin), members::put, "grants a user a role in the organization"),
        route!(Delete "/api/orgs/{org}/members/{user}", Who::User("manage memberships"), Scope::Org(Role::Admin), members::remove, "removes a user from the organization"),
        route!(Get "/api/orgs/{org}/groups", Who::Caller, Scope::Org(Role::Member), members::list_groups, "the IdP groups granted a role in the organization"),
        route!(Put "/api/orgs/{org}/groups/{group}", Who::User("manage memberships"), Scope::Org(Role::Admin), members::put_group, "grants an IdP group a role in the organization"),
        route!(Delete "/api/orgs/{org}/groups/{group}", Who::User("manage memberships"), Scope::Org(Role::Admin), members::remove_group, "revokes an IdP group's role in the organization"),
        route!(Get "/api/orgs/{org}/workspaces", Who::Caller, Scope::Org(Role::Member), orgs::list_workspaces, "the organization's workspaces the caller belongs to"),
        route!(Post "/api/orgs/{org}/workspaces", Who::Caller, Scope::Org(Role::Admin), orgs::create_workspace, "creates a team workspace"),
        route!(Get "/api/orgs/{org}/workspaces/{ws}", Who::Caller, Scope::Workspace(Role::Member), orgs::get, "a team workspace"),
        route!(Delete "/api/orgs/{org}/workspaces/{ws}", Who::Caller, Scope::Workspace(Role::Admin), orgs::delete, "deletes a team workspace"),
        route!(Get "/api/orgs/{org}/workspaces/{ws}/members", Who::Caller, Scope::Workspace(Role::Member), members::list, "the workspace's members"),
        route!(Put "/api/orgs/{org}/workspaces/{ws}/members/{user}", Who::User("manage memberships"), Scope::Workspace(Role::Admin), members::put, "grants a user a role in the workspace"),
        route!(Delete "/api/orgs/{org}/workspaces/{ws}/members/{user}", Who::User("manage memberships"), Scope::Workspace(Role::Admin), members::remove, "removes a user from the workspace"),
        route!(Get "/api/orgs/{org}/workspaces/{ws}/groups", Who::Caller, Scope::Workspace(Role::Member), members::list_groups, "the IdP groups granted a role in the workspace"),
        route!(Put "/api/orgs/{org}/workspaces/{ws}/groups/{group}", Who::User("manage memberships"), Scope::Workspace(Role::Admin), members::put_group, "grants an IdP group a role in the workspace"),
        route!(Delete "/api/orgs/{org}/workspaces/{ws}/groups/{group}", Who::User("manage memberships"), Scope::Workspace(Role::Admin), members::remove_group, "revokes an IdP group's role in the workspace"),
        route!(Get "/api/orgs/{org}/workspaces/{ws}/kubeconfig", Who::Caller, Scope::Workspace(Role::Member), kubeconfig::kubeconfig, "a kubeconfig for the workspace through the hub"),
    ],
};

/// Enable, Disable and the enabled list (Enable and Disable below).
pub const ENABLE: Group = Group {
    name: "enable",
    portal_headers: false,
    routes: &[
        route!(Get "/api/orgs/{org}/workspaces/{ws}/providers/enabled", Who::Caller, Scope::Workspace(Role::Member), enable::list, "one row per bound provider"),
        route!(Post "/api/orgs/{org}/workspaces/{ws}/providers/{name}/enable", Who::Caller, Scope::Workspace(Role::Admin), enable::enable, "binds the provider's APIExport"),
        route!(Post "/api/orgs/{org}/workspaces/{ws}/providers/{name}/disable", Who::Caller, Scope::Workspace(Role::Admin), enable::disable, "removes the binding and its grants"),
    ],
};

/// MCP federation (below).
pub const MCP: Group = Group {
    name: "mcp",
    portal_headers: false,
    routes: &[route!(ANY MCP_ROUTE, Who::Caller, Scope::Workspace(Role::Member), mcp, "the workspace's MCP endpoint")],
};

/// The portal's page and assets (docs/portal.md).
pub const PORTAL: Group = Group {
    name: "portal",
    portal_headers: true,
    routes: &[
        route!(Get "/", Who::Public, Scope::None, to_portal, "redirects to `/portal/`"),
        route!(Get "/portal", Who::Public, Scope::None, to_portal, "redirects to `/portal/`"),
        route!(Get "/portal/", Who::Public, Scope::None, assets::page, "the portal's page"),
        route!(Get "/portal/assets/{*file}", Who::Public, Scope::None, assets::asset, "the portal's modules and stylesheet"),
        route!(Get FRAME_PATH, Who::Public, Scope::None, frame, "the sandboxed document a provider UI runs in"),
        route!(Get "/portal/{*rest}", Who::Public, Scope::None, assets::page, "the portal's page (its client-side router draws the path)"),
    ],
};

/// Portal sign-in and sign-out (docs/portal.md#sessions).
pub const SESSION: Group = Group {
    name: "session",
    portal_headers: true,
    routes: &[
        route!(Post "/api/session", Who::Public, Scope::None, login::sign_in, "`{\"token\"}`: starts a session (same-origin proof required)"),
        route!(Get "/api/session", Who::Caller, Scope::None, login::whoami, "`{user, groups, expiresAt}`"),
        route!(Delete "/api/session", Who::Public, Scope::None, login::sign_out, "ends the session, clears the cookie"),
        route!(Get "/api/session/options", Who::Public, Scope::None, login::options, "how one may sign in (token, OIDC issuer)"),
        route!(Get "/api/session/oidc", Who::Public, Scope::None, login::oidc_start, "starts the OIDC code flow with PKCE"),
        route!(Get CALLBACK, Who::Public, Scope::None, login::oidc_callback, "finishes the OIDC code flow"),
        route!(Get LOGOUT, Who::Public, Scope::None, login::oidc_logout, "the redirect to the identity provider's logout (client ID and return address, no token)"),
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

/// 403 for ServiceAccounts on an [`Who::User`] route; `what` says what they may not do.
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
    /// The row's handler behind what its [`Who`] and [`Scope`] require, outermost first:
    /// authentication, the users-only check, then the scope's membership check (each reads what
    /// the one before it found). Route layers: a path that matches no route (or no method of it)
    /// answers without asking for credentials. An `Any` row's handler is its method router's
    /// fallback, which only a plain layer wraps.
    fn method_router(&self, st: &AppState) -> MethodRouter<AppState> {
        let any = self.method == Method::Any;
        // A macro, not a closure: each layer is of its own type.
        macro_rules! layered {
            ($r:expr, $layer:expr) => {
                if any {
                    $r.layer($layer)
                } else {
                    $r.route_layer($layer)
                }
            };
        }
        let mut served = (self.serve)(self.method.filter());
        if self.scope != Scope::None {
            let admit = middleware::from_fn_with_state((st.tenancy.clone(), self.scope), scope::admit);
            served = layered!(served, admit);
        }
        if let Who::User(what) = self.who {
            served = layered!(served, middleware::from_fn_with_state(what, users_only));
        }
        match self.who {
            Who::Public | Who::ProviderServiceAccount => served,
            Who::Caller | Who::User(_) => {
                layered!(served, middleware::from_fn_with_state(st.authn.clone(), require_caller))
            }
        }
    }

    /// The "who may call" cell of docs/hub-api.md.
    fn describe_callers(&self) -> String {
        match self.scope.describe() {
            Some(scope) => format!("{}; {scope}", self.who.describe()),
            None => self.who.describe().to_string(),
        }
    }
}

fn group_router(group: &Group, st: &AppState, public_metrics: bool) -> Router<AppState> {
    let mut router = Router::new();
    for route in group.routes {
        if route.path == METRICS_PATH && !public_metrics {
            continue;
        }
        router = router.route(route.path, route.method_router(st));
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
    GROUPS
        .iter()
        .fold(Router::new(), |router, group| {
            router.merge(group_router(group, &st, public_metrics))
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
                r.describe_callers(),
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
                group.routes.iter().all(|r| r.who.is_public() || r.path == METRICS_PATH),
                "{}",
                group.name
            );
        }
        // On the public port, what the hub serves and how often is no anonymous caller's business.
        let metrics = OPERATIONS.routes.iter().find(|r| r.path == METRICS_PATH);
        assert_eq!(metrics.map(|r| r.who), Some(Who::Caller));
        for group in [&TENANCY, &ENABLE, &MCP] {
            assert!(group.routes.iter().all(|r| !r.who.is_public()), "{}", group.name);
        }
    }

    #[test]
    fn every_path_naming_a_tenant_is_scoped_by_it() {
        // A row under /api/orgs/{org} without a scope would serve any authenticated caller: the
        // table, not a handler, is where membership is required.
        for group in GROUPS {
            for r in group.routes {
                let names = |p: &str| r.path.contains(&format!("{{{p}}}"));
                let params: &[&str] = match (names("org"), names("ws")) {
                    (_, true) => &["org", "ws"],
                    (true, false) => &["org"],
                    (false, false) => &[],
                };
                assert_eq!(r.scope.params(), params, "{r:?}");
                assert!(
                    r.scope == Scope::None || !r.who.is_public(),
                    "{r:?}: a scope needs a caller"
                );
            }
        }
    }
}
