//! `defaultAPIBindingLifecycle: Maintain` (kcp's default-APIBinding lifecycle controller): after
//! initialization, the default APIBindings of every type in a Ready workspace's chain that says
//! `Maintain` keep following their export — a binding that went missing is created again and the
//! accepted claims are the export's current ones (with its default selectors). `InitializeOnly`
//! types (the default) are left alone once the workspace is Ready.
//!
//! Runs on every APIExport change, over every Ready logical cluster.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};

use super::super::types::{self, TypeInfo};
use super::super::{names, workspace_types};
use super::create::accepted_claims;
use crate::client::landed;
use crate::clusters::PATH_ANNOTATION;
use crate::objects::meta;
use crate::state::ServerState;
use crate::store::{ObjectKey, WatchFilter};

const MAINTAIN: &str = "Maintain";
/// Writes per binding and pass before waiting for the next export change.
const ATTEMPTS: usize = 5;

/// Runs until aborted.
pub async fn run(state: Arc<ServerState>) {
    loop {
        let from = state.store.current_rv();
        let filter = WatchFilter {
            group: "apis.kcp.io".into(),
            resource: "apiexports".into(),
            cluster: None,
            namespace: None,
        };
        let mut events = match state.store.watch(from, filter) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "default binding lifecycle cannot watch exports; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        reconcile_all(&state).await;
        // A lagging watch ends with an error: start over from a full pass.
        while let Some(Ok(_)) = events.next().await {
            reconcile_all(&state).await;
        }
    }
}

async fn reconcile_all(state: &ServerState) {
    let ready: Vec<String> = {
        let clusters = state.clusters.read().unwrap_or_else(|p| p.into_inner());
        clusters.ready_names()
    };
    for cluster in ready {
        reconcile(state, &cluster).await;
    }
}

/// The chain's types that maintain their default bindings.
fn maintaining(aliases: &[TypeInfo]) -> Vec<TypeInfo> {
    aliases
        .iter()
        .filter(|t| t.spec.default_api_binding_lifecycle.as_deref() == Some(MAINTAIN))
        .cloned()
        .collect()
}

async fn reconcile(state: &ServerState, cluster: &str) {
    let Some(qualified) = workspace_types::cluster_type(state, cluster) else {
        return;
    };
    let Some((path, name)) = qualified.rsplit_once(':') else {
        return;
    };
    let get = |p: &str, n: &str| workspace_types::lookup(state, p, n);
    let Some(leaf) = get(path, name) else { return };
    let Ok(aliases) = types::aliases(&get, &leaf) else {
        return;
    };
    let maintained = maintaining(&aliases);
    if maintained.is_empty() {
        return;
    }
    let client = crate::client::Client::system(state);
    for reference in types::default_bindings(&maintained) {
        let export_path = reference.path.clone().unwrap_or_default();
        let Some(export_cluster) = workspace_types::cluster_of_path(state, &export_path) else {
            continue;
        };
        let export_key = ObjectKey::new(
            "apis.kcp.io",
            "apiexports",
            export_cluster,
            "",
            reference.export.as_str(),
        );
        if !matches!(state.store.get(&export_key), Ok(Some(_))) {
            continue;
        }
        let claims = Value::Array(accepted_claims(state, &export_path, &reference.export));
        let binding_name = names::default_binding_name(cluster, &export_path, &reference.export);
        let key = ObjectKey::new("apis.kcp.io", "apibindings", cluster, "", binding_name.as_str());
        // A write can lose a race with the binding controller: re-read and try again.
        for _ in 0..ATTEMPTS {
            let written = match state.store.get(&key) {
                Ok(Some(existing)) => {
                    if meta::is_deleting(&existing)
                        || existing.pointer("/spec/permissionClaims").unwrap_or(&json!([])) == &claims
                    {
                        break;
                    }
                    let mut updated = existing.clone();
                    updated["spec"]["permissionClaims"] = claims.clone();
                    landed(client.update("apis.kcp.io", "apibindings", &existing, updated).await).is_some()
                }
                Ok(None) => {
                    let binding = json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
                        "metadata": {"name": binding_name,
                            "annotations": {PATH_ANNOTATION: workspace_types::path_of_cluster(state, cluster).unwrap_or_default()}},
                        "spec": {"reference": {"export": {"path": export_path, "name": reference.export}},
                                 "permissionClaims": claims}});
                    landed(client.create(cluster, "apis.kcp.io", "apibindings", binding).await).is_some()
                }
                Err(_) => false,
            };
            if written {
                break;
            }
        }
    }
}
