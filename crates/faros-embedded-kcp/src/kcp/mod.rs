//! kcp on top of the Kubernetes machinery: logical clusters and workspaces, API exports and
//! bindings, and the virtual workspace views providers use.
//!
//! - `resources`: kcp's kinds as served resources (schemas from `faros_core::kcp`, v1alpha1⇄v1alpha2).
//! - `clusters`: the inactive-cluster filter and the stored LogicalCluster of a cluster (the index
//!   itself, name ⇄ path and phase, is `crate::clusters`).
//! - `crd_rules`: the CEL rules of kcp's CRDs, written out and checked with their schemas.
//! - `admission`: checks and defaults on kcp objects before storage, one plugin per resource family;
//!   it reads and never writes (the write pipeline calls it).
//! - `root_apis`: root's `tenancy.kcp.io` and `topology.kcp.io` exports, bound by universal types.
//! - `tenancy`: Workspace/WorkspaceType/LogicalCluster admission and lifecycle.
//! - `apis`: APIExport identity and endpoint slices, APIBinding admission and binding, claims.

pub mod admission;
pub mod apis;
pub mod clusters;
pub mod crd_rules;
pub mod resources;
pub mod root_apis;
pub mod tenancy;

use std::sync::Arc;

use crate::state::ServerState;

/// Starts kcp's controllers; the server takes requests only after this returns.
pub fn spawn_controllers(state: &Arc<ServerState>) -> Vec<tokio::task::JoinHandle<()>> {
    vec![tokio::spawn(tenancy::run(state.clone())), apis::start(state.clone())]
}
