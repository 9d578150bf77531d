//! kcp's own APIs that are not served everywhere: `tenancy.kcp.io` (Workspace, WorkspaceType) and
//! `topology.kcp.io` (Partition, PartitionSet). As in kcp, root publishes them as APIExports of
//! the same names, serves them itself, and every other workspace gets them only through an
//! APIBinding — which `root:universal` creates by default. A workspace whose type does not extend
//! universal therefore has no tenancy API and cannot create workspaces.
//!
//! The APIResourceSchemas are derived from the Rust types where faros has them (tenancy) and
//! written here for topology, which faros does not use; root's native definitions are built from
//! the same schemas, so root and bound workspaces serve identical resources.

use faros_core::kcp::tenancy::{Workspace, WorkspaceType};
use kube::CustomResourceExt;
use serde_json::{Value, json};

use crate::registry::ResourceDef;

pub const TENANCY_EXPORT: &str = "tenancy.kcp.io";
pub const TOPOLOGY_EXPORT: &str = "topology.kcp.io";
/// The prefix of the APIResourceSchema names (`<prefix>.<plural>.<group>`).
const SCHEMA_PREFIX: &str = "embedded";

/// How a root API's schema treats a missing `spec`, as kcp's CRD for it does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SpecRule {
    /// Required, defaulted to `{}` first (kcp's Workspace: created without `spec`, it is 201).
    DefaultedEmpty,
    /// Optional.
    Optional,
}

/// An APIResourceSchema `spec` from a generated CRD: the same names, scope and versions, with the
/// CRD's `openAPIV3Schema` as the version schema.
fn schema_spec_from_crd<K: CustomResourceExt>(rule: SpecRule) -> Value {
    let crd = serde_json::to_value(K::crd()).unwrap_or_default();
    let spec = crd.get("spec").cloned().unwrap_or_default();
    let versions: Vec<Value> = spec
        .get("versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut v| {
            let mut schema = v
                .pointer("/schema/openAPIV3Schema")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object"}));
            if rule == SpecRule::Optional
                && let Some(req) = schema.get_mut("required").and_then(Value::as_array_mut)
            {
                req.retain(|f| f != "spec");
            }
            if rule == SpecRule::DefaultedEmpty
                && let Some(spec) = schema.pointer_mut("/properties/spec").and_then(Value::as_object_mut)
            {
                spec.insert("default".into(), json!({}));
            }
            if let Some(map) = v.as_object_mut() {
                map.insert("schema".into(), schema);
            }
            v
        })
        .collect();
    let mut names = spec.get("names").cloned().unwrap_or_default();
    names["categories"] = json!(["kcp"]);
    // kcp's schema validation requires the list kind, which the generated CRD leaves out.
    if names.get("listKind").is_none()
        && let Some(kind) = names.get("kind").and_then(Value::as_str)
    {
        names["listKind"] = json!(format!("{kind}List"));
    }
    json!({"group": spec["group"], "names": names, "scope": spec["scope"], "versions": versions})
}

fn label_selector() -> Value {
    json!({"type": "object", "x-kubernetes-map-type": "atomic", "properties": {
        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
        "matchExpressions": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {
            "type": "object", "required": ["key", "operator"], "properties": {
                "key": {"type": "string"}, "operator": {"type": "string"},
                "values": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}}}}}}})
}

fn conditions() -> Value {
    json!({"type": "array", "items": {"type": "object", "required": ["type", "status", "lastTransitionTime"],
        "properties": {"type": {"type": "string"}, "status": {"type": "string"}, "severity": {"type": "string"},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "reason": {"type": "string"}, "message": {"type": "string"}}}})
}

fn topology_spec(kind: &str, plural: &str, body: Value, status: bool, columns: Value) -> Value {
    let mut version = json!({"name": "v1alpha1", "served": true, "storage": true,
        "additionalPrinterColumns": columns,
        "schema": {"type": "object", "required": ["spec"], "properties": body}});
    if status {
        version["subresources"] = json!({"status": {}});
    }
    json!({"group": "topology.kcp.io", "scope": "Cluster",
        "names": {"kind": kind, "listKind": format!("{kind}List"), "plural": plural,
            "singular": kind.to_lowercase(), "categories": ["kcp"]},
        "versions": [version]})
}

/// `(export, APIResourceSchema spec)` of every root API.
fn schema_specs() -> Vec<(&'static str, Value)> {
    let partition = topology_spec(
        "Partition",
        "partitions",
        json!({"spec": {"type": "object", "properties": {"selector": label_selector()}}}),
        false,
        json!([{"name": "Owner", "type": "string", "jsonPath": ".metadata.ownerReferences[*].name"}]),
    );
    let partition_set = topology_spec(
        "PartitionSet",
        "partitionsets",
        json!({"spec": {"type": "object", "properties": {
                "dimensions": {"type": "array", "items": {"type": "string"}},
                "shardSelector": label_selector()}},
            "status": {"type": "object", "properties": {"count": {"type": "integer"}, "conditions": conditions()}}}),
        true,
        json!([{"name": "Count", "type": "string", "jsonPath": ".status.count",
            "description": "Count of the partitions belonging the PartitionSet"}]),
    );
    vec![
        (
            TENANCY_EXPORT,
            schema_spec_from_crd::<Workspace>(SpecRule::DefaultedEmpty),
        ),
        (TENANCY_EXPORT, workspace_type_spec()),
        (TOPOLOGY_EXPORT, partition),
        (TOPOLOGY_EXPORT, partition_set),
    ]
}

/// The WorkspaceType schema, with the default kcp's CRD gives `spec.defaultChildWorkspaceType`:
/// `root:universal` (a type extending another does not inherit the other's).
fn workspace_type_spec() -> Value {
    let mut spec = schema_spec_from_crd::<WorkspaceType>(SpecRule::Optional);
    for version in spec["versions"].as_array_mut().into_iter().flatten() {
        if let Some(field) = version
            .pointer_mut("/schema/properties/spec/properties/defaultChildWorkspaceType")
            .and_then(Value::as_object_mut)
        {
            field.insert("default".into(), json!({"name": "universal", "path": "root"}));
        }
    }
    spec
}

fn schema_name(spec: &Value) -> String {
    let s = |p: &str| spec.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
    format!("{SCHEMA_PREFIX}.{}.{}", s("/names/plural"), s("/group"))
}

/// The APIResourceSchemas root holds for its exports.
pub fn schemas() -> Vec<Value> {
    schema_specs()
        .into_iter()
        .map(|(_, spec)| {
            json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema",
                "metadata": {"name": schema_name(&spec)}, "spec": spec})
        })
        .collect()
}

/// Root's APIExports `tenancy.kcp.io` and `topology.kcp.io`.
pub fn exports() -> Vec<Value> {
    let specs = schema_specs();
    [TENANCY_EXPORT, TOPOLOGY_EXPORT]
        .into_iter()
        .map(|export| {
            let resources: Vec<Value> = specs
                .iter()
                .filter(|(e, _)| *e == export)
                .map(|(_, spec)| {
                    json!({"group": spec["group"], "name": spec["names"]["plural"],
                        "schema": schema_name(spec), "storage": {"crd": {}}})
                })
                .collect();
            json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
                "metadata": {"name": export}, "spec": {"resources": resources}})
        })
        .collect()
}

/// The annotation kcp's replication controllers put on RBAC objects that grant on its APIs (the
/// API groups they grant on), so the cache server copies them to other shards.
pub const REPLICATE_ANNOTATION: &str = "internal.kcp.io/replicate";

/// kcp lets every authenticated user bind both exports (ClusterRole
/// `system:kcp:apiexport:<group>:bind`, bound as `system:kcp:authenticated:apiexport:<group>:bind`).
pub fn bind_grants() -> Vec<(&'static str, Value)> {
    let rbac = "rbac.authorization.k8s.io";
    let annotations = json!({REPLICATE_ANNOTATION: "apis.kcp.io"});
    let mut out = Vec::new();
    for (export, short) in [(TENANCY_EXPORT, "tenancy"), (TOPOLOGY_EXPORT, "topology")] {
        let name = format!("system:kcp:apiexport:{short}:bind");
        let binding = format!("system:kcp:authenticated:apiexport:{short}:bind");
        out.push((
            "clusterroles",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name, "annotations": annotations},
                "rules": [{"apiGroups": ["apis.kcp.io"], "resources": ["apiexports"], "resourceNames": [export], "verbs": ["bind"]}]}),
        ));
        out.push((
            "clusterrolebindings",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": binding, "annotations": annotations},
                "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": name},
                "subjects": [{"apiGroup": rbac, "kind": "Group", "name": crate::auth::GROUP_AUTHENTICATED}]}),
        ));
    }
    out
}

/// The resources root serves natively, built from the exported schemas.
pub fn root_resources() -> Vec<ResourceDef> {
    let mut defs = Vec::new();
    for (_, spec) in schema_specs() {
        for version in spec.get("versions").and_then(Value::as_array).into_iter().flatten() {
            match ResourceDef::from_crd_like(&spec, version, "/schema") {
                Ok(def) => defs.push(def),
                // The schemas are ours and covered by tests; a failure is a programming error.
                Err(e) => unreachable!("root API schema {} is invalid: {e}", schema_name(&spec)),
            }
        }
    }
    defs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_serves_what_it_exports() {
        let defs = root_resources();
        let names: Vec<String> = defs.iter().map(|d| format!("{}/{}", d.group, d.resource)).collect();
        assert_eq!(
            names,
            [
                "tenancy.kcp.io/workspaces",
                "tenancy.kcp.io/workspacetypes",
                "topology.kcp.io/partitions",
                "topology.kcp.io/partitionsets"
            ]
        );
        assert!(defs.iter().all(|d| !d.namespaced && d.categories == ["kcp"]));
        assert!(
            defs.iter()
                .all(|d| crate::registry::ROOT_ONLY_GROUPS.contains(&d.group.as_str()))
        );
        // Status subresources as kcp's CRDs: every kind but Partition.
        let status: Vec<bool> = defs.iter().map(|d| d.status_subresource).collect();
        assert_eq!(status, [true, true, false, true]);
        // `spec` required on Workspace, Partition and PartitionSet only, as kcp's CRDs.
        let required: Vec<bool> = defs
            .iter()
            .map(|d| d.schema.required.iter().any(|f| f == "spec"))
            .collect();
        assert_eq!(required, [true, false, true, true]);
        assert_eq!(
            defs[0].short_names,
            ["ws"],
            "kubectl get ws works in every workspace that binds tenancy"
        );
        let exports = exports();
        assert_eq!(
            exports[0]["spec"]["resources"][0]["schema"],
            "embedded.workspaces.tenancy.kcp.io"
        );
        assert_eq!(exports[1]["metadata"]["name"], "topology.kcp.io");
        assert_eq!(schemas().len(), 4);
        let default = workspace_type_spec()
            .pointer("/versions/0/schema/properties/spec/properties/defaultChildWorkspaceType/default")
            .cloned();
        assert_eq!(default, Some(json!({"name": "universal", "path": "root"})));
    }
}
