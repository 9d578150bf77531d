//! The in-memory index the virtual workspace and claim-label admission read on every request: one
//! [`ExportView`] per export and the accepted claims per consumer cluster. Written only by the
//! controller; readers take a read lock and share the view (an export bound in every workspace has
//! as many consumers as there are workspaces, so neither a read nor one consumer's change may copy
//! them all).
//!
//! The index is a field of the server's state (`ServerState::apis`), so each server in a process
//! (tests run several) has its own and it goes away with the server. The controller clears it when
//! it starts and rebuilds it from storage.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// `(logical cluster name, object name)`.
pub type ExportKey = (String, String);

/// A claim as admission applies it to objects of one consumer cluster.
#[derive(Clone, Debug)]
pub struct ClaimLabel {
    pub claim: AcceptedClaim,
    pub label_key: String,
    pub label_value: String,
}

/// Everything one server's controller publishes.
#[derive(Debug, Default)]
pub struct Index {
    pub exports: RwLock<HashMap<ExportKey, Arc<ExportView>>>,
    /// Consumer cluster → claims of its Bound bindings.
    pub claims: RwLock<HashMap<String, Vec<ClaimLabel>>>,
}

impl Index {
    /// Forgets everything (controller start).
    pub fn clear(&self) {
        self.exports.write().unwrap_or_else(|p| p.into_inner()).clear();
        self.claims.write().unwrap_or_else(|p| p.into_inner()).clear();
    }

    pub fn export(&self, key: &ExportKey) -> Option<Arc<ExportView>> {
        self.exports.read().unwrap_or_else(|p| p.into_inner()).get(key).cloned()
    }

    pub fn set_export(&self, key: ExportKey, view: Option<ExportView>) {
        let mut guard = self.exports.write().unwrap_or_else(|p| p.into_inner());
        match view {
            Some(v) => guard.insert(key, Arc::new(v)),
            None => guard.remove(&key),
        };
    }

    /// Sets (or with None removes) consumer `cluster` of the export's view, leaving the rest as it
    /// is; returns whether that gave the view its first consumer or took its last, or None when
    /// there is no view to change. The view is copied only while a reader still holds the previous one.
    pub fn set_consumer(&self, key: &ExportKey, cluster: &str, consumer: Option<BoundConsumer>) -> Option<bool> {
        let mut guard = self.exports.write().unwrap_or_else(|p| p.into_inner());
        let view = Arc::make_mut(guard.get_mut(key)?);
        let had = !view.bindings.is_empty();
        match consumer {
            Some(c) => {
                view.bindings.insert(cluster.to_string(), c);
            }
            None => {
                view.bindings.remove(cluster);
            }
        }
        let has = !view.bindings.is_empty();
        Some(had != has)
    }

    pub fn set_claims(&self, cluster: &str, claims: Vec<ClaimLabel>) {
        let mut guard = self.claims.write().unwrap_or_else(|p| p.into_inner());
        if claims.is_empty() {
            guard.remove(cluster);
        } else {
            guard.insert(cluster.to_string(), claims);
        }
    }

    /// Claims on `group/resource` objects in `cluster`.
    pub fn claims_for(&self, cluster: &str, group: &str, resource: &str) -> Vec<ClaimLabel> {
        self.claims
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(cluster)
            .map(|all| {
                all.iter()
                    .filter(|c| c.claim.group == group && c.claim.resource == resource)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// What the APIExport virtual workspace serves for one export (maintained by `apis`).
#[derive(Clone, Debug, Default)]
pub struct ExportView {
    /// Logical cluster name of the export's workspace.
    pub export_cluster: String,
    pub export_name: String,
    pub identity_hash: String,
    /// The exported resources as consumers see them (from the export's latest resource schemas).
    pub resources: Vec<Arc<crate::registry::ResourceDef>>,
    /// Consumer logical clusters with a Bound APIBinding to this export.
    pub bindings: std::collections::BTreeMap<String, BoundConsumer>,
}

/// One consumer of an export.
#[derive(Clone, Debug, Default)]
pub struct BoundConsumer {
    pub binding_name: String,
    /// Permission claims the consumer accepted, with their effective verbs.
    pub claims: Vec<AcceptedClaim>,
}

/// An accepted permission claim: access to `group/resource` objects of the consumer.
#[derive(Clone, Debug)]
pub struct AcceptedClaim {
    pub group: String,
    pub resource: String,
    /// Effective verbs: the intersection of what the export claims and the binding accepts.
    pub verbs: Vec<String>,
    /// Objects the claim covers; None = all of them (`matchAll`).
    pub selector: Option<crate::selector::LabelSelector>,
    /// The selector's `matchLabels`, stamped on objects created through the virtual workspace.
    pub match_labels: std::collections::BTreeMap<String, String>,
}
