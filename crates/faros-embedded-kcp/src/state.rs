//! The server's shared state: the store, the registry of served resources, authentication and the
//! RBAC index, the logical cluster index, the export view, and the commit hook that keeps the
//! in-memory indexes current and feeds the controllers.
//!
//! Shared by the HTTP layer (`api`), the write pipeline (`write`) and the in-process controllers.
//! It must not know about HTTP (nothing here parses requests or builds responses) and must not
//! write: the indexes follow what was committed.

use std::sync::{Arc, RwLock};

use crate::auth::{Authenticator, RbacIndex, RbacKind, ServiceAccountTokens};
use crate::clusters::{LOGICAL_CLUSTER_GROUP, LOGICAL_CLUSTER_RESOURCE};
use crate::objects::meta;
use crate::registry::Registry;
use crate::store::{Event, EventType, ListQuery, Store};

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Everything the server holds: storage, what is served, who may do what, the logical clusters,
/// and the channel to the controllers.
pub struct ServerState {
    pub store: Store,
    pub registry: Registry,
    pub authn: Authenticator,
    /// OIDC ID tokens of one issuer, tried after the static and ServiceAccount tokens.
    pub oidc: Option<faros_core::oidc::Verifier>,
    pub rbac: RwLock<RbacIndex>,
    /// Logical clusters by name and path (from LogicalCluster objects).
    pub clusters: RwLock<crate::clusters::ClusterIndex>,
    pub sa_tokens: ServiceAccountTokens,
    pub ca_pem: String,
    pub max_body_bytes: usize,
    /// Pause before a workspace moves to its next phase (see [`crate::Config::phase_delay`]).
    pub phase_delay: std::time::Duration,
    /// Events of committed writes, for the in-process controllers (namespace deletion, GC, tokens).
    pub events: tokio::sync::mpsc::UnboundedSender<Arc<Event>>,
    pub metrics: crate::metrics::Metrics,
    /// The server's external URL (`https://host:port`) once it listens: workspace and endpoint
    /// slice URLs are built from it.
    pub server_url: tokio::sync::watch::Sender<Option<String>>,
    /// What the APIExport/APIBinding controller publishes for the virtual workspace and claim
    /// admission.
    pub apis: Arc<crate::kcp::apis::view::Index>,
    /// Protobuf messages of listed objects, spliced into protobuf lists.
    pub protobuf_items: crate::item_cache::ItemCache,
}

impl ServerState {
    /// Runs after every committed write: keeps the RBAC index current (synchronously, so a binding is
    /// effective for the very next request) and hands events to the controllers.
    pub fn committed(&self, events: &[Event]) {
        for event in events {
            if event.key.group == RBAC_GROUP {
                self.apply_rbac_event(event);
            }
            if event.key.group == LOGICAL_CLUSTER_GROUP {
                self.clusters
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .apply_event(event);
            }
            if event.event_type != EventType::Added
                && let Ok(key) = event.key.encode()
            {
                self.protobuf_items.forget(&key);
            }
            let _ = self.events.send(Arc::new(event.clone()));
        }
    }

    /// Loads every stored RBAC object and LogicalCluster into the indexes (startup).
    pub fn rebuild_indexes(&self) {
        {
            let mut index = self.rbac.write().unwrap_or_else(|p| p.into_inner());
            for resource in ["clusterroles", "roles", "clusterrolebindings", "rolebindings"] {
                let Some(kind) = RbacKind::from_resource(resource) else {
                    continue;
                };
                for (cluster, obj) in self.list_everywhere(RBAC_GROUP, resource) {
                    if let Err(e) = index.upsert(&cluster, kind, &obj) {
                        let name = meta::name(&obj).unwrap_or_default();
                        tracing::warn!(error = %e, name, "ignoring malformed RBAC object");
                    }
                }
            }
        }
        let items = self.list_everywhere(LOGICAL_CLUSTER_GROUP, LOGICAL_CLUSTER_RESOURCE);
        let mut index = self.clusters.write().unwrap_or_else(|p| p.into_inner());
        for (cluster, obj) in items {
            index.upsert(&cluster, &obj);
        }
    }

    fn apply_rbac_event(&self, event: &Event) {
        let Some(kind) = RbacKind::from_resource(&event.key.resource) else {
            return;
        };
        let mut index = self.rbac.write().unwrap_or_else(|p| p.into_inner());
        match event.event_type {
            EventType::Deleted => index.remove(&event.key.cluster, kind, &event.key.namespace, &event.key.name),
            _ => {
                if let Err(e) = index.upsert(&event.key.cluster, kind, &event.object) {
                    tracing::warn!(error = %e, name = %event.key.name, "ignoring malformed RBAC object");
                }
            }
        }
    }

    /// Lists every object of `group/resource` in `cluster` (all clusters with None), in `namespace`
    /// (all with None). A storage failure is logged and reads as no objects: the callers are
    /// controllers and indexes that the next event brings back.
    pub fn list_all(
        &self,
        group: &str,
        resource: &str,
        cluster: Option<&str>,
        namespace: Option<&str>,
    ) -> Vec<serde_json::Value> {
        let query = ListQuery {
            group: group.into(),
            resource: resource.into(),
            cluster: cluster.map(String::from),
            namespace: namespace.map(String::from),
            limit: None,
            continue_token: None,
            filter: None,
            name: None,
        };
        match self.store.list(&query) {
            Ok(page) => page.items,
            Err(e) => {
                tracing::warn!(error = %e, group, resource, "listing stored objects failed");
                Vec::new()
            }
        }
    }

    /// Every stored object of `group/resource` in every cluster, with its cluster.
    fn list_everywhere(&self, group: &str, resource: &str) -> Vec<(String, serde_json::Value)> {
        self.list_all(group, resource, None, None)
            .into_iter()
            .map(|obj| {
                let cluster = meta::cluster(&obj).to_string();
                (cluster, obj)
            })
            .collect()
    }
}
