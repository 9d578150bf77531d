//! `tenancy.kcp.io/v1alpha1`: [`Workspace`] and [`WorkspaceType`] (SDK `tenancy/v1alpha1`).
//!
//! A Workspace is the parent's view of a child logical cluster: creating one makes kcp schedule a
//! LogicalCluster, fill `spec.cluster` and `spec.URL`, and walk the phases Scheduling →
//! Initializing → Ready. A WorkspaceType constrains which children and parents a workspace may
//! have and which APIExports its workspaces bind by default.

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::core::LogicalClusterPhase;
use super::{Condition, Extra};

/// `spec` of a [`Workspace`]. Everything is optional on create; kcp fills `type`, `cluster` and `URL`.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "tenancy.kcp.io",
    version = "v1alpha1",
    kind = "Workspace",
    plural = "workspaces",
    shortname = "ws",
    category = "kcp",
    status = "WorkspaceStatus",
    derive = "Default",
    derive = "PartialEq",
    printcolumn = r#"{"name":"Type","type":"string","jsonPath":".spec.type.name"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"URL","type":"string","jsonPath":".spec.URL"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceSpec {
    /// The workspace type; immutable, defaulted from the parent type's `defaultChildWorkspaceType`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<WorkspaceTypeReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<WorkspaceLocation>,
    /// Logical cluster **name** of the workspace; set by kcp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// URL of the workspace, e.g. `https://kcp:6443/clusters/root:org:ws`; set by kcp.
    #[serde(rename = "URL", default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount: Option<WorkspaceMount>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

/// A reference to a WorkspaceType by name and (optionally) the path of the workspace defining it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceTypeReference {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl WorkspaceTypeReference {
    /// `<path>:<name>` as kcp prints types in messages and annotations, or just the name without a path.
    pub fn qualified(&self) -> String {
        match &self.path {
            Some(path) if !path.is_empty() => format!("{path}:{}", self.name),
            _ => self.name.clone(),
        }
    }
}

/// Where a workspace is scheduled.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceLocation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

/// A mounted workspace: the content is served by the referenced object's implementation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceMount {
    #[serde(rename = "ref")]
    pub reference: MountReference,
}

/// The object a mount points to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MountReference {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// `status` of a [`Workspace`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceStatus {
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

impl Workspace {
    /// The phase, if kcp has written one.
    pub fn phase(&self) -> Option<&LogicalClusterPhase> {
        self.status.as_ref()?.phase.as_ref()
    }

    /// True once kcp reports the workspace `Ready`.
    pub fn is_ready(&self) -> bool {
        self.phase() == Some(&LogicalClusterPhase::Ready)
    }
}

/// `spec` of a [`WorkspaceType`]; every field is optional.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "tenancy.kcp.io",
    version = "v1alpha1",
    kind = "WorkspaceType",
    plural = "workspacetypes",
    category = "kcp",
    status = "WorkspaceTypeStatus",
    derive = "Default",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceTypeSpec {
    /// Adds the implicit initializer `<logical-cluster-name>:<type-name>`, named after the logical
    /// cluster (not the path) of the workspace holding the type, e.g. `root:universal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initializer: Option<bool>,
    /// Adds the implicit terminator `<logical-cluster-name>:<type-name>` (named like the initializer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminator: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extend: Option<WorkspaceTypeExtension>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_workspace_labels: Option<BTreeMap<String, String>>,
    /// Not inherited through `extend`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_child_workspace_type: Option<WorkspaceTypeReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_allowed_children: Option<WorkspaceTypeSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_allowed_parents: Option<WorkspaceTypeSelector>,
    #[serde(rename = "defaultAPIBindings", default, skip_serializing_if = "Option::is_none")]
    pub default_api_bindings: Option<Vec<APIExportReference>>,
    /// `InitializeOnly` or `Maintain`.
    #[serde(
        rename = "defaultAPIBindingLifecycle",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub default_api_binding_lifecycle: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication_configurations: Option<Vec<AuthenticationConfigurationReference>>,
    /// kcp v0.32+.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initializer_permissions: Option<Vec<PolicyRule>>,
    /// kcp v0.32+.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminator_permissions: Option<Vec<PolicyRule>>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

/// Types this type extends (inherits initializers from and counts as for limits).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceTypeExtension {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with: Option<Vec<WorkspaceTypeReference>>,
}

/// `limitAllowedChildren` / `limitAllowedParents`: `none: true`, or a non-empty `types` list.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceTypeSelector {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub none: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub types: Option<Vec<WorkspaceTypeReference>>,
}

/// An APIExport that workspaces of a type bind by default. Note the key is `export`, not `name`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct APIExportReference {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub export: String,
}

/// A WorkspaceAuthenticationConfiguration by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AuthenticationConfigurationReference {
    pub name: String,
}

/// `status` of a [`WorkspaceType`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceTypeStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_workspaces: Option<Vec<WorkspaceTypeVirtualWorkspace>>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

/// An initializing/terminating virtual workspace URL of a type.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceTypeVirtualWorkspace {
    pub url: String,
    /// `initializing` or `terminating`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::kcp::testutil::{roundtrip, serializes_to};
    use kube::Resource;
    use serde_json::json;

    fn ready_workspace() -> serde_json::Value {
        json!({"apiVersion":"tenancy.kcp.io/v1alpha1","kind":"Workspace",
         "metadata":{"name":"team-a","uid":"3f1c6a2e-0000-4000-8000-000000000001","resourceVersion":"4711",
          "generation":1,
          "labels":{"tenancy.kcp.io/phase":"Ready"},
          "annotations":{"kcp.io/cluster":"1q5b9ya3dnzyt2ct","core.kcp.io/shard":"root",
            "internal.tenancy.kcp.io/cluster":"2cynbfy2m0wtjqcs","internal.tenancy.kcp.io/shard":"1pfxsevk",
            "experimental.tenancy.kcp.io/owner":"{\"username\":\"alice\",\"groups\":[\"system:authenticated\"]}"},
          "finalizers":["core.kcp.io/logicalcluster"]},
         "spec":{"type":{"name":"universal","path":"root"},"cluster":"2cynbfy2m0wtjqcs",
          "URL":"https://kcp.example:6443/clusters/root:org:team-a"},
         "status":{"phase":"Ready","conditions":[
          {"type":"WorkspaceInitialized","status":"True","lastTransitionTime":"2026-01-01T00:00:02Z"},
          {"type":"WorkspaceScheduled","status":"True","lastTransitionTime":"2026-01-01T00:00:01Z"}]}})
    }

    #[test]
    fn resource_identity() {
        assert_eq!(Workspace::api_version(&()), "tenancy.kcp.io/v1alpha1");
        assert_eq!(Workspace::kind(&()), "Workspace");
        assert_eq!(Workspace::plural(&()), "workspaces");
        assert_eq!(WorkspaceType::api_version(&()), "tenancy.kcp.io/v1alpha1");
        assert_eq!(WorkspaceType::kind(&()), "WorkspaceType");
        assert_eq!(WorkspaceType::plural(&()), "workspacetypes");
    }

    #[test]
    fn ready_workspace_roundtrips() {
        let ws: Workspace = roundtrip(&ready_workspace());
        assert!(ws.is_ready());
        assert_eq!(
            ws.spec.url.as_deref(),
            Some("https://kcp.example:6443/clusters/root:org:team-a")
        );
        assert_eq!(ws.spec.cluster.as_deref(), Some("2cynbfy2m0wtjqcs"));
        assert_eq!(
            ws.spec.type_.as_ref().map(WorkspaceTypeReference::qualified),
            Some("root:universal".into())
        );
    }

    #[test]
    fn create_body_has_only_what_was_set() {
        let ws = Workspace::new(
            "team-a",
            WorkspaceSpec {
                type_: Some(WorkspaceTypeReference {
                    name: "workspace".into(),
                    path: Some("root:faros".into()),
                }),
                ..Default::default()
            },
        );
        serializes_to(
            &ws,
            &json!({"apiVersion":"tenancy.kcp.io/v1alpha1","kind":"Workspace","metadata":{"name":"team-a"},
                "spec":{"type":{"name":"workspace","path":"root:faros"}}}),
        );
    }

    #[test]
    fn unknown_fields_survive_read_modify_write() {
        let mut obj = ready_workspace();
        obj["spec"]["futureField"] = json!({"a": 1});
        obj["status"]["futureStatus"] = json!(["x"]);
        obj["spec"]["mount"] = json!({"ref":{"apiVersion":"mounts.example.io/v1","kind":"Mount","name":"m"}});
        let mut ws: Workspace = roundtrip(&obj);
        ws.metadata
            .labels
            .get_or_insert_default()
            .insert("team".into(), "a".into());
        let back = serde_json::to_value(&ws).unwrap();
        assert_eq!(back["spec"]["futureField"], json!({"a": 1}));
        assert_eq!(back["status"]["futureStatus"], json!(["x"]));
        assert_eq!(back["metadata"]["labels"]["team"], "a");
        assert_eq!(ws.spec.mount.unwrap().reference.kind, "Mount");
    }

    #[test]
    fn new_phases_and_missing_status() {
        let ws: Workspace = roundtrip(&json!({"apiVersion":"tenancy.kcp.io/v1alpha1","kind":"Workspace",
            "metadata":{"name":"x"},"spec":{},"status":{"phase":"Hibernating"}}));
        assert_eq!(ws.phase(), Some(&LogicalClusterPhase::Other("Hibernating".into())));
        assert!(!ws.is_ready());
        // The derived root requires `spec` (kcp always writes at least `spec: {}`).
        let err = serde_json::from_value::<Workspace>(
            json!({"apiVersion":"tenancy.kcp.io/v1alpha1","kind":"Workspace","metadata":{"name":"x"}}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("spec"), "{err}");
        let ws: Workspace = serde_json::from_value(
            json!({"apiVersion":"tenancy.kcp.io/v1alpha1","kind":"Workspace","metadata":{"name":"x"},"spec":{}}),
        )
        .unwrap();
        assert_eq!(ws.spec, WorkspaceSpec::default());
        assert_eq!(ws.phase(), None);
    }

    #[test]
    fn workspace_type_roundtrips() {
        let obj = json!({"apiVersion":"tenancy.kcp.io/v1alpha1","kind":"WorkspaceType",
          "metadata":{"name":"provider","annotations":{"kcp.io/path":"root:faros"}},
          "spec":{"initializer":true,
            "extend":{"with":[{"name":"universal","path":"root"}]},
            "additionalWorkspaceLabels":{"faros.sh/kind":"provider"},
            "defaultChildWorkspaceType":{"name":"universal","path":"root"},
            "limitAllowedChildren":{"none":true},
            "limitAllowedParents":{"types":[{"name":"universal","path":"root"}]},
            "defaultAPIBindings":[{"path":"root:faros:system:controllers","export":"providers.faros.sh"}],
            "defaultAPIBindingLifecycle":"InitializeOnly",
            "authenticationConfigurations":[{"name":"sso"}],
            "initializerPermissions":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","create"]}]},
          "status":{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}],
            "virtualWorkspaces":[{"url":"https://kcp.example:6443/services/initializingworkspaces/root:faros:provider","type":"initializing"}]}});
        let wt: WorkspaceType = roundtrip(&obj);
        let bindings = wt.spec.default_api_bindings.as_ref().unwrap();
        assert_eq!(bindings[0].export, "providers.faros.sh");
        assert_eq!(wt.spec.limit_allowed_children.as_ref().unwrap().none, Some(true));
        assert_eq!(
            wt.spec.initializer_permissions.as_ref().unwrap()[0].verbs,
            vec!["get", "create"]
        );
        assert!(Condition::is_type_true(
            wt.status.as_ref().unwrap().conditions.as_deref(),
            "Ready"
        ));
    }

    #[test]
    fn crds_generate() {
        use kube::CustomResourceExt;
        assert_eq!(Workspace::crd().spec.names.short_names, Some(vec!["ws".to_string()]));
        assert_eq!(WorkspaceType::crd().spec.scope, "Cluster");
    }
}
