//! MCP federation: one MCP endpoint per team workspace, `/api/orgs/{org}/workspaces/{ws}/mcp`,
//! offering the tools of every provider that is Ready **and** enabled in that workspace.
//!
//! - Clients speak MCP streamable HTTP to the hub (rmcp server, [`server`]); requests are
//!   authenticated and membership-checked ([`routes()`]) before rmcp sees them.
//! - Tools are named `<provider>__<tool>` ([`naming`]); a call is routed to the owning provider's
//!   `<backend.url>/mcp` ([`upstream`]) with the caller's verified identity as a signed assertion,
//!   never the caller's credentials.
//! - Discovery is cached per provider and single-flighted; a provider that does not answer within
//!   its timeout is left out (and retried after a backoff), one without `/mcp` is silently absent
//!   ([`federation`]). Sessions get `notifications/tools/list_changed` when their workspace's
//!   tool set changes (readiness, CatalogEntry edits, Enable/Disable).
//!
//! - Sessions are kept in the hub's shared records ([`store`]) so any replica continues them, and
//!   every replica watches APIBindings ([`bindings`]) so list_changed follows an Enable made
//!   anywhere; a request's response stream resumed on a replica that does not hold it fails the
//!   request instead of leaving it unanswered ([`resume`]).
//!
//! Which providers a workspace enabled comes through the [`Directory`] seam so this module never
//! talks to kcp itself; whether the caller may enter the workspace is the route table's scope
//! ([`crate::tenancy::scope`]), decided before the request reaches [`routes::handle`].

pub mod bindings;
pub mod describe;
pub mod directory;
pub mod federation;
pub mod naming;
pub mod resume;
pub mod routes;
pub mod server;
pub mod store;
pub mod upstream;

use std::time::Duration;

use faros_core::identity::Identity;
use faros_core::status::Status;
use futures::future::BoxFuture;

use crate::auth::Caller;
use crate::workspace::WorkspaceRef;

pub use federation::Federation;
pub use routes::{MCP_ROUTE, routes};

/// Which providers a workspace enabled. (Which workspace a caller may use is the route table's
/// scope, decided before a request reaches this module.)
pub trait Directory: Send + Sync + 'static {
    /// Names of the providers whose APIBinding is Bound in `target`.
    fn enabled<'a>(&'a self, target: &'a WorkspaceRef) -> BoxFuture<'a, Result<Vec<String>, Status>>;
}

/// Timeouts and cache lifetimes of the federation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct McpSettings {
    /// Longest wait for one provider's `tools/list` (then it is left out of the list).
    pub discovery_timeout: Duration,
    /// Longest wait for one provider's `tools/call` (then the call is a tool error).
    pub call_timeout: Duration,
    /// TCP connect timeout towards provider backends.
    pub connect_timeout: Duration,
    /// Discovered tools are reused this long even when nothing about the provider changed
    /// (a provider can redeploy with new tools behind the same URL).
    pub discovery_ttl: Duration,
    /// A failed or timed-out discovery is retried after this long, so a dead provider costs one
    /// timeout per backoff period instead of one per `tools/list`.
    pub failure_backoff: Duration,
    /// How often readiness is re-read: heartbeats going stale change readiness without any
    /// registry event.
    pub readiness_poll: Duration,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            discovery_timeout: Duration::from_secs(8),
            call_timeout: Duration::from_secs(90),
            connect_timeout: Duration::from_secs(5),
            discovery_ttl: Duration::from_secs(300),
            failure_backoff: Duration::from_secs(15),
            readiness_poll: Duration::from_secs(5),
        }
    }
}

/// One authorized use of one workspace's endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkspaceCtx {
    pub caller: Caller,
    pub target: WorkspaceRef,
}

impl WorkspaceCtx {
    /// What providers are told about the caller.
    pub fn identity(&self) -> Identity {
        Identity {
            user: self.caller.user.clone(),
            groups: self.caller.groups.clone(),
            org: self.target.org.clone(),
            workspace: self.target.workspace.clone().unwrap_or_default(),
            cluster: self.target.cluster.clone(),
        }
    }
}
