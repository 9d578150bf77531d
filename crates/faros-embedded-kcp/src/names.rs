//! Names kcp derives from other names, for clients and tests that need to predict them: the export
//! label of APIBindings, the claim labels of claimed objects, the default APIBinding names of a
//! workspace type. Pure functions; nothing here reads the server.

pub use crate::kcp::apis::{claim_label_key, claim_label_value, export_hash};
pub use crate::kcp::tenancy::names::default_binding_name;

/// The logical cluster holding the server's own copies of bound schemas (kcp's `system:bound-crds`).
pub const BOUND_CRDS_CLUSTER: &str = "system:bound-crds";
