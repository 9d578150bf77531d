//! Enable, Disable and the enabled list: a tenant workspace binding a provider's APIExport.
//!
//! - `POST /api/orgs/{org}/workspaces/{ws}/providers/{name}/enable` (admins): APIBinding `<name>`
//!   with every claim the CatalogEntry declares (verbs from the entry, `Accepted` only for the
//!   claims the tenant named), waits for `Bound`, then lets members use the provider's resources
//!   (a ClusterRole aggregated into `faros:workspace:member`) and, with `edgeProxyAccess`, grants
//!   the provider's ServiceAccount `proxy` on edges.
//! - `POST …/providers/{name}/disable` (admins): deletes the binding and those grants; kcp
//!   removes the bound objects before the binding goes (202 until then, 204 once gone).
//! - `GET …/providers/enabled` (members): one row per bound provider.
//!
//! The decisions live in [`plan`] (no IO); [`handlers`] does the kcp calls.

pub mod handlers;
pub mod plan;

use axum::Router;
use axum::routing::{get, post};

pub use handlers::enabled;
pub use plan::{ClaimRef, EnableRequest, Enabled};

use crate::state::AppState;

/// The routes of this module, merged into [`super::routes::router`].
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/orgs/{org}/workspaces/{ws}/providers/enabled", get(handlers::list))
        .route(
            "/api/orgs/{org}/workspaces/{ws}/providers/{name}/enable",
            post(handlers::enable),
        )
        .route(
            "/api/orgs/{org}/workspaces/{ws}/providers/{name}/disable",
            post(handlers::disable),
        )
}
