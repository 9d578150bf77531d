//! The resource registry: which resources a logical cluster serves and how.
//!
//! Built-in Kubernetes kinds are served in every logical cluster. Schema-defined resources (kcp
//! APIResourceSchemas bound through APIBindings) are added per logical cluster at runtime, so
//! discovery and routing are always answered per cluster.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use crate::schema::Schema;

/// An additional printer column (`kubectl get` Table output).
#[derive(Clone, Debug, PartialEq)]
pub struct PrinterColumn {
    pub name: String,
    /// string, integer, number, boolean or date.
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i32,
    /// A simple JSONPath like `.status.phase` or `.metadata.labels.app`.
    pub json_path: String,
}

/// How a resource is stored and served.
#[derive(Clone, Debug)]
pub struct ResourceDef {
    pub group: String,
    pub version: String,
    /// Plural, lower-case resource name (the URL segment).
    pub resource: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Has a `/status` subresource (status is ignored on the main resource and vice versa).
    pub status_subresource: bool,
    /// CR-like: `metadata.generation` is maintained (built-ins such as ConfigMap leave it unset).
    pub generation: bool,
    /// Strategic merge patch is accepted (built-in kinds only; CRs answer 415).
    pub strategic_merge: bool,
    /// Create-only virtual resources (TokenReview, SubjectAccessReview): never stored.
    pub create_only: bool,
    /// Extra field-selector labels beyond metadata.name / metadata.namespace (JSONPath-like, e.g. `spec.type`).
    pub selectable_fields: Vec<String>,
    pub printer_columns: Vec<PrinterColumn>,
    /// The full object schema (apiVersion, kind, metadata, body).
    pub schema: Arc<Schema>,
    /// Unknown fields are pruned on write (CR semantics) instead of being kept.
    pub prune_unknown: bool,
}

impl ResourceDef {
    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The verbs advertised in discovery.
    pub fn verbs(&self) -> Vec<&'static str> {
        if self.create_only {
            vec!["create"]
        } else {
            vec![
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
        }
    }
}

/// Key of a resource within a group-version.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupVersionResource {
    pub group: String,
    pub version: String,
    pub resource: String,
}

/// Resources served by the server: built-ins everywhere plus per-cluster additions.
#[derive(Debug, Default)]
pub struct Registry {
    builtin: Vec<Arc<ResourceDef>>,
    per_cluster: RwLock<BTreeMap<String, Vec<Arc<ResourceDef>>>>,
}

impl Registry {
    pub fn new(builtin: Vec<ResourceDef>) -> Self {
        Self {
            builtin: builtin.into_iter().map(Arc::new).collect(),
            per_cluster: RwLock::default(),
        }
    }

    /// Every resource served in `cluster`, built-ins first.
    pub fn resources(&self, cluster: &str) -> Vec<Arc<ResourceDef>> {
        let mut out = self.builtin.clone();
        if let Some(extra) = self.read().get(cluster) {
            out.extend(extra.iter().cloned());
        }
        out
    }

    /// The resource `group/version/resource` in `cluster`, if served there.
    pub fn lookup(&self, cluster: &str, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceDef>> {
        let matches = |d: &Arc<ResourceDef>| d.group == group && d.version == version && d.resource == resource;
        if let Some(d) = self.builtin.iter().find(|d| matches(d)) {
            return Some(d.clone());
        }
        self.read()
            .get(cluster)
            .and_then(|extra| extra.iter().find(|d| matches(d)).cloned())
    }

    /// Whether any cluster serves this group-version-resource (for wildcard requests).
    pub fn lookup_any(&self, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceDef>> {
        let matches = |d: &Arc<ResourceDef>| d.group == group && d.version == version && d.resource == resource;
        if let Some(d) = self.builtin.iter().find(|d| matches(d)) {
            return Some(d.clone());
        }
        self.read()
            .values()
            .flat_map(|v| v.iter())
            .find(|d| matches(d))
            .cloned()
    }

    /// Replaces the schema-defined resources of `cluster`.
    pub fn set_cluster_resources(&self, cluster: &str, defs: Vec<ResourceDef>) {
        let mut guard = self.per_cluster.write().unwrap_or_else(|p| p.into_inner());
        if defs.is_empty() {
            guard.remove(cluster);
        } else {
            guard.insert(cluster.to_string(), defs.into_iter().map(Arc::new).collect());
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Vec<Arc<ResourceDef>>>> {
        // A poisoned lock only means a writer panicked mid-replace of a whole Vec; the map is still valid.
        self.per_cluster.read().unwrap_or_else(|p| p.into_inner())
    }
}

impl Registry {
    /// Every resource definition of every cluster (deduplicated by group/resource).
    pub fn all_resources(&self) -> Vec<Arc<ResourceDef>> {
        let mut out = self.builtin.clone();
        for defs in self.read().values() {
            for d in defs {
                if !out.iter().any(|o| o.group == d.group && o.resource == d.resource) {
                    out.push(d.clone());
                }
            }
        }
        out
    }
}
