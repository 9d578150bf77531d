//! kcp on top of the Kubernetes machinery: logical clusters and workspaces, API exports and
//! bindings, and the virtual workspace views providers use.
//!
//! - `resources`: kcp's kinds as served resources (schemas from `faros_core::kcp`, v1alpha1⇄v1alpha2).
//! - `clusters`: the logical cluster index (name ⇄ path, phase), used to route `/clusters/<x>`.
//! - `admission`: checks and defaults on kcp objects before storage.
//! - `root_apis`: root's `tenancy.kcp.io` and `topology.kcp.io` exports, bound by universal types.
//! - `tenancy`: Workspace/WorkspaceType/LogicalCluster admission and lifecycle.
//! - `apis`: APIExport identity and endpoint slices, APIBinding admission and binding, claims.

pub mod admission;
pub mod apis;
pub mod clusters;
pub mod resources;
pub mod root_apis;
pub mod schemas;
pub mod tenancy;

use std::sync::Arc;

use crate::state::ServerState;

/// Starts kcp's controllers.
pub fn spawn_controllers(state: &Arc<ServerState>) -> Vec<tokio::task::JoinHandle<()>> {
    vec![
        tokio::spawn(tenancy::run(state.clone())),
        tokio::spawn(apis::run(state.clone())),
    ]
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
