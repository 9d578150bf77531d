//! `Provider` (`admin.faros.sh/v1alpha1`): the admin's request to host one provider.
//!
//! A platform admin applies a `Provider` in `root:faros:system:providers`; the hub reconciler turns it
//! into a provider workspace, a ServiceAccount with a long-lived token and a kubeconfig Secret the
//! provider's `init` runs with (docs/architecture.md#provider-lifecycle). The object is cluster-scoped because kcp workspaces are
//! the unit of isolation; namespaces would add nothing.
//!
//! Every optional field is `Option` and skipped when `None`, so a server-side apply body built from
//! these structs claims only the fields its author set.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::names;

/// What the admin asks for. Every field is optional: `spec: {}` is a complete request.
// kube-derive takes repeated `derive`/`printcolumn` keys by design.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "admin.faros.sh",
    version = "v1alpha1",
    kind = "Provider",
    plural = "providers",
    singular = "provider",
    shortname = "prov",
    status = "ProviderStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "A provider hosted by this faros hub: the hub gives it a kcp workspace and a kubeconfig.",
    printcolumn(name = "Workspace", type_ = "string", json_path = ".status.workspacePath"),
    printcolumn(name = "Secret", type_ = "string", json_path = ".status.secretRef.name"),
    printcolumn(name = "Revision", type_ = "string", json_path = ".status.currentRevision"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ProviderSpec {
    /// Human-readable name; informational only (the catalog shows the CatalogEntry's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 128))]
    pub display_name: Option<String>,

    /// Name of the kubeconfig Secret in namespace `default` of `root:faros:system:providers`.
    /// Defaults to `<metadata.name>-kubeconfig`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253), regex(pattern = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"))]
    pub secret_name: Option<String>,

    /// Base URL written into the kubeconfig instead of the hub's own URL, e.g. when the provider
    /// runs in another network. `/clusters/<logical-cluster>` is appended.
    #[serde(default, rename = "serverURLOverride", skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512), regex(pattern = r"^https?://[^\s]+$"))]
    pub server_url_override: Option<String>,

    /// When a newly published revision may take over: `Automatic` (default) once the compatibility
    /// gate and the health gate pass; `Manual` only once `revision` names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation: Option<Activation>,

    /// Pins the provider to this retained ProviderRevision: the way to activate a revision under
    /// `activation: Manual`, and to roll back (`kubectl patch provider <name> --type merge -p
    /// '{"spec":{"revision":"<name>-<digest>"}}'`). Rolling back moves routing, never the schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253), regex(pattern = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"))]
    pub revision: Option<String>,

    /// How many revisions besides the current and the target are kept; the oldest retired or
    /// failed ones go first. Default 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub revision_history_limit: Option<i32>,
}

/// `Provider.spec.activation`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Activation {
    #[default]
    Automatic,
    Manual,
}

/// Default of `Provider.spec.revisionHistoryLimit`.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;

/// What the reconciler observed and did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderStatus {
    /// kcp path of the provider's workspace, `root:faros:providers:<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_path: Option<String>,

    /// Logical cluster name of that workspace (the Workspace's `spec.cluster`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_cluster: Option<String>,

    /// Where the kubeconfig was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretKeyRef>,

    /// `metadata.generation` the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// The ProviderRevision that serves (whose schemas the export serves and whose backend takes the
    /// routing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_revision: Option<String>,

    /// The revision the provider moves to: the newest published one, or `spec.revision`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_revision: Option<String>,

    /// `Ready` describes provisioning (workspace, ServiceAccount, kubeconfig Secret) only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}

/// A key in a namespaced Secret.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SecretKeyRef {
    pub namespace: String,
    pub name: String,
    pub key: String,
}

impl ProviderSpec {
    /// `activation`, defaulted.
    pub fn activation(&self) -> Activation {
        self.activation.unwrap_or_default()
    }

    /// `revisionHistoryLimit`, defaulted and never negative.
    pub fn revision_history_limit(&self) -> usize {
        usize::try_from(self.revision_history_limit.unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT)).unwrap_or(0)
    }
}

impl Provider {
    /// The kubeconfig Secret's name: `spec.secretName`, else `<name>-kubeconfig`.
    pub fn kubeconfig_secret_name(&self) -> String {
        let name = self.metadata.name.as_deref().unwrap_or_default();
        names::kubeconfig_secret_name(name, self.spec.secret_name.as_deref())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use kube::{CustomResourceExt, Resource};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn resource_identity() {
        assert_eq!(Provider::api_version(&()), "admin.faros.sh/v1alpha1");
        assert_eq!(Provider::plural(&()), "providers");
        let crd = Provider::crd();
        assert_eq!(crd.spec.scope, "Cluster");
        assert_eq!(crd.spec.names.short_names, Some(vec!["prov".to_string()]));
    }

    #[test]
    fn empty_spec_serializes_to_empty_object() {
        let p = Provider::new("quickstart", ProviderSpec::default());
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["spec"], json!({}));
        assert!(v.get("status").is_none());
    }

    #[test]
    fn wire_names() {
        let spec = ProviderSpec {
            display_name: Some("Quick".into()),
            secret_name: Some("s".into()),
            server_url_override: Some("https://hub.example".into()),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&spec).unwrap(),
            json!({"displayName": "Quick", "secretName": "s", "serverURLOverride": "https://hub.example"})
        );
        let status: ProviderStatus = serde_json::from_value(json!({
            "workspacePath": "root:faros:providers:q",
            "workspaceCluster": "abc",
            "secretRef": {"namespace": "default", "name": "q-kubeconfig", "key": "kubeconfig"},
            "observedGeneration": 2
        }))
        .unwrap();
        assert_eq!(status.secret_ref.unwrap().name, "q-kubeconfig");
        assert_eq!(status.observed_generation, Some(2));
        assert!(status.conditions.is_empty());
    }

    #[test]
    fn secret_name_defaults_to_name_kubeconfig() {
        let mut p = Provider::new("quickstart", ProviderSpec::default());
        assert_eq!(p.kubeconfig_secret_name(), "quickstart-kubeconfig");
        p.spec.secret_name = Some("custom".into());
        assert_eq!(p.kubeconfig_secret_name(), "custom");
    }
}
