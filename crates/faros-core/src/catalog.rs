//! `CatalogEntry` (`providers.faros.sh/v1alpha1`): how a provider describes itself to the hub.
//!
//! A provider's `init` self-registers one CatalogEntry in its own workspace; the hub watches them all
//! through the `providers.faros.sh` virtual workspace and builds its catalog, proxies and MCP
//! federation from them (docs/architecture.md#provider-lifecycle).
//!
//! The schema carries the validation (lengths, URL and name patterns, the verb enum) so the API
//! server rejects a bad entry at apply time instead of the hub discovering it later. Optional fields
//! are `Option` and skipped when `None`, so server-side apply bodies claim only what they set.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::names;

/// Pattern for URLs the hub proxies to: absolute http(s) with a host.
const HTTP_URL_PATTERN: &str = r"^https?://[^\s/]+[^\s]*$";
/// Pattern for paths below a URL.
const ABSOLUTE_PATH_PATTERN: &str = r"^/[^\s]*$";

/// What a provider offers: catalog metadata, UI, backend, APIExport and claims.
// kube-derive takes repeated `derive`/`printcolumn` keys by design.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "providers.faros.sh",
    version = "v1alpha1",
    kind = "CatalogEntry",
    plural = "catalogentries",
    singular = "catalogentry",
    shortname = "ce",
    status = "CatalogEntryStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "A provider's self-description: catalog metadata, UI and backend endpoints, APIExport and claims.",
    printcolumn(name = "DisplayName", type_ = "string", json_path = ".spec.displayName"),
    printcolumn(name = "Version", type_ = "string", json_path = ".status.reportedVersion"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct CatalogEntrySpec {
    /// Name shown in the catalog and the side-nav.
    #[schemars(length(min = 1, max = 128))]
    pub display_name: String,

    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512))]
    pub description: Option<String>,

    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 128))]
    pub vendor: Option<String>,

    /// Version the provider declares; the heartbeat's version is in `status.reportedVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub version: Option<String>,

    /// Free-form side-nav grouping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub category: Option<String>,

    /// Icon URL; may be relative to the hub (e.g. below `/ui/providers/<name>/`).
    #[serde(default, rename = "iconURL", skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub icon_url: Option<String>,

    /// Providers that must be enabled in a workspace before this one can be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub dependencies: Option<Vec<Dependency>>,

    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui: Option<UiSpec>,

    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<BackendSpec>,

    /// The APIExport tenants bind when they enable this provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_export: Option<ApiExportRef>,

    /// When enabled, the provider's ServiceAccount gets the `proxy` verb on the tenant's edges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge_proxy_access: Option<bool>,

    /// The APIResourceSchema `init` published for each resource of the export, with its content
    /// hash. The hub makes one ProviderRevision per distinct spec and moves the export to these
    /// schemas only once the compatibility gate allows it; `init` fills this in itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["group", "resource"]))]
    pub schemas: Option<Vec<PublishedSchema>>,
}

/// One resource's schema as a provider published it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PublishedSchema {
    /// API group of the resource (empty for the core group).
    #[schemars(length(max = 253))]
    pub group: String,

    /// Plural resource name.
    #[schemars(length(min = 1, max = 253), regex(pattern = r"^[a-z][-a-z0-9]*$"))]
    pub resource: String,

    /// The APIResourceSchema's name, `<prefix>.<plural>.<group>`.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,

    /// Lowercase hex sha256 of the schema's spec (`faros_core::revision::schema_sha256`).
    #[schemars(length(min = 64, max = 64), regex(pattern = r"^[0-9a-f]{64}$"))]
    pub sha256: String,
}

/// Another provider this one depends on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Dependency {
    /// The dependency's CatalogEntry name.
    #[schemars(length(min = 1, max = 63), regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"))]
    pub name: String,
}

/// The provider's UI, served to the portal through `/ui/providers/<name>/`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UiSpec {
    /// Upstream of `/ui/providers/<name>/*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512), regex(pattern = HTTP_URL_PATTERN))]
    pub url: Option<String>,

    /// Entry document below `url`; `/` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256), regex(pattern = ABSOLUTE_PATH_PATTERN), extend("default" = "/"))]
    pub index_path: Option<String>,

    /// Side-nav sub-entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    pub children: Option<Vec<UiChild>>,
}

/// One side-nav sub-entry of a provider UI.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UiChild {
    #[schemars(length(min = 1, max = 128))]
    pub display_name: String,

    /// Portal route the entry opens.
    #[schemars(length(min = 1, max = 128))]
    pub builtin_route: String,
}

/// The provider's HTTP backend, reached through `/services/providers/<name>/`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackendSpec {
    /// Upstream of `/services/providers/<name>/*`.
    #[schemars(length(max = 512), regex(pattern = HTTP_URL_PATTERN))]
    pub url: String,

    /// Path below `url` the hub probes; `/healthz` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256), regex(pattern = ABSOLUTE_PATH_PATTERN), extend("default" = "/healthz"))]
    pub health_path: Option<String>,
}

/// The APIExport in the provider's workspace, and the claims tenants are asked to accept.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiExportRef {
    #[schemars(length(min = 1, max = 253), regex(pattern = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"))]
    pub name: String,

    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_claims: Option<Vec<PermissionClaim>>,
}

/// Access to tenant objects the provider asks for; copied into the tenant's APIBinding on Enable.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionClaim {
    /// API group; empty or absent is the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253))]
    pub group: Option<String>,

    /// Plural resource name.
    #[schemars(length(min = 1, max = 253), regex(pattern = r"^[a-z][-a-z0-9]*$"))]
    pub resource: String,

    /// Verbs granted on the claimed resource; the hub always takes them from here, never from the
    /// tenant's request.
    #[schemars(schema_with = "verbs_schema")]
    pub verbs: Vec<String>,

    /// Identity hash of the APIExport that serves `resource`, for claims on other exports' types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 128))]
    pub identity_hash: Option<String>,

    /// Scope the claim to objects of the enabling tenant only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_scoped: Option<bool>,
}

/// The verbs a claim may name: Kubernetes' resource verbs plus `*`.
pub const CLAIM_VERBS: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "*",
];

fn verbs_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "minItems": 1,
        "x-kubernetes-list-type": "set",
        "items": {"type": "string", "enum": CLAIM_VERBS},
    })
}

/// What the hub observed about a provider.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogEntryStatus {
    /// kcp path of the provider's workspace, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,

    /// Endpoints as the hub registered them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<Endpoints>,

    /// Time of the last heartbeat the hub recorded (second precision).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heartbeat: Option<Time>,

    /// Version the provider reported in its last heartbeat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_version: Option<String>,

    /// ProviderRevision (`<provider>-<short digest>`, [`crate::revision::revision_name`]) the provider
    /// reported serving in its last heartbeat; the hub's health gate waits for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_revision: Option<String>,

    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}

/// Resolved upstream URLs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Endpoints {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
}

impl UiSpec {
    /// `indexPath`, defaulted.
    pub fn index_path(&self) -> &str {
        self.index_path.as_deref().unwrap_or(names::DEFAULT_INDEX_PATH)
    }
}

impl BackendSpec {
    /// `healthPath`, defaulted.
    pub fn health_path(&self) -> &str {
        self.health_path.as_deref().unwrap_or(names::DEFAULT_HEALTH_PATH)
    }
}

impl CatalogEntrySpec {
    /// Dependency names, in declaration order.
    pub fn dependency_names(&self) -> impl Iterator<Item = &str> {
        self.dependencies.iter().flatten().map(|d| d.name.as_str())
    }

    /// Permission claims of the APIExport, empty when there is none.
    pub fn permission_claims(&self) -> &[PermissionClaim] {
        self.api_export
            .as_ref()
            .and_then(|e| e.permission_claims.as_deref())
            .unwrap_or_default()
    }

    /// The published schemas, empty when none are recorded.
    pub fn published_schemas(&self) -> &[PublishedSchema] {
        self.schemas.as_deref().unwrap_or_default()
    }

    /// Whether the provider asked for edge proxy access.
    pub fn edge_proxy_access(&self) -> bool {
        self.edge_proxy_access.unwrap_or(false)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use kube::{CustomResourceExt, Resource};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn quickstart_json() -> serde_json::Value {
        json!({
            "apiVersion": "providers.faros.sh/v1alpha1",
            "kind": "CatalogEntry",
            "metadata": {"name": "quickstart"},
            "spec": {
                "displayName": "Quickstart",
                "iconURL": "/ui/providers/quickstart/icon.svg",
                "dependencies": [{"name": "edges"}],
                "ui": {"url": "http://quickstart:8081/ui", "children": [{"displayName": "Greetings", "builtinRoute": "greetings"}]},
                "backend": {"url": "http://quickstart:8081"},
                "apiExport": {"name": "quickstart.faros.sh", "permissionClaims": [
                    {"resource": "configmaps", "verbs": ["get", "list"], "tenantScoped": true}
                ]},
                "edgeProxyAccess": true
            },
            "status": {"lastHeartbeat": "2026-01-02T03:04:05Z", "reportedVersion": "0.1.0"}
        })
    }

    #[test]
    fn resource_identity() {
        assert_eq!(CatalogEntry::api_version(&()), "providers.faros.sh/v1alpha1");
        assert_eq!(CatalogEntry::plural(&()), "catalogentries");
        let crd = CatalogEntry::crd();
        assert_eq!(crd.spec.scope, "Cluster");
        assert_eq!(crd.spec.names.short_names, Some(vec!["ce".to_string()]));
    }

    #[test]
    fn round_trips_wire_json() {
        let ce: CatalogEntry = serde_json::from_value(quickstart_json()).unwrap();
        assert_eq!(ce.spec.dependency_names().collect::<Vec<_>>(), vec!["edges"]);
        assert_eq!(ce.spec.permission_claims()[0].tenant_scoped, Some(true));
        assert!(ce.spec.edge_proxy_access());
        let ui = ce.spec.ui.as_ref().unwrap();
        assert_eq!(ui.index_path(), "/");
        assert_eq!(ce.spec.backend.as_ref().unwrap().health_path(), "/healthz");
        assert_eq!(serde_json::to_value(&ce).unwrap(), quickstart_json());
    }

    #[test]
    fn minimal_entry_serializes_minimally() {
        let ce = CatalogEntry::new(
            "x",
            CatalogEntrySpec {
                display_name: "X".into(),
                ..Default::default()
            },
        );
        let v = serde_json::to_value(&ce).unwrap();
        assert_eq!(v["spec"], json!({"displayName": "X"}));
        assert_eq!(ce.spec.permission_claims(), &[] as &[PermissionClaim]);
        assert!(!ce.spec.edge_proxy_access());
    }

    #[test]
    fn schema_validates_what_matters() {
        let crd = serde_json::to_value(CatalogEntry::crd()).unwrap();
        let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["required"], json!(["displayName"]));
        assert_eq!(spec["properties"]["displayName"]["maxLength"], json!(128));
        assert_eq!(
            spec["properties"]["ui"]["properties"]["url"]["pattern"],
            json!(HTTP_URL_PATTERN)
        );
        assert_eq!(
            spec["properties"]["ui"]["properties"]["indexPath"]["default"],
            json!("/")
        );
        assert_eq!(spec["properties"]["backend"]["required"], json!(["url"]));
        assert_eq!(
            spec["properties"]["backend"]["properties"]["healthPath"]["default"],
            json!("/healthz")
        );
        let deps = &spec["properties"]["dependencies"];
        assert_eq!(deps["x-kubernetes-list-map-keys"], json!(["name"]));
        assert_eq!(deps["items"]["properties"]["name"]["maxLength"], json!(63));
        let claim = &spec["properties"]["apiExport"]["properties"]["permissionClaims"]["items"];
        assert_eq!(claim["required"], json!(["resource", "verbs"]));
        assert_eq!(claim["properties"]["verbs"]["items"]["enum"], json!(CLAIM_VERBS));
        assert_eq!(claim["properties"]["verbs"]["minItems"], json!(1));
    }
}
