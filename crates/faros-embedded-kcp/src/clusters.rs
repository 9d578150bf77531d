//! The logical cluster index: which logical clusters exist, their canonical workspace paths, and their
//! phases. Built from the `LogicalCluster` object named `cluster` that every logical cluster holds
//! (annotation `kcp.io/path`), and kept current synchronously on every committed write, so a
//! workspace path resolves the moment its LogicalCluster exists.

use std::collections::HashMap;

use serde_json::Value;

use crate::objects::meta;
use crate::store::{Event, EventType};

/// The group, resource and name of the object describing a logical cluster, inside that cluster.
pub const LOGICAL_CLUSTER_GROUP: &str = "core.kcp.io";
pub const LOGICAL_CLUSTER_RESOURCE: &str = "logicalclusters";
pub const LOGICAL_CLUSTER_NAME: &str = "cluster";
/// Annotation holding the canonical path of a logical cluster (`root:org:ws`).
pub const PATH_ANNOTATION: &str = "kcp.io/path";

/// What the index knows of one logical cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterInfo {
    pub name: String,
    pub path: String,
    /// `status.phase` of the LogicalCluster: Scheduling, Initializing, Ready, Terminating, …
    pub phase: String,
    /// Remaining initializers (`status.initializers`).
    pub initializers: Vec<String>,
    /// `authorization.kcp.io/required-groups`: who may enter at all (see `auth::required_groups`).
    pub required_groups: Option<String>,
    /// Annotation `core.kcp.io/inactive: "true"`: kcp refuses requests into the cluster.
    pub inactive: bool,
}

/// LogicalCluster annotation marking a cluster inactive.
pub const INACTIVE_ANNOTATION: &str = "core.kcp.io/inactive";

/// Logical clusters by name and by canonical path.
#[derive(Debug, Default)]
pub struct ClusterIndex {
    by_name: HashMap<String, ClusterInfo>,
    by_path: HashMap<String, String>,
}

impl ClusterIndex {
    /// Records (or replaces) a LogicalCluster object stored in `cluster`.
    pub fn upsert(&mut self, cluster: &str, obj: &Value) {
        let path = meta::annotation(obj, PATH_ANNOTATION).unwrap_or(cluster).to_string();
        let phase = obj
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("Scheduling")
            .to_string();
        let initializers = obj
            .pointer("/status/initializers")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
            .unwrap_or_default();
        let required_groups = meta::annotation(obj, crate::auth::REQUIRED_GROUPS_ANNOTATION).map(String::from);
        let inactive = meta::annotation(obj, INACTIVE_ANNOTATION) == Some("true");
        if let Some(old) = self.by_name.get(cluster)
            && old.path != path
        {
            self.by_path.remove(&old.path);
        }
        self.by_path.insert(path.clone(), cluster.to_string());
        self.by_name.insert(
            cluster.to_string(),
            ClusterInfo {
                name: cluster.into(),
                path,
                phase,
                initializers,
                required_groups,
                inactive,
            },
        );
    }

    pub fn remove(&mut self, cluster: &str) {
        if let Some(old) = self.by_name.remove(cluster) {
            self.by_path.remove(&old.path);
        }
    }

    /// Applies a committed event if it concerns a LogicalCluster.
    pub fn apply_event(&mut self, event: &Event) {
        if event.key.group != LOGICAL_CLUSTER_GROUP || event.key.resource != LOGICAL_CLUSTER_RESOURCE {
            return;
        }
        match event.event_type {
            EventType::Deleted => self.remove(&event.key.cluster),
            _ => self.upsert(&event.key.cluster, &event.object),
        }
    }

    /// The names of the logical clusters in phase Ready.
    pub fn ready_names(&self) -> Vec<String> {
        self.by_name
            .values()
            .filter(|c| c.phase == "Ready")
            .map(|c| c.name.clone())
            .collect()
    }

    pub fn get(&self, name: &str) -> Option<&ClusterInfo> {
        self.by_name.get(name)
    }

    /// The logical cluster name of a canonical path.
    pub fn name_of_path(&self, path: &str) -> Option<&str> {
        self.by_path.get(path).map(String::as_str)
    }

    /// Resolves a `/clusters/<x>` segment the way kcp does: a single segment is a cluster name taken
    /// as is (no lookup), a multi-segment value is a path that must be known.
    pub fn resolve<'a>(&'a self, segment: &'a str) -> Option<&'a str> {
        if segment.contains(':') && !segment.starts_with("system:") {
            self.name_of_path(segment)
        } else {
            Some(segment)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resolves_names_and_paths() {
        let mut index = ClusterIndex::default();
        index.upsert(
            "root",
            &json!({"metadata": {"annotations": {"kcp.io/path": "root"}}, "status": {"phase": "Ready"}}),
        );
        index.upsert("abc123", &json!({"metadata": {"annotations": {"kcp.io/path": "root:org"}}, "status": {"phase": "Initializing", "initializers": ["root:universal"]}}));
        assert_eq!(index.resolve("root"), Some("root"));
        assert_eq!(index.resolve("root:org"), Some("abc123"));
        assert_eq!(index.resolve("root:nope"), None);
        // Single segments are names, taken as is (kcp does no lookup for them).
        assert_eq!(index.resolve("unknownname"), Some("unknownname"));
        assert_eq!(
            index.get("abc123").unwrap().initializers,
            vec!["root:universal".to_string()]
        );
        index.remove("abc123");
        assert_eq!(index.resolve("root:org"), None);
    }
}
