//! In-process controllers that give the server Kubernetes' asynchronous behaviour: namespace
//! deletion, ownerReference garbage collection, ServiceAccount token secrets, each namespace's
//! `default` ServiceAccount and `kube-root-ca.crt`. They write through the in-process client only.

pub mod gc;
pub mod namespace;
pub mod namespace_defaults;
pub mod tokens;

use std::sync::Arc;

use crate::state::ServerState;
use crate::store::{Event, EventType};

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
