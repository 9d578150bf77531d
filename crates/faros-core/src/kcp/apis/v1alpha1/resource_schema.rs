//! `APIResourceSchema` (SDK `apis/v1alpha1/types_apiresourceschema.go`): a CRD spec without the
//! CRD, named `<prefix>.<plural>.<group>`, immutable, with no status.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinitionNames, CustomResourceSubresources, SelectableField,
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::kcp::Extra;

open_string_enum! {
    /// Scope of the resources a schema describes.
    ResourceScope {
        Cluster => "Cluster",
        Namespaced => "Namespaced",
    }
}

/// `spec` of an [`APIResourceSchema`].
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apis.kcp.io",
    version = "v1alpha1",
    kind = "APIResourceSchema",
    plural = "apiresourceschemas",
    category = "kcp",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct APIResourceSchemaSpec {
    /// Always present on the wire; `""` is the core group.
    pub group: String,
    pub names: CustomResourceDefinitionNames,
    pub scope: ResourceScope,
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub versions: Vec<APIResourceVersion>,
    /// `DNS1123Subdomain` (default) or `PathSegmentName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "DNS1123Subdomain"))]
    pub name_validation: Option<String>,
    /// Required when there is more than one version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversion: Option<CustomResourceConversion>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

fn default_true() -> bool {
    true
}

/// One served version of the schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct APIResourceVersion {
    pub name: String,
    #[serde(default = "default_true")]
    pub served: bool,
    #[serde(default)]
    pub storage: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation_warning: Option<String>,
    /// The OpenAPI v3 schema itself, **not** wrapped in `{openAPIV3Schema: ...}`. kcp's CRD keeps it
    /// verbatim (`x-kubernetes-preserve-unknown-fields`), so a server must not prune it.
    #[schemars(schema_with = "preserved_object", extend("x-kubernetes-map-type" = "atomic"))]
    pub schema: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresources: Option<CustomResourceSubresources>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub additional_printer_columns: Option<Vec<CustomResourceColumnDefinition>>,
    /// Unreleased in kcp v0.32.3 (main only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selectable_fields: Option<Vec<SelectableField>>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

/// How versions are converted: `None` or `Webhook`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomResourceConversion {
    pub strategy: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<WebhookConversion>,
}

/// Webhook conversion settings; kcp only supports a URL (no in-cluster service).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookConversion {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_config: Option<WebhookClientConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversion_review_versions: Option<Vec<String>>,
}

/// Where the conversion webhook is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookClientConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Base64 PEM bundle, as on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
}

/// The name kcp expects for a schema: `<prefix>.<plural>.<group>`, with `core` for the core group.
pub fn schema_name(prefix: &str, plural: &str, group: &str) -> String {
    let group = if group.is_empty() { "core" } else { group };
    format!("{prefix}.{plural}.{group}")
}

/// Splits a schema name into `(resource, group)` the way kcp's conversion does: the second
/// dot-separated segment is the resource, the rest is the group, `core` means `""`. `None` when
/// the name has fewer than three segments.
pub fn split_schema_name(name: &str) -> Option<(&str, &str)> {
    let (_prefix, rest) = name.split_once('.')?;
    let (resource, group) = rest.split_once('.')?;
    Some((resource, if group == "core" { "" } else { group }))
}

/// An arbitrary JSON object kept as is by structural-schema servers.
fn preserved_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
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
        assert_eq!(APIResourceSchema::api_version(&()), "apis.kcp.io/v1alpha1");
        assert_eq!(APIResourceSchema::kind(&()), "APIResourceSchema");
        assert_eq!(APIResourceSchema::plural(&()), "apiresourceschemas");
    }

    #[test]
    fn widget_schema_roundtrips() {
        let obj = json!({"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIResourceSchema",
          "metadata":{"name":"v1.widgets.example.io"},
          "spec":{"group":"example.io",
            "names":{"kind":"Widget","listKind":"WidgetList","plural":"widgets","singular":"widget"},
            "scope":"Cluster",
            "versions":[{"name":"v1","served":true,"storage":true,
              "schema":{"type":"object","properties":{"apiVersion":{"type":"string"},"kind":{"type":"string"},
                "metadata":{"type":"object"},"spec":{"type":"object","properties":{"firstName":{"type":"string"}}},
                "status":{"type":"object","properties":{"phase":{"type":"string"}}}}},
              "subresources":{"status":{}},
              "additionalPrinterColumns":[{"name":"Phase","type":"string","jsonPath":".status.phase"}]}]}});
        let s: APIResourceSchema = roundtrip(&obj);
        assert_eq!(s.spec.scope, ResourceScope::Cluster);
        assert_eq!(
            s.spec.versions[0].schema["properties"]["spec"]["properties"]["firstName"]["type"],
            "string"
        );
        assert!(s.spec.versions[0].subresources.as_ref().unwrap().status.is_some());
    }

    #[test]
    fn optional_version_fields_and_unknowns_roundtrip() {
        let obj = json!({"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIResourceSchema",
          "metadata":{"name":"today.cowboys.wildwest.dev"},
          "spec":{"group":"wildwest.dev","names":{"kind":"Cowboy","plural":"cowboys"},"scope":"Namespaced",
            "nameValidation":"PathSegmentName",
            "conversion":{"strategy":"Webhook","webhook":{"clientConfig":{"url":"https://conv.example/convert",
              "caBundle":"LS0tLQ=="},"conversionReviewVersions":["v1"]}},
            "futureSpecField":"kept",
            "versions":[{"name":"v1","served":true,"storage":false,"deprecated":true,
              "deprecationWarning":"use v2","schema":{"type":"object"},
              "selectableFields":[{"jsonPath":".spec.color"}],"futureVersionField":1},
             {"name":"v2","served":true,"storage":true,"schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}]}});
        let s: APIResourceSchema = roundtrip(&obj);
        assert_eq!(s.spec.extra.get("futureSpecField"), Some(&json!("kept")));
        assert_eq!(s.spec.versions[0].extra.get("futureVersionField"), Some(&json!(1)));
        assert_eq!(s.spec.scope, ResourceScope::Namespaced);
    }

    #[test]
    fn served_defaults_to_true() {
        let v: APIResourceVersion = serde_json::from_value(json!({"name":"v1","schema":{}})).unwrap();
        assert!(v.served);
        assert!(!v.storage);
    }

    #[test]
    fn schema_names() {
        assert_eq!(schema_name("v1", "widgets", "example.io"), "v1.widgets.example.io");
        assert_eq!(schema_name("v1", "configmaps", ""), "v1.configmaps.core");
        assert_eq!(
            split_schema_name("v1.widgets.example.io"),
            Some(("widgets", "example.io"))
        );
        assert_eq!(
            split_schema_name("v250421-25d98218b.workspaces.tenancy.kcp.io"),
            Some(("workspaces", "tenancy.kcp.io"))
        );
        assert_eq!(split_schema_name("v1.configmaps.core"), Some(("configmaps", "")));
        assert_eq!(split_schema_name("v1.widgets"), None);
        assert_eq!(split_schema_name("widgets"), None);
    }
}
