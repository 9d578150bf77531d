//! `ProviderRevision` (`admin.faros.sh/v1alpha1`): one published state of a provider.
//!
//! The hub reconciler writes one per distinct CatalogEntry spec a provider publishes (named
//! `<provider>-<short digest>`, [`crate::revision::revision_name`]) beside the `Provider` in
//! `root:faros:system:providers`. Its spec is a snapshot and never changes; its status says how far
//! the revision got: `Pending → Verifying → Serving → Retired`, or `Failed` with findings
//! (docs/hub-reconciler.md#provider-revisions). Conditions are kstatus-compatible: `Ready` is
//! `True` only while the revision serves, and `observedGeneration` says what they describe.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{CatalogEntrySpec, PublishedSchema};

/// Condition: the revision's schemas are compatible with what tenants store (offline rules, then
/// every live object when a rule needs it).
pub const CONDITION_SCHEMA_COMPATIBLE: &str = "SchemaCompatible";
/// Condition: the revision asks for claims or verbs tenants have not accepted.
pub const CONDITION_CONSENT_REQUIRED: &str = "ConsentRequired";
/// Condition: a fresh heartbeat reports this revision and the backend answers its health path.
pub const CONDITION_BACKEND_HEALTHY: &str = "BackendHealthy";
/// Condition: the export serves this revision's schemas and the revision is the provider's current one.
pub const CONDITION_SERVING: &str = "Serving";
/// Label on every revision naming its provider.
pub const LABEL_PROVIDER: &str = "admin.faros.sh/provider";

/// The published state, immutable once written.
// kube-derive takes repeated `derive`/`printcolumn` keys by design.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "admin.faros.sh",
    version = "v1alpha1",
    kind = "ProviderRevision",
    plural = "providerrevisions",
    singular = "providerrevision",
    shortname = "provrev",
    status = "ProviderRevisionStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "One published state of a provider: its schemas and a snapshot of its CatalogEntry.",
    printcolumn(name = "Provider", type_ = "string", json_path = ".spec.provider"),
    printcolumn(name = "Version", type_ = "string", json_path = ".spec.catalog.version"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Schema",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"SchemaCompatible\")].status"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct ProviderRevisionSpec {
    /// The Provider (and CatalogEntry) name.
    #[schemars(length(min = 1, max = 63))]
    pub provider: String,

    /// Full [`crate::revision::digest`] of `catalog`.
    #[schemars(length(min = 64, max = 64))]
    pub digest: String,

    /// The CatalogEntry spec as published, schemas included.
    pub catalog: CatalogEntrySpec,
}

impl ProviderRevisionSpec {
    /// The schemas this revision publishes.
    pub fn schemas(&self) -> &[PublishedSchema] {
        self.catalog.published_schemas()
    }
}

/// How far a revision got.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub enum RevisionPhase {
    /// Recorded; not yet checked, or waiting to be activated (`activation: Manual`).
    #[default]
    Pending,
    /// Schemas accepted; waiting for the export switch, heartbeats and backend health.
    Verifying,
    /// The export serves its schemas and it is the provider's current revision.
    Serving,
    /// A newer revision took over.
    Retired,
    /// Refused; `findings` say why. Nothing changed for tenants.
    Failed,
}

impl RevisionPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Verifying => "Verifying",
            Self::Serving => "Serving",
            Self::Retired => "Retired",
            Self::Failed => "Failed",
        }
    }
}

/// One reason a revision cannot (yet) serve.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevisionFinding {
    /// The gate's rule, e.g. `FieldRemoved` ([`crate::revision::compat::Rule`]).
    pub rule: String,
    /// `<plural>.<group>` of the resource, or the claim, the finding is about.
    pub resource: String,
    /// JSON path of the field within the object, e.g. `.spec.greeting`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub message: String,
    /// Workspaces (logical cluster names) holding objects the new schema would refuse, with counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workspaces: Vec<WorkspaceCount>,
}

/// How many of a workspace's objects a finding concerns.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceCount {
    /// Logical cluster name.
    pub cluster: String,
    pub objects: u64,
}

/// What the reconciler observed and decided.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderRevisionStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RevisionPhase>,

    /// Why the revision is Failed or waits; empty when it serves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<RevisionFinding>,

    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use kube::{CustomResourceExt, Resource};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn resource_identity_and_columns() {
        assert_eq!(ProviderRevision::api_version(&()), "admin.faros.sh/v1alpha1");
        assert_eq!(ProviderRevision::plural(&()), "providerrevisions");
        let crd = ProviderRevision::crd();
        assert_eq!(crd.spec.scope, "Cluster");
        let cols: Vec<String> = crd.spec.versions[0]
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| c.name.clone())
            .collect();
        assert_eq!(cols, ["Provider", "Version", "Phase", "Schema", "Age"]);
    }

    #[test]
    fn wire_shape() {
        let status = ProviderRevisionStatus {
            phase: Some(RevisionPhase::Failed),
            findings: vec![RevisionFinding {
                rule: "FieldRemoved".into(),
                resource: "greetings.quickstart.faros.sh".into(),
                field: Some(".spec.greeting".into()),
                message: "removed".into(),
                workspaces: vec![WorkspaceCount {
                    cluster: "abc".into(),
                    objects: 2,
                }],
            }],
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&status).unwrap(),
            json!({"phase": "Failed", "findings": [{"rule": "FieldRemoved", "resource": "greetings.quickstart.faros.sh",
                "field": ".spec.greeting", "message": "removed", "workspaces": [{"cluster": "abc", "objects": 2}]}]})
        );
        assert_eq!(RevisionPhase::Serving.as_str(), "Serving");
    }
}
