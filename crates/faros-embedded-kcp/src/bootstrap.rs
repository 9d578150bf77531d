//! What a fresh server contains before anyone writes: the `default` namespace of `root` and the
//! default RBAC roles every Kubernetes cluster has.

use serde_json::{Value, json};

use crate::state::ServerState;
use crate::store::{ObjectKey, WriteOp};

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
                "system:kcp:authenticated:access",
            ),
            object(
                "ClusterRoleBinding",
                "rbac.authorization.k8s.io/v1",
                "system:kcp:authenticated:access",
                json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:kcp:workspace:access"},
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

async fn create_missing(state: &ServerState, cluster: &str, objects: Vec<(ObjectKey, Value)>) {
    let now = crate::objects::now_rfc3339();
    for (mut key, mut obj) in objects {
        key.cluster = cluster.to_string();
        if matches!(state.store.get(&key), Ok(Some(_))) {
            continue;
        }
        let meta = crate::objects::meta_mut(&mut obj);
        meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        meta.insert("creationTimestamp".into(), json!(now));
        let ann = meta.entry("annotations").or_insert_with(|| json!({}));
        ann[crate::objects::CLUSTER_ANNOTATION] = json!(cluster);
        match state.store.write(vec![WriteOp::Create { key, object: obj }]).await {
            Ok(events) => state.committed(&events),
            Err(e) => tracing::warn!(error = %e, cluster, "could not create default object"),
        }
    }
}
