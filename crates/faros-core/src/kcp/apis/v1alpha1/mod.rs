//! `apis.kcp.io/v1alpha1`: APIResourceSchema and APIExportEndpointSlice (their only version), and
//! the v1alpha1 forms of APIExport and APIBinding (served, not stored, since kcp v0.28).

mod binding;
mod endpoint_slice;
mod export;
mod resource_schema;

pub use super::common::{
    APIBindingPhase, APIExportStatus, AcceptablePermissionClaimState, BindingReference, BoundAPIResource,
    BoundAPIResourceSchema, Empty, ExportBindingReference, Identity, MaximalPermissionPolicy, ResourceSelector,
    VirtualWorkspace,
};
pub use binding::{APIBinding, APIBindingSpec, APIBindingStatus, AcceptablePermissionClaim};
pub use endpoint_slice::{
    APIExportEndpoint, APIExportEndpointSlice, APIExportEndpointSliceSpec, APIExportEndpointSliceStatus, EndpointShards,
};
pub use export::{APIExport, APIExportSpec, PermissionClaim};
pub use resource_schema::{
    APIResourceSchema, APIResourceSchemaSpec, APIResourceVersion, CustomResourceConversion, ResourceScope,
    WebhookClientConfig, WebhookConversion, schema_name, split_schema_name,
};
