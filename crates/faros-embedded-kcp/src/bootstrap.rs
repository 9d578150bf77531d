//! What a fresh server contains before anyone writes: the `default` namespace of `root` and the
//! default RBAC roles every Kubernetes cluster has. Created through the in-process client, so they
//! pass the same admission as any other write; nothing here writes to the store directly.

use serde_json::{Value, json};

use crate::client::Client;
use crate::state::ServerState;
use crate::store::ObjectKey;

fn object(kind: &str, api_version: &str, name: &str, extra: Value) -> Value {
    let mut o = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
    if let (Some(o), Some(extra)) = (o.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            o.insert(k.clone(), v.clone());
        }
    }
    o
}

/// The objects a new logical cluster starts with.
pub fn default_objects() -> Vec<(ObjectKey, Value)> {
    let rbac = "rbac.authorization.k8s.io";
    let cr = |name: &str, rules: Value| {
        (
            ObjectKey::new(rbac, "clusterroles", "", "", name),
            object(
                "ClusterRole",
                "rbac.authorization.k8s.io/v1",
                name,
                json!({"rules": rules}),
            ),
        )
    };
    vec![
        (
            ObjectKey::new("", "namespaces", "", "", "default"),
            object(
                "Namespace",
                "v1",
                "default",
                json!({"spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
            ),
        ),
        cr(
            "cluster-admin",
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
        ),
        cr(
            "admin",
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
        ),
        cr(
            "edit",
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]}]),
        ),
        cr(
            "view",
            json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]),
        ),
        cr(
            "system:discovery",
            json!([{"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/readyz", "/openapi", "/openapi/*", "/version", "/version/"], "verbs": ["get"]}]),
        ),
    ]
}

/// kcp's binding (its `config/root`) letting every authenticated user into root.
const ROOT_ACCESS_BINDING: &str = "system:kcp:tenancy:authenticated:access";

/// Creates the default objects of `root` that are missing (idempotent across restarts): the defaults
/// every logical cluster has, the root LogicalCluster, and access to root for authenticated users.
pub async fn ensure_root(state: &ServerState) {
    ensure_cluster(state, "root").await;
    let extra = vec![
        (
            ObjectKey::new(
                "rbac.authorization.k8s.io",
                "clusterroles",
                "",
                "",
                "system:kcp:workspace:access",
            ),
            object(
                "ClusterRole",
                "rbac.authorization.k8s.io/v1",
                "system:kcp:workspace:access",
                json!({"rules": [{"nonResourceURLs": ["/"], "verbs": ["access"]}]}),
            ),
        ),
        (
            ObjectKey::new(
                "rbac.authorization.k8s.io",
                "clusterrolebindings",
                "",
                "",
                ROOT_ACCESS_BINDING,
            ),
            object(
                "ClusterRoleBinding",
                "rbac.authorization.k8s.io/v1",
                ROOT_ACCESS_BINDING,
                json!({"metadata": {"name": ROOT_ACCESS_BINDING, "annotations": {crate::kcp::root_apis::REPLICATE_ANNOTATION: "core.kcp.io"}},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:kcp:workspace:access"},
                       "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}]}),
            ),
        ),
        (
            ObjectKey::new("core.kcp.io", "logicalclusters", "", "", "cluster"),
            object(
                "LogicalCluster",
                "core.kcp.io/v1alpha1",
                "cluster",
                json!({"metadata": {"name": "cluster", "annotations": {"kcp.io/path": "root"}, "generation": 1},
                       "spec": {}, "status": {"phase": "Ready", "URL": ""}}),
            ),
        ),
    ];
    create_missing(state, "root", extra).await;
}

/// Creates the default objects of `cluster` that are missing.
pub async fn ensure_cluster(state: &ServerState, cluster: &str) {
    create_missing(state, cluster, default_objects()).await;
}

/// Creates the missing ones through the write pipeline, as the system. A create drops the status of
/// kinds with a status subresource, so it follows as a second write, as a controller would do it.
async fn create_missing(state: &ServerState, cluster: &str, objects: Vec<(ObjectKey, Value)>) {
    let client = Client::system(state);
    for (mut key, obj) in objects {
        key.cluster = cluster.to_string();
        if matches!(state.store.get(&key), Ok(Some(_))) {
            continue;
        }
        let status = obj.get("status").cloned();
        let created = match client.create(cluster, &key.group, &key.resource, obj).await {
            Ok(created) => created,
            Err(e) => {
                tracing::warn!(error = %e, cluster, name = %key.name, "could not create default object");
                continue;
            }
        };
        if let Some(status) = status.filter(|s| created.get("status") != Some(s)) {
            let mut with_status = created.clone();
            with_status["status"] = status;
            if let Err(e) = client
                .update_status(&key.group, &key.resource, &created, with_status)
                .await
            {
                tracing::warn!(error = %e, cluster, name = %key.name, "could not set the status of a default object");
            }
        }
    }
}
