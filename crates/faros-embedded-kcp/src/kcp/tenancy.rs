//! Workspaces, WorkspaceTypes and LogicalClusters: the workspace lifecycle controller.
//!
//! - `types`: WorkspaceType semantics (resolution, `extend` aliases, limits, initializers), IO-free.
//! - `workspace_types`: WorkspaceTypes as stored and kcp's built-in ones (`root:root`,
//!   `root:universal`), read-only; `bootstrap` creates the built-in ones in root.
//! - Workspace admission is in `kcp::admission::workspace`.
//! - `lifecycle`: Scheduling → Initializing → Ready; `deletion`: content removal and the finalizer.
//! - `names`, `status`: derived names and object edits.

mod bootstrap;
pub mod deletion;
mod lifecycle;
pub mod names;
mod status;
pub mod types;
pub mod workspace_types;

use std::sync::Arc;
use std::time::Duration;

use crate::state::ServerState;

/// Default pause before the controller moves a workspace to its next phase ([`crate::Config`]'s
/// `phase_delay`): short, but long enough that tests catch a client that assumes a new workspace is
/// Ready at once.
pub const DEFAULT_PHASE_DELAY: Duration = Duration::from_millis(50);

/// Records the server's external URL (`https://host:port`), from which workspace URLs
/// (`spec.URL`, LogicalCluster `status.URL`) are built. The server calls this once it listens;
/// workspaces wait in `Scheduling` until it is known.
pub fn set_server_url(state: &ServerState, url: &str) {
    state
        .server_url
        .send_replace(Some(url.trim_end_matches('/').to_string()));
}

/// The server's external URL, if recorded.
pub fn server_url(state: &ServerState) -> Option<String> {
    state.server_url.borrow().clone()
}

async fn wait_server_url(state: &ServerState) -> String {
    let mut rx = state.server_url.subscribe();
    // The sender lives in `state`, which outlives this call: the wait ends only with a URL.
    let url = rx.wait_for(Option::is_some).await.ok().and_then(|u| u.clone());
    url.unwrap_or_default()
}

/// Creates kcp's built-in WorkspaceTypes in `root` and the grant to use them (idempotent). `run`
/// does this too; the server may call it before it starts listening.
pub async fn bootstrap(state: &ServerState) {
    bootstrap::ensure_builtins(state).await;
}

/// Runs the workspace controllers until aborted.
pub async fn run(state: Arc<ServerState>) {
    futures::join!(lifecycle::run(state.clone()), lifecycle::maintain::run(state));
}
