//! Workspaces, WorkspaceTypes and LogicalClusters: admission and the workspace lifecycle controller.
//!
//! - `types`: WorkspaceType semantics (resolution, `extend` aliases, limits, initializers), IO-free.
//! - `catalog`: stored and built-in WorkspaceTypes (`root:root`, `root:universal`).
//! - `admission`: what kcp checks and defaults when a Workspace is created or updated.
//! - `lifecycle`: Scheduling → Initializing → Ready; `deletion`: content removal and the finalizer.
//! - `names`, `status`: derived names and object edits.

mod admission;
pub mod catalog;
pub mod deletion;
mod lifecycle;
pub mod names;
mod status;
pub mod types;

use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::Duration;

use crate::api::ApiState;

pub use admission::admit_workspace;

/// Environment variable with the delay, in milliseconds, each phase stays visible before the
/// controller moves a workspace on.
pub const PHASE_DELAY_ENV: &str = "FAROS_KCP_PHASE_DELAY_MS";
/// Default phase delay: small, but long enough that clients must wait rather than assume.
pub const DEFAULT_PHASE_DELAY: Duration = Duration::from_millis(50);

/// The delay between visible phases (`FAROS_KCP_PHASE_DELAY_MS`, default 50 ms).
pub fn phase_delay() -> Duration {
    std::env::var(PHASE_DELAY_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(DEFAULT_PHASE_DELAY, Duration::from_millis)
}

/// External URLs of running servers, keyed by their state (several servers may share a process).
static SERVER_URLS: Mutex<Vec<(Weak<ApiState>, String)>> = Mutex::new(Vec::new());
static URL_SET: LazyLock<tokio::sync::Notify> = LazyLock::new(tokio::sync::Notify::new);

/// Records the server's external URL (`https://host:port`), from which workspace URLs
/// (`spec.URL`, LogicalCluster `status.URL`) are built. The server calls this once it listens;
/// workspaces wait in `Scheduling` until it is known.
pub fn set_server_url(state: &Arc<ApiState>, url: &str) {
    let mut urls = SERVER_URLS.lock().unwrap_or_else(|p| p.into_inner());
    urls.retain(|(w, _)| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), Arc::as_ptr(state)));
    urls.push((Arc::downgrade(state), url.trim_end_matches('/').to_string()));
    drop(urls);
    URL_SET.notify_waiters();
}

/// The server's external URL, if recorded.
pub fn server_url(state: &ApiState) -> Option<String> {
    let urls = SERVER_URLS.lock().unwrap_or_else(|p| p.into_inner());
    urls.iter()
        .find(|(w, _)| std::ptr::eq(w.as_ptr(), state))
        .map(|(_, u)| u.clone())
}

async fn wait_server_url(state: &ApiState) -> String {
    loop {
        let notified = URL_SET.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if let Some(url) = server_url(state) {
            return url;
        }
        notified.await;
    }
}

/// Creates kcp's built-in WorkspaceTypes in `root` and the grant to use them (idempotent). `run`
/// does this too; the server may call it before it starts listening.
pub async fn bootstrap(state: &ApiState) {
    catalog::ensure_builtins(state).await;
}

/// Runs the workspace controllers until aborted.
pub async fn run(state: Arc<ApiState>) {
    lifecycle::run(state).await;
}
