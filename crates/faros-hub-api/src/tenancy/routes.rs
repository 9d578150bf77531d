//! The tenant REST surface, mounted behind authentication by [`crate::router::router`].
//!
//! Which principals may call what is decided here, per route, and nowhere by accident (see
//! docs/hub-api.md, "Who may call what"). Users may call every route; kcp decides their standing in
//! each workspace. ServiceAccounts are workloads of one workspace: they may read who they are, list
//! and use workspaces where kcp lets them in (the membership reviews carry their cluster, so a
//! ServiceAccount counts only where it lives or where kcp RBAC names it globally), but organizations
//! and memberships belong to people: those routes are `users_only`.

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Extension, Router};

use super::{kubeconfig, me, members, orgs};
use crate::auth::Caller;
use crate::state::AppState;

/// Routes under `/api/me` and `/api/orgs/**`.
pub fn router() -> Router<AppState> {
    let users_only = Router::new()
        .route("/api/orgs", post(orgs::create_org))
        .route("/api/orgs/{org}", delete(orgs::delete_org))
        .route(
            "/api/orgs/{org}/members/{user}",
            put(members::put_org).delete(members::delete_org),
        )
        .route(
            "/api/orgs/{org}/workspaces/{ws}/members/{user}",
            put(members::put_ws).delete(members::delete_ws),
        )
        .route(
            "/api/orgs/{org}/groups/{group}",
            put(members::put_group_org).delete(members::delete_group_org),
        )
        .route(
            "/api/orgs/{org}/workspaces/{ws}/groups/{group}",
            put(members::put_group_ws).delete(members::delete_group_ws),
        )
        .route_layer(middleware::from_fn(users_only));
    let any_principal = Router::new()
        .route("/api/me", get(me::me))
        .route("/api/orgs", get(orgs::list_orgs))
        .route("/api/orgs/{org}", get(orgs::get_org))
        .route("/api/orgs/{org}/members", get(members::list_org))
        .route(
            "/api/orgs/{org}/workspaces",
            get(orgs::list_workspaces).post(orgs::create_workspace),
        )
        .route(
            "/api/orgs/{org}/workspaces/{ws}",
            get(orgs::get_workspace).delete(orgs::delete_workspace),
        )
        .route("/api/orgs/{org}/workspaces/{ws}/members", get(members::list_ws))
        .route("/api/orgs/{org}/groups", get(members::list_groups_org))
        .route("/api/orgs/{org}/workspaces/{ws}/groups", get(members::list_groups_ws))
        .route(
            "/api/orgs/{org}/workspaces/{ws}/kubeconfig",
            get(kubeconfig::kubeconfig),
        )
        .merge(super::enable::routes());
    users_only.merge(any_principal)
}

/// 403 for ServiceAccounts: what the route does (own an organization, grant or revoke membership)
/// is a person's act, whatever RBAC a workload holds.
async fn users_only(Extension(caller): Extension<Caller>, req: Request, next: Next) -> Response {
    let what = match (req.method().as_str(), req.uri().path()) {
        ("POST", "/api/orgs") => "create organizations",
        ("DELETE", p) if p.matches('/').count() == 3 => "delete organizations",
        _ => "manage memberships",
    };
    match caller.principal().require_user(what) {
        Ok(()) => next.run(req).await,
        Err(status) => status.into_response(),
    }
}
