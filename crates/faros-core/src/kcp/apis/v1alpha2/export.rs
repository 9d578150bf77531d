//! `APIExport` in `apis.kcp.io/v1alpha2`, kcp's storage version (SDK `apis/v1alpha2/types_apiexport.go`).

use k8s_openapi::api::core::v1::TypedLocalObjectReference;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{APIExportStatus, Empty, Identity, MaximalPermissionPolicy, PermissionClaim};
use crate::kcp::Extra;

/// `spec` of an [`APIExport`].
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apis.kcp.io",
    version = "v1alpha2",
    kind = "APIExport",
    plural = "apiexports",
    category = "kcp",
    status = "APIExportStatus",
    derive = "Default",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct APIExportSpec {
    /// The exported resources; a list-map keyed by (`name`, `group`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name", "group"]))]
    pub resources: Option<Vec<ResourceSchema>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximal_permission_policy: Option<MaximalPermissionPolicy>,
    /// A list-map keyed by (`group`, `resource`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_claims: Option<Vec<PermissionClaim>>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

/// One exported resource and the APIResourceSchema that defines it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceSchema {
    /// The resource (plural).
    pub name: String,
    /// Always present on the wire; `""` is the core group.
    pub group: String,
    /// APIResourceSchema name, `<prefix>.<name>.<group or "core">`.
    pub schema: String,
    /// kcp defaults an absent value to `{crd: {}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<ResourceSchemaStorage>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

impl ResourceSchema {
    /// A CRD-backed resource (`storage: {crd: {}}`).
    pub fn crd(group: &str, name: &str, schema: &str) -> Self {
        Self {
            name: name.to_owned(),
            group: group.to_owned(),
            schema: schema.to_owned(),
            storage: Some(ResourceSchemaStorage::crd()),
            extra: Extra::new(),
        }
    }

    /// True for CRD storage, including an absent `storage` (kcp's default).
    pub fn is_crd(&self) -> bool {
        self.storage.as_ref().is_none_or(|s| s.crd.is_some())
    }
}

/// How an exported resource is stored: exactly one of `crd` / `virtual`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceSchemaStorage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crd: Option<Empty>,
    #[serde(rename = "virtual", default, skip_serializing_if = "Option::is_none")]
    pub virtual_: Option<ResourceSchemaStorageVirtual>,
}

impl ResourceSchemaStorage {
    /// `{crd: {}}`.
    pub fn crd() -> Self {
        Self {
            crd: Some(Empty {}),
            virtual_: None,
        }
    }
}

/// A resource projected from another object's virtual workspace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSchemaStorageVirtual {
    /// An object with a URL to a virtual workspace in its status.
    pub reference: TypedLocalObjectReference,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_hash: Option<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

impl APIExport {
    /// The identity hash once kcp has computed it.
    pub fn identity_hash(&self) -> Option<&str> {
        self.status.as_ref()?.identity_hash.as_deref().filter(|h| !h.is_empty())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::kcp::testutil::{roundtrip, serializes_to};
    use kube::Resource;
    use serde_json::json;

    #[test]
    fn resource_identity() {
        assert_eq!(APIExport::api_version(&()), "apis.kcp.io/v1alpha2");
        assert_eq!(APIExport::kind(&()), "APIExport");
        assert_eq!(APIExport::plural(&()), "apiexports");
    }

    fn docs_example() -> serde_json::Value {
        json!({"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIExport",
          "metadata":{"name":"example.kcp.io","annotations":{"kcp.io/path":"root:api-provider"}},
          "spec":{
            "resources":[{"name":"widgets","group":"example.kcp.io","schema":"v220801.widgets.example.kcp.io",
              "storage":{"crd":{}}}],
            "identity":{"secretRef":{"namespace":"kcp-system","name":"example.kcp.io"}},
            "maximalPermissionPolicy":{"local":{}},
            "permissionClaims":[{"resource":"configmaps","verbs":["get","list","create"]},
              {"group":"somegroup.kcp.io","resource":"things","verbs":["*"],
               "identityHash":"5fdf7c7aaf407fd1594566869803f565bb84d22156cef5c445d2ee13ac2cfca6"}]},
          "status":{"identityHash":"0b1f3d3c6bd2e0e5f0b7b5c1b8e1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9",
            "conditions":[{"type":"IdentityValid","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]}})
    }

    #[test]
    fn docs_example_roundtrips() {
        let e: APIExport = roundtrip(&docs_example());
        assert_eq!(
            e.identity_hash(),
            Some("0b1f3d3c6bd2e0e5f0b7b5c1b8e1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9")
        );
        let resources = e.spec.resources.as_ref().unwrap();
        assert!(resources[0].is_crd());
        assert_eq!(
            resources[0],
            ResourceSchema::crd("example.kcp.io", "widgets", "v220801.widgets.example.kcp.io")
        );
        assert_eq!(e.spec.maximal_permission_policy, Some(MaximalPermissionPolicy::local()));
    }

    #[test]
    fn virtual_storage_and_unknowns_roundtrip() {
        let obj = json!({"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIExport","metadata":{"name":"v"},
          "spec":{"resources":[{"name":"things","group":"example.com","schema":"v1.things.example.com",
              "storage":{"virtual":{"reference":{"apiGroup":"example.com","kind":"MyEndpointSlice","name":"my-vr"},
                "identityHash":"123abc"}}},
            {"name":"widgets","group":"","schema":"v1.widgets.core"}],
            "someNewSpec":{"enabled":true}},
          "status":{"virtualWorkspaces":[{"url":"https://kcp.example:6443/services/apiexport/abc/v"}],"newStatus":1}});
        let e: APIExport = roundtrip(&obj);
        let resources = e.spec.resources.as_ref().unwrap();
        assert!(!resources[0].is_crd());
        assert!(resources[1].is_crd(), "absent storage defaults to crd");
        assert_eq!(e.spec.extra.get("someNewSpec"), Some(&json!({"enabled":true})));
        assert_eq!(e.status.as_ref().unwrap().extra.get("newStatus"), Some(&json!(1)));
        assert_eq!(e.identity_hash(), None);
    }

    #[test]
    fn apply_body_is_minimal() {
        let e = APIExport::new(
            "quickstart.faros.sh",
            APIExportSpec {
                resources: Some(vec![ResourceSchema::crd(
                    "quickstart.faros.sh",
                    "greetings",
                    "v1.greetings.quickstart.faros.sh",
                )]),
                ..Default::default()
            },
        );
        serializes_to(
            &e,
            &json!({"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIExport","metadata":{"name":"quickstart.faros.sh"},
              "spec":{"resources":[{"name":"greetings","group":"quickstart.faros.sh",
                "schema":"v1.greetings.quickstart.faros.sh","storage":{"crd":{}}}]}}),
        );
    }
}
