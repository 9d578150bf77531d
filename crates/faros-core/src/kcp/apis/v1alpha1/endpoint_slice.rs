//! `APIExportEndpointSlice` (SDK `apis/v1alpha1/types_apiexportendpointslice.go`): the URLs of an
//! APIExport's virtual workspace. Only v1alpha1 exists; `status.endpoints[].url` is the contract
//! a provider's controllers connect to.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ExportBindingReference;
use crate::kcp::{Condition, Extra};

/// `spec` of an [`APIExportEndpointSlice`].
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apis.kcp.io",
    version = "v1alpha1",
    kind = "APIExportEndpointSlice",
    plural = "apiexportendpointslices",
    category = "kcp",
    status = "APIExportEndpointSliceStatus",
    derive = "Default",
    derive = "PartialEq",
    printcolumn = r#"{"name":"Export","type":"string","jsonPath":".spec.export.name"}"#,
    printcolumn = r#"{"name":"Partition","type":"string","jsonPath":".spec.partition"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct APIExportEndpointSliceSpec {
    /// The export; required and immutable.
    pub export: ExportBindingReference,
    /// A Partition in this workspace restricting the shards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

/// `status` of an [`APIExportEndpointSlice`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct APIExportEndpointSliceStatus {
    /// `APIExportValid`, `PartitionValid` (`EndpointURLsReady` is deprecated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["url"]))]
    pub endpoints: Option<Vec<APIExportEndpoint>>,
    /// Label selector string from the partition; `""` when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_selector: Option<String>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

/// One virtual workspace URL of the export.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct APIExportEndpoint {
    pub url: String,
    /// Unreleased in kcp v0.32.3 (main only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<EndpointShards>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

/// Which shards an endpoint serves.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EndpointShards {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_all: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

impl APIExportEndpointSlice {
    /// The endpoint URLs in status order (empty until kcp has filled them).
    pub fn urls(&self) -> Vec<&str> {
        self.status
            .as_ref()
            .and_then(|s| s.endpoints.as_ref())
            .map(|e| e.iter().map(|e| e.url.as_str()).collect())
            .unwrap_or_default()
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
        assert_eq!(APIExportEndpointSlice::api_version(&()), "apis.kcp.io/v1alpha1");
        assert_eq!(APIExportEndpointSlice::kind(&()), "APIExportEndpointSlice");
        assert_eq!(APIExportEndpointSlice::plural(&()), "apiexportendpointslices");
    }

    #[test]
    fn slice_roundtrips() {
        let obj = json!({"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIExportEndpointSlice",
          "metadata":{"name":"quickstart.faros.sh","annotations":{"kcp.io/cluster":"1q5b9ya3dnzyt2ct"}},
          "spec":{"export":{"path":"root:faros:providers:quickstart","name":"quickstart.faros.sh"}},
          "status":{"conditions":[{"type":"APIExportValid","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}],
            "endpoints":[{"url":"https://kcp.example:6443/services/apiexport/1q5b9ya3dnzyt2ct/quickstart.faros.sh"},
              {"url":"https://shard-2.example:6443/services/apiexport/1q5b9ya3dnzyt2ct/quickstart.faros.sh",
               "shards":{"matchAll":true}}],
            "shardSelector":""}});
        let s: APIExportEndpointSlice = roundtrip(&obj);
        assert_eq!(
            s.urls(),
            vec![
                "https://kcp.example:6443/services/apiexport/1q5b9ya3dnzyt2ct/quickstart.faros.sh",
                "https://shard-2.example:6443/services/apiexport/1q5b9ya3dnzyt2ct/quickstart.faros.sh"
            ]
        );
        assert_eq!(s.spec.export.path.as_deref(), Some("root:faros:providers:quickstart"));
    }

    #[test]
    fn fresh_slice_has_no_urls_and_minimal_body() {
        let s = APIExportEndpointSlice::new(
            "quickstart.faros.sh",
            APIExportEndpointSliceSpec {
                export: ExportBindingReference {
                    path: None,
                    name: "quickstart.faros.sh".into(),
                },
                ..Default::default()
            },
        );
        assert!(s.urls().is_empty());
        serializes_to(
            &s,
            &json!({"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIExportEndpointSlice",
                "metadata":{"name":"quickstart.faros.sh"},"spec":{"export":{"name":"quickstart.faros.sh"}}}),
        );
    }

    #[test]
    fn unknown_fields_survive() {
        let obj = json!({"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIExportEndpointSlice","metadata":{"name":"e"},
          "spec":{"export":{"name":"e"},"partition":"p","future":true},
          "status":{"endpoints":[{"url":"https://x","weight":3}],"later":{}}});
        let s: APIExportEndpointSlice = roundtrip(&obj);
        assert_eq!(s.spec.extra.get("future"), Some(&json!(true)));
        assert_eq!(
            s.status.unwrap().endpoints.unwrap()[0].extra.get("weight"),
            Some(&json!(3))
        );
    }
}
