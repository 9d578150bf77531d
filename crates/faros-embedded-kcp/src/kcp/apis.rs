//! APIExports, endpoint slices, APIBindings and permission claims.
//!
//! (Their admission, binding and endpoint slice checks and claim labels, is in `kcp::admission`.)
//! - `run`: the controller (export identity and endpoint slices, binding phases and conditions,
//!   bound resources in the registry, claims, binding deletion), see `controller`.
//! - `export_view`: what the APIExport virtual workspace serves, from an in-memory index.

pub mod claims;
pub mod conditions;
mod controller;
pub mod hash;
pub mod view;

use std::sync::Arc;

use crate::state::ServerState;
use view::ExportView;

pub use claims::{label_key as claim_label_key, label_value as claim_label_value};
pub use hash::export_hash;

pub use crate::kcp::admission::apibinding::BINDING_FINALIZER;
/// Namespace of the identity secrets of APIExports (in the export's logical cluster).
pub const IDENTITY_NAMESPACE: &str = "kcp-system";

/// The virtual workspace URL of an export, if the server URL is known.
pub fn virtual_workspace_url(state: &ServerState, export_cluster: &str, export_name: &str) -> Option<String> {
    let base = super::tenancy::server_url(state)?;
    Some(format!(
        "{}/services/apiexport/{export_cluster}/{export_name}",
        base.trim_end_matches('/')
    ))
}

/// What the APIExport virtual workspace serves for `export_cluster`/`export_name` (None when the
/// export does not exist or has no identity yet). Reads an in-memory index: cheap.
pub fn export_view(state: &ServerState, export_cluster: &str, export_name: &str) -> Option<Arc<ExportView>> {
    state
        .apis
        .export(&(export_cluster.to_string(), export_name.to_string()))
}

/// A handle on an export's entry in the index, read at call time: long-running requests (watches)
/// see bindings made after they started.
#[derive(Clone)]
pub struct LiveExport {
    index: Arc<view::Index>,
    key: view::ExportKey,
}

impl LiveExport {
    /// Runs `f` on the export's current view (None once the export is gone).
    pub fn with<R>(&self, f: impl FnOnce(Option<&ExportView>) -> R) -> R {
        let guard = self.index.exports.read().unwrap_or_else(|p| p.into_inner());
        f(guard.get(&self.key).map(Arc::as_ref))
    }
}

/// A live handle on `export_cluster`/`export_name` for filters that outlive one lookup.
pub fn live_export(state: &ServerState, export_cluster: &str, export_name: &str) -> Option<LiveExport> {
    Some(LiveExport {
        index: state.apis.clone(),
        key: (export_cluster.to_string(), export_name.to_string()),
    })
}

/// Starts the API export/binding controller, once what requests read from it is restored (see
/// `controller::start`).
pub fn start(state: Arc<ServerState>) -> tokio::task::JoinHandle<()> {
    controller::start(state)
}
