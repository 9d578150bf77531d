//! `APIBinding` in `apis.kcp.io/v1alpha1` (SDK `apis/v1alpha1/types_apibinding.go`).
//!
//! Same shape as v1alpha2 except the claims: `all` / `resourceSelector` instead of verbs and label
//! selectors. Served, not stored; hub code speaks v1alpha2.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    APIBindingPhase, AcceptablePermissionClaimState, BindingReference, BoundAPIResource, PermissionClaim,
    ResourceSelector,
};
use crate::kcp::apis::common::{is_false, ready};
use crate::kcp::{Condition, Extra};

/// `spec` of a v1alpha1 [`APIBinding`].
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apis.kcp.io",
    version = "v1alpha1",
    kind = "APIBinding",
    plural = "apibindings",
    category = "kcp",
    status = "APIBindingStatus",
    derive = "Default",
    derive = "PartialEq",
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct APIBindingSpec {
    /// The export to bind; required and immutable.
    pub reference: BindingReference,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_claims: Option<Vec<AcceptablePermissionClaim>>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

/// A v1alpha1 claim with the consumer's decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcceptablePermissionClaim {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    pub resource: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub all: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_selector: Option<Vec<ResourceSelector>>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub identity_hash: String,
    pub state: AcceptablePermissionClaimState,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

impl AcceptablePermissionClaim {
    /// The claim without the decision.
    pub fn claim(&self) -> PermissionClaim {
        PermissionClaim {
            group: self.group.clone(),
            resource: self.resource.clone(),
            all: self.all,
            resource_selector: self.resource_selector.clone(),
            identity_hash: self.identity_hash.clone(),
            extra: self.extra.clone(),
        }
    }

    pub fn has_resource_selector(&self) -> bool {
        self.resource_selector.as_ref().is_some_and(|s| !s.is_empty())
    }
}

/// `status` of a v1alpha1 [`APIBinding`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct APIBindingStatus {
    /// Logical cluster **name** (not path) of the export's workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_export_cluster_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["group", "resource"]))]
    pub bound_resources: Option<Vec<BoundAPIResource>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<APIBindingPhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_permission_claims: Option<Vec<PermissionClaim>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export_permission_claims: Option<Vec<PermissionClaim>>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

impl APIBinding {
    /// True once kcp's summary `Ready` condition (= `InitialBindingCompleted`) is `True`.
    pub fn is_ready(&self) -> bool {
        ready(self.status.as_ref().and_then(|s| s.conditions.as_deref()))
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
        assert_eq!(APIBinding::api_version(&()), "apis.kcp.io/v1alpha1");
        assert_eq!(APIBinding::kind(&()), "APIBinding");
        assert_eq!(APIBinding::plural(&()), "apibindings");
    }

    #[test]
    fn v1alpha1_binding_roundtrips() {
        let obj = json!({"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIBinding",
          "metadata":{"name":"example.kcp.io"},
          "spec":{"reference":{"export":{"path":"root:api-provider","name":"example.kcp.io"}},
            "permissionClaims":[{"resource":"configmaps","all":true,"state":"Accepted"},
              {"group":"somegroup.kcp.io","resource":"things","resourceSelector":[{"namespace":"prod"}],
               "identityHash":"5fdf7c7a","state":"Rejected"}]},
          "status":{"apiExportClusterName":"1q5b9ya3dnzyt2ct","phase":"Bound",
            "boundResources":[{"group":"example.io","resource":"widgets",
              "schema":{"name":"v1.widgets.example.io","UID":"7d0c2c5e-0000-4000-8000-000000000002","identityHash":"abc"},
              "storageVersions":["v1"]}],
            "exportPermissionClaims":[{"resource":"configmaps","all":true}],
            "appliedPermissionClaims":[{"resource":"configmaps","all":true}],
            "conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]}});
        let b: APIBinding = roundtrip(&obj);
        assert!(b.is_ready());
        let claims = b.spec.permission_claims.as_ref().unwrap();
        assert_eq!(claims[0].state, AcceptablePermissionClaimState::Accepted);
        assert_eq!(claims[1].state, AcceptablePermissionClaimState::Rejected);
        assert!(claims[1].has_resource_selector());
        assert_eq!(
            b.status.as_ref().unwrap().bound_resources.as_ref().unwrap()[0]
                .schema
                .uid,
            "7d0c2c5e-0000-4000-8000-000000000002"
        );
    }
}
