//! The tenant REST surface, mounted behind authentication by [`crate::router::router`].

use axum::Router;
use axum::routing::{get, put};

use super::{kubeconfig, me, members, orgs};
use crate::state::AppState;

/// Routes under `/api/me` and `/api/orgs/**`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/me", get(me::me))
        .route("/api/orgs", get(orgs::list_orgs).post(orgs::create_org))
        .route("/api/orgs/{org}", get(orgs::get_org).delete(orgs::delete_org))
        .route("/api/orgs/{org}/members", get(members::list_org))
        .route(
            "/api/orgs/{org}/members/{user}",
            put(members::put_org).delete(members::delete_org),
        )
        .route(
            "/api/orgs/{org}/workspaces",
            get(orgs::list_workspaces).post(orgs::create_workspace),
        )
        .route(
            "/api/orgs/{org}/workspaces/{ws}",
            get(orgs::get_workspace).delete(orgs::delete_workspace),
        )
        .route("/api/orgs/{org}/workspaces/{ws}/members", get(members::list_ws))
        .route(
            "/api/orgs/{org}/workspaces/{ws}/kubeconfig",
            get(kubeconfig::kubeconfig),
        )
        .route(
            "/api/orgs/{org}/workspaces/{ws}/members/{user}",
            put(members::put_ws).delete(members::delete_ws),
        )
        .merge(super::enable::routes())
}
