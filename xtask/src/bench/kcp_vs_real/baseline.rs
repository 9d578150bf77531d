//! Real kcp's own share of the platform's figures, measured on the platform's kcp in the same run:
//! bare workspaces of the `provider` WorkspaceType, created in the parent the reconciler creates
//! provider workspaces in (`root:faros:providers`), as the reconciler's own kcp user (kcp records
//! no default API bindings for `system:masters`, so an admin's workspace never becomes Ready), and
//! read from one watch as the Providers are. What provisioning a Provider can never beat: each one
//! needs such a workspace.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::super::faros::Faros;
use super::super::watch::watch_until_as;
use faros_core::names;

/// How long the bare workspaces may take to be Ready.
const TIMEOUT: Duration = Duration::from_secs(300);

/// The workspace collection of the parent of provider workspaces.
fn collection() -> String {
    format!(
        "/clusters/{}/apis/tenancy.kcp.io/v1alpha1/workspaces",
        names::PROVIDERS_PATH
    )
}

/// A bare workspace of the `provider` type, as the reconciler's create sends it.
fn workspace(name: &str) -> Value {
    json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name},
        "spec": {"type": {"name": names::WORKSPACE_TYPE_PROVIDER, "path": names::WORKSPACE_TYPES_PATH}}})
}

/// Whether a workspace is Ready.
fn ready(ws: &Value) -> bool {
    ws.pointer("/status/phase").and_then(Value::as_str) == Some("Ready")
}

/// Creates workspaces `<prefix>-0..count` at once as the holder of `token`; each one's time from
/// the first create to Ready, read from one watch.
pub(super) async fn workspaces_to_ready(
    f: &Arc<Faros>,
    token: &str,
    prefix: &str,
    count: usize,
) -> anyhow::Result<Vec<Duration>> {
    let collection = collection();
    let names: Vec<String> = (0..count).map(|i| format!("{prefix}-{i}")).collect();
    let t0 = Instant::now();
    let creates: Vec<_> = names
        .iter()
        .map(|n| {
            let (http, url, token, body) = (
                f.http.clone(),
                format!("{}{collection}", f.url),
                token.to_string(),
                workspace(n),
            );
            tokio::spawn(async move {
                let resp = http.post(url).bearer_auth(token).json(&body).send().await?;
                let status = resp.status();
                let text = resp.text().await?;
                if !status.is_success() {
                    bail!("creating workspace {}: {status} {text}", body["metadata"]["name"]);
                }
                Ok(())
            })
        })
        .collect();
    for c in creates {
        c.await??;
    }
    watch_until_as(f, token, &collection, &names, t0, TIMEOUT, ready)
        .await
        .context("waiting for the bare workspaces")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_is_the_reconcilers() {
        assert_eq!(
            collection(),
            "/clusters/root:faros:providers/apis/tenancy.kcp.io/v1alpha1/workspaces"
        );
        assert_eq!(
            workspace("w")["spec"]["type"],
            json!({"name": "provider", "path": "root:faros"})
        );
        assert!(ready(&json!({"status": {"phase": "Ready"}})));
        assert!(!ready(&json!({"status": {"phase": "Initializing"}})));
    }
}
