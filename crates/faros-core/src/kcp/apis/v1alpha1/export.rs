//! `APIExport` in `apis.kcp.io/v1alpha1` (SDK `apis/v1alpha1/types_apiexport.go`).
//!
//! Served but no longer stored by kcp (v0.28+ stores v1alpha2); kept for reading objects written
//! by older clients and for the embedded server to serve both versions. Hub code speaks v1alpha2.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{APIExportStatus, Identity, MaximalPermissionPolicy, ResourceSelector};
use crate::kcp::Extra;
use crate::kcp::apis::common::is_false;

/// `spec` of a v1alpha1 [`APIExport`].
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apis.kcp.io",
    version = "v1alpha1",
    kind = "APIExport",
    plural = "apiexports",
    category = "kcp",
    status = "APIExportStatus",
    derive = "Default",
    derive = "PartialEq",
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"VirtualWorkspaceURLsReady\")].status"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct APIExportSpec {
    /// APIResourceSchema names, all CRD-backed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub latest_resource_schemas: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximal_permission_policy: Option<MaximalPermissionPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_claims: Option<Vec<PermissionClaim>>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

/// A v1alpha1 permission claim: all objects (`all: true`) or the listed ones, no verbs.
///
/// Field order follows kcp's Go struct so annotation JSON written here matches kcp's byte for byte.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionClaim {
    /// `""` (or absent) is the core group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    pub resource: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub all: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_selector: Option<Vec<ResourceSelector>>,
    /// Identity hash of the APIExport serving the resource; `""` for built-in types.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub identity_hash: String,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

impl PermissionClaim {
    /// Same group, resource and identity hash: the key kcp matches claims by.
    pub fn same_gri(&self, group: &str, resource: &str, identity_hash: &str) -> bool {
        self.group == group && self.resource == resource && self.identity_hash == identity_hash
    }

    /// True if `resourceSelector` is present and non-empty.
    pub fn has_resource_selector(&self) -> bool {
        self.resource_selector.as_ref().is_some_and(|s| !s.is_empty())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::kcp::testutil::roundtrip;
    use kube::Resource;
    use serde_json::json;

    #[test]
    fn resource_identity() {
        assert_eq!(APIExport::api_version(&()), "apis.kcp.io/v1alpha1");
        assert_eq!(APIExport::kind(&()), "APIExport");
        assert_eq!(APIExport::plural(&()), "apiexports");
    }

    #[test]
    fn v1alpha1_export_roundtrips() {
        let obj = json!({"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIExport",
          "metadata":{"name":"example.kcp.io"},
          "spec":{"latestResourceSchemas":["v220801.widgets.example.kcp.io"],
            "identity":{"secretRef":{"namespace":"kcp-system","name":"example.kcp.io"}},
            "maximalPermissionPolicy":{"local":{}},
            "permissionClaims":[{"resource":"configmaps","all":true},
              {"group":"somegroup.kcp.io","resource":"things","resourceSelector":[{"name":"a","namespace":"ns"}],
               "identityHash":"5fdf7c7aaf407fd1594566869803f565bb84d22156cef5c445d2ee13ac2cfca6"}]},
          "status":{"identityHash":"0b1f3d3c6bd2e0e5f0b7b5c1b8e1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9",
            "conditions":[{"type":"IdentityValid","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]}});
        let e: APIExport = roundtrip(&obj);
        let claims = e.spec.permission_claims.as_ref().unwrap();
        assert!(claims[0].all);
        assert_eq!(claims[0].group, "");
        assert!(claims[1].has_resource_selector());
        assert_eq!(e.spec.maximal_permission_policy, Some(MaximalPermissionPolicy::local()));
    }
}
