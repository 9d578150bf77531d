//! `apis.kcp.io/v1alpha2`: APIExport and APIBinding as kcp stores them (v0.28+). Hub code uses these.

mod binding;
mod claims;
mod export;

pub use super::common::{
    APIBindingPhase, APIExportStatus, AcceptablePermissionClaimState, BindingReference, BoundAPIResource,
    BoundAPIResourceSchema, Empty, ExportBindingReference, Identity, MaximalPermissionPolicy, VirtualWorkspace,
};
pub use binding::{APIBinding, APIBindingSpec, APIBindingStatus};
pub use claims::{
    ALL_VERBS, AcceptablePermissionClaim, PermissionClaim, PermissionClaimSelector, ScopedPermissionClaim, is_all_verbs,
};
pub use export::{APIExport, APIExportSpec, ResourceSchema, ResourceSchemaStorage, ResourceSchemaStorageVirtual};
