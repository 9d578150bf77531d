//! `APIBinding` in `apis.kcp.io/v1alpha2`, kcp's storage version (SDK `apis/v1alpha2/types_apibinding.go`).

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    APIBindingPhase, AcceptablePermissionClaim, BindingReference, BoundAPIResource, PermissionClaim,
    ScopedPermissionClaim,
};
use crate::kcp::apis::common::ready;
use crate::kcp::{Condition, Extra};

/// `spec` of an [`APIBinding`].
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apis.kcp.io",
    version = "v1alpha2",
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
    /// Decisions on the export's claims; a list-map keyed by (`group`, `resource`, `identityHash`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_claims: Option<Vec<AcceptablePermissionClaim>>,
    /// `Delete` (default) or `WaitForSuccessor`; newer than kcp v0.32.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

/// `status` of an [`APIBinding`].
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
    pub applied_permission_claims: Option<Vec<ScopedPermissionClaim>>,
    /// A copy of the export's `spec.permissionClaims`.
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

    pub fn phase(&self) -> Option<&APIBindingPhase> {
        self.status.as_ref()?.phase.as_ref()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::kcp::apis::v1alpha2::{AcceptablePermissionClaimState, PermissionClaimSelector};
    use crate::kcp::testutil::{roundtrip, serializes_to};
    use kube::Resource;
    use serde_json::json;

    #[test]
    fn resource_identity() {
        assert_eq!(APIBinding::api_version(&()), "apis.kcp.io/v1alpha2");
        assert_eq!(APIBinding::kind(&()), "APIBinding");
        assert_eq!(APIBinding::plural(&()), "apibindings");
    }

    fn t(ty: &str) -> serde_json::Value {
        json!({"type":ty,"status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"})
    }

    #[test]
    fn bound_binding_roundtrips() {
        let obj = json!({"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIBinding",
          "metadata":{"name":"example.kcp.io","labels":{"internal.apis.kcp.io/export":"3Hf1NwqcYvbn6UWqxZJOjbZUOdB3pTTc5ZoNsi"}},
          "spec":{"reference":{"export":{"path":"root:api-provider","name":"example.kcp.io"}},
            "permissionClaims":[
              {"resource":"configmaps","verbs":["get","list","create"],"selector":{"matchAll":true},"state":"Accepted"},
              {"group":"somegroup.kcp.io","resource":"things","verbs":["*"],"identityHash":"5fdf7c7a",
               "selector":{"matchLabels":{"env":"prod"}},"state":"Accepted"}]},
          "status":{"apiExportClusterName":"1q5b9ya3dnzyt2ct","phase":"Bound",
            "boundResources":[{"group":"example.io","resource":"widgets",
              "schema":{"name":"v1.widgets.example.io","UID":"7d0c2c5e-0000-4000-8000-000000000002",
                "identityHash":"0b1f3d3c6bd2e0e5f0b7b5c1b8e1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9"},
              "storageVersions":["v1"]}],
            "exportPermissionClaims":[{"resource":"configmaps","verbs":["get","list","create"]}],
            "appliedPermissionClaims":[{"resource":"configmaps","verbs":["get","list","create"],"selector":{"matchAll":true}}],
            "conditions":[t("Ready"),t("APIExportValid"),t("BindingUpToDate"),t("InitialBindingCompleted"),
              t("PermissionClaimsApplied"),t("PermissionClaimsValid")]}});
        let b: APIBinding = roundtrip(&obj);
        assert!(b.is_ready());
        assert_eq!(b.phase(), Some(&APIBindingPhase::Bound));
        let status = b.status.as_ref().unwrap();
        assert_eq!(status.api_export_cluster_name.as_deref(), Some("1q5b9ya3dnzyt2ct"));
        assert_eq!(
            status.bound_resources.as_ref().unwrap()[0].schema.name,
            "v1.widgets.example.io"
        );
        let claims = b.spec.permission_claims.as_ref().unwrap();
        assert!(claims[0].selector.match_all);
        assert_eq!(claims[1].selector.match_labels.as_ref().unwrap()["env"], "prod");
    }

    #[test]
    fn enable_body_is_minimal() {
        let b = APIBinding::new(
            "quickstart",
            APIBindingSpec {
                reference: BindingReference::export("root:faros:providers:quickstart", "quickstart.faros.sh"),
                permission_claims: Some(vec![AcceptablePermissionClaim::accepted(
                    &PermissionClaim::new("", "secrets", &["get"]),
                    PermissionClaimSelector::all(),
                )]),
                ..Default::default()
            },
        );
        serializes_to(
            &b,
            &json!({"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIBinding","metadata":{"name":"quickstart"},
              "spec":{"reference":{"export":{"path":"root:faros:providers:quickstart","name":"quickstart.faros.sh"}},
                "permissionClaims":[{"resource":"secrets","verbs":["get"],"selector":{"matchAll":true},"state":"Accepted"}]}}),
        );
        assert_eq!(
            b.spec.permission_claims.unwrap()[0].state,
            AcceptablePermissionClaimState::Accepted
        );
    }

    #[test]
    fn fresh_binding_and_unknowns() {
        let obj = json!({"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIBinding","metadata":{"name":"b"},
          "spec":{"reference":{"export":{"name":"e"}},"deletionPolicy":"WaitForSuccessor","newSpec":[1]},
          "status":{"conditions":[{"type":"Ready","status":"False","severity":"Info","lastTransitionTime":"2026-01-01T00:00:00Z",
            "reason":"WaitingForEstablished"}],"newStatus":"x"}});
        let b: APIBinding = roundtrip(&obj);
        assert!(!b.is_ready());
        assert_eq!(b.phase(), None);
        assert_eq!(b.spec.deletion_policy.as_deref(), Some("WaitForSuccessor"));
        assert_eq!(b.spec.extra.get("newSpec"), Some(&json!([1])));
        assert_eq!(b.status.unwrap().extra.get("newStatus"), Some(&json!("x")));
    }
}
