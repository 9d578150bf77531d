//! Pieces of `apis.kcp.io` that are identical in v1alpha1 and v1alpha2.
//!
//! kcp's Go SDK declares them twice (once per version); here they are one type re-exported from
//! both version modules, which makes the version conversion a plain clone for them.

use k8s_openapi::api::core::v1::SecretReference;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::kcp::{Condition, Extra};

/// An empty object that must serialise as `{}` (`storage: {crd: {}}`, `maximalPermissionPolicy: {local: {}}`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Empty {}

/// Where an APIExport's identity key lives.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    /// Defaulted by kcp to `kcp-system/<export name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub secret_ref: Option<SecretReference>,
}

/// Upper bound on what consumers may do with an export's resources; only `local` exists.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MaximalPermissionPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<Empty>,
}

impl MaximalPermissionPolicy {
    /// `{local: {}}`: RBAC in the export's workspace, for users prefixed `apis.kcp.io:binding:`.
    pub fn local() -> Self {
        Self { local: Some(Empty {}) }
    }
}

/// An APIExport by workspace path (empty or absent = the referring object's own workspace) and name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExportBindingReference {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub name: String,
}

/// `APIBinding.spec.reference`; exactly one member (today only `export`) is set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BindingReference {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export: Option<ExportBindingReference>,
}

impl BindingReference {
    /// A reference to export `name` in the workspace at `path`.
    pub fn export(path: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            export: Some(ExportBindingReference {
                path: Some(path.into()),
                name: name.into(),
            }),
        }
    }
}

/// A claimed object selector of v1alpha1 claims (v1alpha2 replaced it with label selectors).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceSelector {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// A deprecated APIExport virtual workspace URL (`status.virtualWorkspaces`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VirtualWorkspace {
    pub url: String,
}

/// `status` of an APIExport (same shape in both versions).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct APIExportStatus {
    /// Lowercase hex sha256 of the identity key; immutable once set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_hash: Option<String>,
    /// `IdentityValid` (and `VirtualWorkspaceURLsReady` only with a deprecated feature gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// Deprecated: empty unless kcp runs with `EnableDeprecatedAPIExportVirtualWorkspacesUrls`;
    /// use APIExportEndpointSlice `status.endpoints`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_workspaces: Option<Vec<VirtualWorkspace>>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

/// One resource an APIBinding has bound (`status.boundResources[]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BoundAPIResource {
    /// Always present on the wire; `""` is the core group.
    pub group: String,
    pub resource: String,
    pub schema: BoundAPIResourceSchema,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub storage_versions: Option<Vec<String>>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

/// The APIResourceSchema behind a bound resource. Note the capitalised `UID` key.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BoundAPIResourceSchema {
    pub name: String,
    #[serde(rename = "UID")]
    pub uid: String,
    pub identity_hash: String,
}

open_string_enum! {
    /// Whether a consumer accepted a permission claim.
    AcceptablePermissionClaimState {
        Accepted => "Accepted",
        Rejected => "Rejected",
    }
}

open_string_enum! {
    /// `APIBinding.status.phase`; absent until the binding controller starts.
    APIBindingPhase {
        Binding => "Binding",
        Bound => "Bound",
    }
}

/// The `Ready` convenience for statuses with conditions.
pub(crate) fn ready(conditions: Option<&[Condition]>) -> bool {
    Condition::is_type_true(conditions, crate::kcp::CONDITION_READY)
}

/// `skip_serializing_if` helper for Go `bool` fields tagged `omitempty`.
pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

/// Deserialises `null` as the default, for Go fields without `omitempty` that encode nil as `null`.
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}
