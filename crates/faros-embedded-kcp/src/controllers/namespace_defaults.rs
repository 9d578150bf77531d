//! What every active namespace holds in Kubernetes and kcp without anyone creating it: the
//! ServiceAccount `default` (kube-controller-manager's serviceaccounts controller) and the ConfigMap
//! `kube-root-ca.crt` with the CA clients should trust (the root-ca-cert-publisher). Both come back
//! when deleted, and the ConfigMap's content is restored when edited.

use serde_json::{Value, json};

use crate::client::Client;
use crate::client::landed;
use crate::objects::meta;
use crate::state::ServerState;
use crate::store::ObjectKey;

pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
const ROOT_CA_KEY: &str = "ca.crt";
const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// Whether the namespace `ns` of `cluster` exists and is not terminating.
fn active(state: &ServerState, cluster: &str, ns: &str) -> bool {
    let key = ObjectKey::new("", "namespaces", cluster, "", ns);
    matches!(state.store.get(&key), Ok(Some(n)) if !meta::is_deleting(&n))
}

fn stored(state: &ServerState, cluster: &str, resource: &str, ns: &str, name: &str) -> Option<Value> {
    state
        .store
        .get(&ObjectKey::new("", resource, cluster, ns, name))
        .ok()
        .flatten()
}

/// Ensures both objects in namespace `ns` of `cluster` (no-op for a missing or terminating one).
pub async fn ensure(state: &ServerState, cluster: &str, ns: &str) {
    if !active(state, cluster, ns) {
        return;
    }
    let client = Client::system(state);
    if stored(state, cluster, "serviceaccounts", ns, DEFAULT_SERVICE_ACCOUNT).is_none() {
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": ns}});
        landed(client.create(cluster, "", "serviceaccounts", sa).await);
    }
    let ca = state.ca_pem.clone();
    match stored(state, cluster, "configmaps", ns, ROOT_CA_CONFIG_MAP) {
        None => {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": ROOT_CA_CONFIG_MAP, "namespace": ns,
                    "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                "data": {ROOT_CA_KEY: ca}});
            landed(client.create(cluster, "", "configmaps", cm).await);
        }
        Some(cm) if needs_repair(&cm, &ca) => {
            let mut fixed = cm.clone();
            fixed["data"] = json!({ROOT_CA_KEY: ca});
            if let Some(map) = fixed.as_object_mut() {
                map.remove("binaryData");
            }
            fixed["metadata"]["annotations"][DESCRIPTION_ANNOTATION] = json!(DESCRIPTION);
            landed(client.update("", "configmaps", &cm, fixed).await);
        }
        Some(_) => {}
    }
}

/// The published ConfigMap holds exactly the CA (and its description); anything else is repaired.
fn needs_repair(cm: &Value, ca: &str) -> bool {
    if meta::is_deleting(cm) {
        return false;
    }
    let data_ok = cm.get("data") == Some(&json!({ROOT_CA_KEY: ca}));
    let no_binary = cm
        .get("binaryData")
        .is_none_or(|b| b.as_object().is_some_and(|m| m.is_empty()));
    let described = meta::annotation(cm, DESCRIPTION_ANNOTATION) == Some(DESCRIPTION);
    !(data_ok && no_binary && described)
}

/// Whether an event on `resource/name` concerns one of the defaulted objects.
pub fn is_defaulted(resource: &str, name: &str) -> bool {
    matches!(
        (resource, name),
        ("serviceaccounts", DEFAULT_SERVICE_ACCOUNT) | ("configmaps", ROOT_CA_CONFIG_MAP)
    )
}

/// Fills namespaces created while the server was down (or before the controller existed).
pub async fn resume(state: &ServerState) {
    for ns in state.list_all("", "namespaces", None, None) {
        let cluster = meta::cluster(&ns).to_string();
        let name = meta::name(&ns).unwrap_or_default();
        ensure(state, &cluster, name).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repair_decision() {
        let ca = "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n";
        let good =
            json!({"metadata": {"annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}}, "data": {ROOT_CA_KEY: ca}});
        assert!(!needs_repair(&good, ca));
        let mut edited = good.clone();
        edited["data"]["extra"] = json!("1");
        assert!(needs_repair(&edited, ca));
        let mut binary = good.clone();
        binary["binaryData"] = json!({"b": "eA=="});
        assert!(needs_repair(&binary, ca));
        let mut undescribed = good.clone();
        undescribed["metadata"]["annotations"] = json!({});
        assert!(needs_repair(&undescribed, ca));
        assert!(needs_repair(&json!({"metadata": {}}), ca));
        let mut deleting = edited.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(!needs_repair(&deleting, ca));
        assert!(is_defaulted("configmaps", ROOT_CA_CONFIG_MAP));
        assert!(!is_defaulted("configmaps", "default"));
    }
}
