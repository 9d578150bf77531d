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
//! The decisions live in [`plan`] (no IO); [`handlers`] does the kcp calls; the routes are rows of
//! [`crate::router::ENABLE`].

pub mod handlers;
pub mod plan;

pub use super::bound::enabled;
pub use plan::{ClaimRef, EnableRequest, Enabled};
