//! Namespace deletion: a terminating namespace has its content deleted, then its `kubernetes`
//! finalizer removed, and is removed once no finalizers remain.

use serde_json::{Value, json};

use crate::client::Client;
use crate::client::landed;
use crate::objects::meta;
use crate::state::ServerState;
use crate::store::ObjectKey;

pub async fn reconcile(state: &ServerState, cluster: &str, ns: &Value) {
    if !meta::is_deleting(ns) {
        return;
    }
    let name = meta::name(ns).unwrap_or_default().to_string();
    let mut remaining = 0usize;
    for def in state.registry.resources(cluster) {
        if !def.namespaced || def.create_only {
            continue;
        }
        for obj in state.list_all(&def.group, &def.resource, Some(cluster), Some(&name)) {
            remaining += 1;
            landed(
                Client::system(state)
                    .delete(&def.group, &def.resource, &obj, Some("Background"))
                    .await,
            );
        }
    }
    if remaining > 0 {
        // Deletions arrive as events and bring us back through `recheck`.
        let left: usize = state
            .registry
            .resources(cluster)
            .iter()
            .filter(|d| d.namespaced && !d.create_only)
            .map(|d| state.list_all(&d.group, &d.resource, Some(cluster), Some(&name)).len())
            .sum();
        if left > 0 {
            return;
        }
    }
    finalize(state, cluster, &name).await;
}

/// Removes the `kubernetes` finalizer once the namespace is empty; removes the namespace when nothing
/// else holds it.
async fn finalize(state: &ServerState, cluster: &str, name: &str) {
    let key = ObjectKey {
        group: String::new(),
        resource: "namespaces".into(),
        cluster: cluster.into(),
        namespace: String::new(),
        name: name.into(),
    };
    let Ok(Some(ns)) = state.store.get(&key) else { return };
    let spec_finalizers: Vec<Value> = ns
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter(|f| f.as_str() != Some("kubernetes")).cloned().collect())
        .unwrap_or_default();
    // Through `/finalize`: the namespace is removed once no finalizers of either kind remain.
    let mut updated = ns.clone();
    updated["spec"]["finalizers"] = json!(spec_finalizers);
    landed(Client::system(state).finalize_namespace(&ns, updated).await);
}

/// Called when namespaced content is deleted: the namespace may now be empty.
pub async fn recheck(state: &ServerState, cluster: &str, namespace: &str) {
    let key = ObjectKey {
        group: String::new(),
        resource: "namespaces".into(),
        cluster: cluster.into(),
        namespace: String::new(),
        name: namespace.into(),
    };
    if let Ok(Some(ns)) = state.store.get(&key) {
        reconcile(state, cluster, &ns).await;
    }
}

/// Continues deletions that were in progress when the server stopped.
pub async fn resume(state: &ServerState) {
    for ns in state.list_all("", "namespaces", None, None) {
        if meta::is_deleting(&ns) {
            let key = meta::key_of("", "namespaces", &ns);
            reconcile(state, &key.cluster, &ns).await;
        }
    }
}
