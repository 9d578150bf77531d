//! The objects the lifecycle creates in a new logical cluster: the default RBAC roles, the owner's
//! `workspace-admin` binding, and the type chain's default APIBindings (with their claims accepted).
//! Everything is created through the in-process client; existing objects are left alone.

use serde_json::{Value, json};

use super::super::types::{self, TypeInfo};
use super::super::{names, workspace_types};
use super::plan;
use crate::auth::UserInfo;
use crate::clusters::PATH_ANNOTATION;
use crate::state::ServerState;
use crate::store::ObjectKey;

/// What every logical cluster has (default RBAC roles); the `default` namespace comes from the
/// universal initializer only, as in kcp.
pub(super) async fn ensure_default_objects(state: &ServerState, cluster: &str) {
    for (mut key, obj) in crate::bootstrap::default_objects() {
        if key.group.is_empty() && key.resource == "namespaces" {
            continue;
        }
        key.cluster = cluster.to_string();
        if matches!(state.store.get(&key), Ok(Some(_))) {
            continue;
        }
        if let Err(e) = crate::client::Client::system(state)
            .create(cluster, &key.group, &key.resource, obj)
            .await
            && e.code != 409
        {
            tracing::warn!(error = %e, cluster, name = %key.name, "cannot create default object");
        }
    }
}

/// kcp's `workspace-admin` ClusterRoleBinding: the workspace's creator is its cluster-admin.
pub(super) async fn ensure_workspace_admin(state: &ServerState, cluster: &str, owner: &str) {
    let Some(username) = serde_json::from_str::<Value>(owner)
        .ok()
        .and_then(|o| o.get("username").and_then(Value::as_str).map(String::from))
    else {
        return;
    };
    let rbac = "rbac.authorization.k8s.io";
    let key = ObjectKey::new(rbac, "clusterrolebindings", cluster, "", "workspace-admin");
    if matches!(state.store.get(&key), Ok(Some(_))) {
        return;
    }
    // cluster-admin grants on kcp's APIs and tenancy, which kcp's replication controller marks.
    let crb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "workspace-admin", "annotations": {crate::kcp::root_apis::REPLICATE_ANNOTATION: "apis.kcp.io,tenancy.kcp.io"}},
        "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": rbac, "kind": "User", "name": username}]});
    if let Err(e) = crate::client::Client::system(state)
        .create(cluster, rbac, "clusterrolebindings", crb)
        .await
        && e.code != 409
    {
        tracing::warn!(error = %e, cluster, "cannot create workspace-admin binding");
    }
}

/// What the `system:apibindings` initializer achieved in one pass.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct DefaultBindings {
    /// Every default APIBinding reports `InitialBindingCompleted=True`.
    pub complete: bool,
    /// The creates that were refused (kcp's `APIBindingsInitialized=False` lists them).
    pub errors: Vec<String>,
}

/// Creates the chain's default APIBindings that are missing, as `creator` when the workspace
/// recorded one (kcp binds as the creator, so a creator without `bind` on an export gets no
/// binding and the workspace stays Initializing), else as the system; complete once every one of
/// them reports `InitialBindingCompleted=True` (the binding controller binds them).
pub(super) async fn default_bindings(
    state: &ServerState,
    cluster: &str,
    aliases: &[TypeInfo],
    creator: Option<UserInfo>,
) -> DefaultBindings {
    let client = match creator {
        Some(user) => crate::client::Client::acting_as(state, user),
        None => crate::client::Client::system(state),
    };
    let mut errors = Vec::new();
    let mut complete = true;
    for reference in types::default_bindings(aliases) {
        let export_path = reference.path.clone().unwrap_or_default();
        let name = names::default_binding_name(cluster, &export_path, &reference.export);
        let key = ObjectKey::new("apis.kcp.io", "apibindings", cluster, "", name.as_str());
        match state.store.get(&key) {
            Ok(Some(binding)) => complete &= plan::binding_completed(&binding),
            Ok(None) => {
                complete = false;
                let claims = accepted_claims(state, &export_path, &reference.export);
                let binding = json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
                    "metadata": {"name": name, "annotations": {PATH_ANNOTATION: workspace_types::path_of_cluster(state, cluster).unwrap_or_default()}},
                    "spec": {"reference": {"export": {"path": export_path, "name": reference.export}},
                             "permissionClaims": claims}});
                if let Err(e) = client.create(cluster, "apis.kcp.io", "apibindings", binding).await
                    && e.code != 409
                {
                    tracing::warn!(error = %e, cluster, "cannot create default APIBinding");
                    errors.push(e.message);
                }
            }
            Err(_) => complete = false,
        }
    }
    DefaultBindings { complete, errors }
}

/// kcp pre-accepts every claim of a default export, with its default selector or all objects.
pub(super) fn accepted_claims(state: &ServerState, export_path: &str, export: &str) -> Vec<Value> {
    let Some(export_cluster) = workspace_types::cluster_of_path(state, export_path) else {
        return Vec::new();
    };
    let key = ObjectKey::new("apis.kcp.io", "apiexports", export_cluster, "", export);
    let Ok(Some(obj)) = state.store.get(&key) else {
        return Vec::new();
    };
    obj.pointer("/spec/permissionClaims")
        .and_then(Value::as_array)
        .map(|claims| {
            claims
                .iter()
                .map(|c| {
                    let mut accepted = json!({"resource": c["resource"], "verbs": c.get("verbs").cloned().unwrap_or(json!([])),
                        "selector": c.get("defaultSelector").cloned().unwrap_or(json!({"matchAll": true})),
                        "state": "Accepted"});
                    for field in ["group", "identityHash"] {
                        if let Some(v) = c.get(field).filter(|v| v.as_str().is_some_and(|s| !s.is_empty())) {
                            accepted[field] = v.clone();
                        }
                    }
                    accepted
                })
                .collect()
        })
        .unwrap_or_default()
}
