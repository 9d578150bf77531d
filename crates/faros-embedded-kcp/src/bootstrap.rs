//! What a fresh server contains before anyone writes: the `default` namespace of `root` and the
//! default RBAC roles every Kubernetes cluster has.

use serde_json::{Value, json};

use crate::api::ApiState;
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

/// Creates the default objects of `root` that are missing (idempotent across restarts).
pub async fn ensure_root(state: &ApiState) {
    ensure_cluster(state, "root").await;
}

/// Creates the default objects of `cluster` that are missing.
pub async fn ensure_cluster(state: &ApiState, cluster: &str) {
    let now = crate::objects::now_rfc3339();
    for (mut key, mut obj) in default_objects() {
        key.cluster = cluster.to_string();
        if matches!(state.store.get(&key), Ok(Some(_))) {
            continue;
        }
        let meta = crate::objects::meta_mut(&mut obj);
        meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        meta.insert("creationTimestamp".into(), json!(now));
        meta.insert(
            "annotations".into(),
            json!({crate::objects::CLUSTER_ANNOTATION: cluster}),
        );
        match state.store.write(vec![WriteOp::Create { key, object: obj }]).await {
            Ok(events) => state.committed(&events),
            Err(e) => tracing::warn!(error = %e, cluster, "could not create default object"),
        }
    }
}
