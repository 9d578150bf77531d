//! The server's shared state: the store, the registry of served resources, authentication and the
//! RBAC index, the logical cluster index, the export view, and the commit hook that keeps the
//! in-memory indexes current and feeds the controllers.
//!
//! Shared by the HTTP layer (`api`), the write pipeline (`write`) and the in-process controllers.
//! It must not know about HTTP: nothing here parses requests or builds responses.

use std::sync::{Arc, RwLock};

use crate::auth::{Authenticator, RbacIndex, ServiceAccountTokens};
use crate::registry::Registry;
use crate::store::{Event, Store};

/// Everything the server holds: storage, what is served, who may do what, the logical clusters,
/// and the channel to the controllers.
pub struct ServerState {
    pub store: Store,
    pub registry: Registry,
    pub authn: Authenticator,
    pub rbac: RwLock<RbacIndex>,
    /// Logical clusters by name and path (from LogicalCluster objects).
    pub clusters: RwLock<crate::kcp::clusters::ClusterIndex>,
    pub sa_tokens: ServiceAccountTokens,
    pub ca_pem: String,
    pub max_body_bytes: usize,
    /// Events of committed writes, for the in-process controllers (namespace deletion, GC, tokens).
    pub events: tokio::sync::mpsc::UnboundedSender<Arc<Event>>,
    pub metrics: crate::metrics::Metrics,
    /// The server's external URL (`https://host:port`) once it listens: workspace and endpoint
    /// slice URLs are built from it.
    pub server_url: tokio::sync::watch::Sender<Option<String>>,
    /// What the APIExport/APIBinding controller publishes for the virtual workspace and claim
    /// admission.
    pub apis: Arc<crate::kcp::apis::view::Index>,
}

impl ServerState {
    /// Runs after every committed write: keeps the RBAC index current (synchronously, so a binding is
    /// effective for the very next request) and hands events to the controllers.
    pub fn committed(&self, events: &[Event]) {
        for event in events {
            if event.key.group == "rbac.authorization.k8s.io" {
                crate::controllers::rbac::apply_event(&self.rbac, event);
            }
            if event.key.group == crate::kcp::clusters::LOGICAL_CLUSTER_GROUP {
                self.clusters
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .apply_event(event);
            }
            let _ = self.events.send(Arc::new(event.clone()));
        }
    }
}
