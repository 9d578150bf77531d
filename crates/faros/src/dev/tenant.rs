//! The demo tenant of `faros dev`: organization `demo` with workspace `default`, administered by
//! the dev user, created through the same code paths as `POST /api/orgs` and
//! `POST /api/orgs/demo/workspaces`. Idempotent across restarts.

use std::sync::Arc;
use std::time::Duration;

use faros_core::status::Status;
use faros_hub_api::tenancy::Tenancy;
use faros_hub_api::tenancy::spaces::{self, CreateRequest};
use tokio::sync::watch;

pub const DEMO_ORG: &str = "demo";
pub const DEMO_WORKSPACE: &str = "default";

/// A ready-to-paste MCP client configuration (streamable HTTP with a bearer).
pub fn mcp_client_config(url: &str, token: &str) -> String {
    serde_json::json!({
        "mcpServers": {"faros-demo": {"type": "http", "url": url, "headers": {"Authorization": format!("Bearer {token}")}}}
    })
    .to_string()
}

/// Creates the demo org and workspace once the hub's workspace tree exists. Until the reconciler's
/// bootstrap is done kcp answers 404 (no tenants workspace), 403 (workspace types not there yet) or
/// 503, so every failure is retried with backoff; after `GIVE_UP` the last error is logged.
/// Creates the demo organization and workspace with `user` as admin, retrying while the platform
/// starts; flips `done` to true once they exist.
pub async fn seed(tenancy: Arc<Tenancy>, user: String, done: watch::Sender<bool>, mut stop: watch::Receiver<bool>) {
    let started = tokio::time::Instant::now();
    let mut delay = Duration::from_millis(100);
    loop {
        match try_seed(&tenancy, &user).await {
            Ok(cluster) => {
                tracing::info!(org = DEMO_ORG, workspace = DEMO_WORKSPACE, %cluster, %user, "demo tenant ready");
                let _ = done.send(true);
                return;
            }
            Err(s) if started.elapsed() > GIVE_UP => {
                tracing::warn!(code = s.code, message = %s.message, "cannot create the demo tenant; giving up");
                return;
            }
            Err(s) => {
                tracing::debug!(code = s.code, message = %s.message, "demo tenant not ready yet, retrying");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        // While the platform starts (the tree and the workspace types appear within a second or
        // two) retry often, so the banner is not held back by a long sleep; later, back off.
        let cap = if started.elapsed() < STARTING {
            Duration::from_millis(200)
        } else {
            Duration::from_secs(2)
        };
        delay = (delay * 2).min(cap);
    }
}

/// How long start-up is expected to take: the demo tenant is retried every 200 ms until then.
const STARTING: Duration = Duration::from_secs(10);

/// How long the demo tenant is retried before `faros dev` gives up on it (the rest keeps running).
const GIVE_UP: Duration = Duration::from_secs(300);

async fn try_seed(t: &Tenancy, user: &str) -> Result<String, Status> {
    let org_req = CreateRequest {
        name: DEMO_ORG.into(),
        display_name: Some("Demo".into()),
    };
    spaces::create_org(t, &org_req, user).await?;
    let org = t.access.resolve(DEMO_ORG, None).await?;
    let ws_req = CreateRequest {
        name: DEMO_WORKSPACE.into(),
        display_name: Some("Default".into()),
    };
    let (ws, _) = spaces::create_team_workspace(t, &org, &ws_req, user).await?;
    Ok(ws.spec.cluster.clone().unwrap_or_default())
}
