//! `core.kcp.io/v1alpha1`: [`LogicalCluster`] (SDK `core/v1alpha1/logicalcluster_types.go`).
//!
//! Every workspace holds exactly one LogicalCluster, named `cluster`
//! ([`LOGICALCLUSTER_NAME`](super::LOGICALCLUSTER_NAME)). It is the workspace's own view of itself:
//! its canonical path is in the `kcp.io/path` annotation, its phase and initializers in the status.

use k8s_openapi::api::authentication::v1::UserInfo;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ANNOTATION_PATH, Condition, Extra};

open_string_enum! {
    /// Phase of a LogicalCluster, mirrored into its Workspace's `status.phase`.
    LogicalClusterPhase {
        Scheduling => "Scheduling",
        Initializing => "Initializing",
        Ready => "Ready",
        Unavailable => "Unavailable",
        /// kcp v0.32+.
        Inactive => "Inactive",
        /// kcp v0.32+.
        Terminating => "Terminating",
        /// kcp v0.32+.
        Deleting => "Deleting",
    }
}

/// `spec` of a [`LogicalCluster`].
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "core.kcp.io",
    version = "v1alpha1",
    kind = "LogicalCluster",
    plural = "logicalclusters",
    category = "kcp",
    status = "LogicalClusterStatus",
    derive = "Default",
    derive = "PartialEq",
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"URL","type":"string","jsonPath":".status.URL"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct LogicalClusterSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directly_deletable: Option<bool>,
    /// The Workspace in the parent that owns this cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<LogicalClusterOwner>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<UserInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initializers: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminators: Option<Vec<String>>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

/// The owning object (a Workspace in the parent cluster).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogicalClusterOwner {
    pub api_version: String,
    pub resource: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Logical cluster **name** of the parent.
    pub cluster: String,
    pub uid: String,
}

/// `status` of a [`LogicalCluster`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogicalClusterStatus {
    #[serde(rename = "URL", default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<LogicalClusterPhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initializers: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminators: Option<Vec<String>>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

impl LogicalCluster {
    /// The canonical workspace path from the `kcp.io/path` annotation.
    pub fn path(&self) -> Option<&str> {
        self.metadata
            .annotations
            .as_ref()?
            .get(ANNOTATION_PATH)
            .map(String::as_str)
    }

    pub fn phase(&self) -> Option<&LogicalClusterPhase> {
        self.status.as_ref()?.phase.as_ref()
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
        assert_eq!(LogicalCluster::api_version(&()), "core.kcp.io/v1alpha1");
        assert_eq!(LogicalCluster::kind(&()), "LogicalCluster");
        assert_eq!(LogicalCluster::plural(&()), "logicalclusters");
    }

    #[test]
    fn initializing_cluster_roundtrips() {
        let obj = json!({"apiVersion":"core.kcp.io/v1alpha1","kind":"LogicalCluster",
          "metadata":{"name":"cluster","annotations":{"kcp.io/cluster":"2cynbfy2m0wtjqcs","kcp.io/path":"root:org:team-a",
            "internal.tenancy.kcp.io/type":"root:universal","core.kcp.io/shard":"root"}},
          "spec":{"owner":{"apiVersion":"tenancy.kcp.io/v1alpha1","resource":"workspaces","name":"team-a",
              "cluster":"1q5b9ya3dnzyt2ct","uid":"3f1c6a2e-0000-4000-8000-000000000001"},
            "initializers":["root:universal","system:apibindings"]},
          "status":{"URL":"https://kcp.example:6443/clusters/root:org:team-a","phase":"Initializing",
            "initializers":["root:universal","system:apibindings"],
            "conditions":[{"type":"WorkspaceInitialized","status":"False","severity":"Info",
              "lastTransitionTime":"2026-01-01T00:00:00Z","reason":"InitializerExists",
              "message":"Initializers still exist: [root:universal system:apibindings]"}]}});
        let lc: LogicalCluster = roundtrip(&obj);
        assert_eq!(lc.path(), Some("root:org:team-a"));
        assert_eq!(lc.phase(), Some(&LogicalClusterPhase::Initializing));
        assert_eq!(lc.spec.owner.as_ref().unwrap().cluster, "1q5b9ya3dnzyt2ct");
        assert_eq!(
            lc.status.as_ref().unwrap().url.as_deref(),
            Some("https://kcp.example:6443/clusters/root:org:team-a")
        );
    }

    #[test]
    fn phases_are_open() {
        for (wire, phase) in [
            ("Scheduling", LogicalClusterPhase::Scheduling),
            ("Ready", LogicalClusterPhase::Ready),
            ("Deleting", LogicalClusterPhase::Deleting),
            ("Frozen", LogicalClusterPhase::Other("Frozen".into())),
        ] {
            assert_eq!(
                serde_json::from_value::<LogicalClusterPhase>(json!(wire)).unwrap(),
                phase
            );
            assert_eq!(serde_json::to_value(&phase).unwrap(), json!(wire));
        }
    }

    #[test]
    fn unknown_fields_survive() {
        let obj = json!({"apiVersion":"core.kcp.io/v1alpha1","kind":"LogicalCluster","metadata":{"name":"cluster"},
          "spec":{"directlyDeletable":true,"createdBy":{"username":"alice","groups":["system:authenticated"]},"newKnob":7},
          "status":{"phase":"Ready","shardHint":"a"}});
        let lc: LogicalCluster = roundtrip(&obj);
        assert_eq!(lc.spec.extra.get("newKnob"), Some(&json!(7)));
        assert_eq!(lc.status.unwrap().extra.get("shardHint"), Some(&json!("a")));
    }
}
