//! In-process controllers that give the server Kubernetes' asynchronous behaviour: namespace
//! deletion, ownerReference garbage collection, ServiceAccount token secrets, each namespace's
//! `default` ServiceAccount and `kube-root-ca.crt`. They write through the in-process client only.

pub mod gc;
pub mod namespace;
pub mod namespace_defaults;
pub mod tokens;

use std::sync::Arc;

use serde_json::Value;

use crate::state::ServerState;
use crate::store::{Event, EventType, ListQuery, ObjectKey};

/// Runs every controller over the committed-write events until the channel closes.
pub async fn run(state: Arc<ServerState>, mut events: tokio::sync::mpsc::UnboundedReceiver<Arc<Event>>) {
    let mut gc = gc::Collector::default();
    gc.rebuild(&state);
    // Work left over from before a restart (terminating namespaces, unfilled token secrets).
    namespace::resume(&state).await;
    tokens::resume(&state).await;
    namespace_defaults::resume(&state).await;
    gc.resume(&state).await;
    while let Some(event) = events.recv().await {
        gc.observe(&state, &event).await;
        if event.event_type != EventType::Deleted {
            match (event.key.group.as_str(), event.key.resource.as_str()) {
                ("", "namespaces") => {
                    namespace::reconcile(&state, &event.key.cluster, &event.object).await;
                    namespace_defaults::ensure(&state, &event.key.cluster, &event.key.name).await;
                }
                ("", "secrets") => tokens::reconcile(&state, &event.key, &event.object).await,
                _ => {}
            }
        }
        if event.key.namespace.is_empty() {
            continue;
        }
        if event.key.group.is_empty() && namespace_defaults::is_defaulted(&event.key.resource, &event.key.name) {
            namespace_defaults::ensure(&state, &event.key.cluster, &event.key.namespace).await;
        }
        // A namespace waiting for its content to go may be done now.
        if event.event_type == EventType::Deleted {
            namespace::recheck(&state, &event.key.cluster, &event.key.namespace).await;
        }
    }
}

/// Lists every object of `group/resource` in `cluster` (all clusters with None).
pub fn list_all(
    state: &ServerState,
    group: &str,
    resource: &str,
    cluster: Option<&str>,
    namespace: Option<&str>,
) -> Vec<Value> {
    let q = ListQuery {
        group: group.into(),
        resource: resource.into(),
        cluster: cluster.map(String::from),
        namespace: namespace.map(String::from),
        limit: None,
        continue_token: None,
        filter: None,
    };
    match state.store.list(&q) {
        Ok(page) => page.items,
        Err(e) => {
            tracing::warn!(error = %e, group, resource, "controller list failed");
            Vec::new()
        }
    }
}

/// The storage key of a stored object of the given resource.
pub fn key_of(group: &str, resource: &str, obj: &Value) -> ObjectKey {
    let s = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
    ObjectKey {
        group: group.into(),
        resource: resource.into(),
        cluster: s("/metadata/annotations/kcp.io~1cluster"),
        namespace: s("/metadata/namespace"),
        name: s("/metadata/name"),
    }
}

/// The result of a controller write, logged when it did not land: conflicts and not-found are
/// expected races, and the next event brings the controller back.
pub fn landed<T>(result: Result<T, faros_core::status::Status>) -> Option<T> {
    match result {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::debug!(code = e.code, reason = %e.reason, message = %e.message, "controller write lost a race");
            None
        }
    }
}

/// The resourceVersion of a stored object.
pub fn rv(obj: &Value) -> Option<u64> {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|r| r.parse().ok())
}
