//! The resource registry: which resources a logical cluster serves and how.
//!
//! Built-in Kubernetes kinds are served in every logical cluster. Schema-defined resources (kcp
//! APIResourceSchemas bound through APIBindings) are added per logical cluster at runtime, so
//! discovery and routing are always answered per cluster.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};

use crate::auth::Verb;
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
    /// Set when this version is served from another stored version (kcp's APIExport/APIBinding).
    pub conversion: Option<Conversion>,
    /// Bound through an APIBinding that is being deleted: no creates, and discovery drops `create`
    /// (kcp marks the bound CRD terminating).
    pub terminating: bool,
    /// Discovery's `storageVersionHash`, where it is known how kcp computes it (bound APIs).
    pub storage_version_hash: Option<String>,
    /// Every version of the APIResourceSchema a bound resource is served from (None for every
    /// other resource): see [`ResourceDef::served`].
    pub schema_versions: Option<Arc<[String]>>,
}

/// Conversion between a served version and the stored version of a resource.
#[derive(Clone, Copy, Debug)]
pub struct Conversion {
    /// The version objects are stored in.
    pub storage_version: &'static str,
    /// Served → stored (request bodies).
    pub to_storage: fn(&serde_json::Value) -> Result<serde_json::Value, String>,
    /// Stored → served (responses and watch events).
    pub to_served: fn(&serde_json::Value) -> Result<serde_json::Value, String>,
}

impl ResourceDef {
    /// The storage key of object `name` of this resource in `cluster` (the namespace is dropped for
    /// cluster-scoped resources).
    /// Whether kube-apiserver serves this as a typed built-in kind rather than a custom resource
    /// (kcp's own kinds and bound APIs are custom resources there): exactly the kinds that take
    /// strategic merge patches.
    pub fn typed_builtin(&self) -> bool {
        self.strategic_merge
    }

    pub fn key(&self, cluster: &str, namespace: Option<&str>, name: &str) -> crate::store::ObjectKey {
        crate::store::ObjectKey {
            group: self.group.clone(),
            resource: self.resource.clone(),
            cluster: cluster.to_string(),
            namespace: if self.namespaced {
                namespace.unwrap_or_default().to_string()
            } else {
                String::new()
            },
            name: name.to_string(),
        }
    }

    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// A stored object as this version serves it.
    ///
    /// A bound resource's objects are read as kube's storage decoder reads custom resources: in the
    /// requested version (its `None` conversion rewrites only `apiVersion`), pruned and defaulted by
    /// that version's schema. An export re-pointed to a new schema thus serves its tenants' stored
    /// objects under the new schema without rewriting them, and one stored in a version the schema
    /// no longer has cannot be converted (kcp's answer, a 500 without reason).
    pub fn served(&self, obj: serde_json::Value) -> Result<serde_json::Value, faros_core::status::Status> {
        if let Some(c) = &self.conversion {
            return (c.to_served)(&obj).map_err(|e| {
                faros_core::status::Status::internal(format!(
                    "converting {} to {}: {e}",
                    self.resource,
                    self.api_version()
                ))
            });
        }
        let Some(versions) = &self.schema_versions else {
            return Ok(obj);
        };
        let own = self.api_version();
        let stored = obj
            .get("apiVersion")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        if stored != own {
            let (group, version) = stored.rsplit_once('/').unwrap_or(("", stored));
            if group != self.group || !versions.iter().any(|v| v == version) {
                return Err(faros_core::status::Status::failure(
                    500,
                    "",
                    format!("request to convert CR from an invalid group/version: {stored}"),
                ));
            }
        }
        let mut obj = obj;
        if let Some(map) = obj.as_object_mut() {
            map.insert("apiVersion".into(), own.into());
        }
        self.schema.prune(&mut obj);
        self.schema.apply_defaults(&mut obj);
        Ok(obj)
    }

    /// Whether [`ResourceDef::served`] changes stored objects (a list must then parse each).
    pub fn converts_on_read(&self) -> bool {
        self.conversion.is_some() || self.schema_versions.is_some()
    }

    /// A request body of this version as it is stored.
    pub fn stored(&self, obj: serde_json::Value) -> Result<serde_json::Value, faros_core::status::Status> {
        match &self.conversion {
            None => Ok(obj),
            Some(c) => (c.to_storage)(&obj).map_err(|e| {
                faros_core::status::Status::bad_request(format!(
                    "converting {} from {}: {e}",
                    self.resource,
                    self.api_version()
                ))
            }),
        }
    }

    /// The verbs advertised in discovery: a terminating logical cluster's resources take
    /// everything but create.
    pub fn verbs(&self) -> Vec<&'static str> {
        if self.create_only {
            return vec![Verb::Create.as_str()];
        }
        let order: &[Verb] = match self.typed_builtin() {
            true => &ALL_VERBS,
            false => &CUSTOM_RESOURCE_VERBS,
        };
        order
            .iter()
            .filter(|v| !(self.terminating && **v == Verb::Create))
            .map(|v| v.as_str())
            .collect()
    }
}

/// The same verbs in the order kube's custom resource handler lists them (kcp's own kinds and
/// bound APIs are custom resources there).
const CUSTOM_RESOURCE_VERBS: [Verb; 8] = [
    Verb::Delete,
    Verb::DeleteCollection,
    Verb::Get,
    Verb::List,
    Verb::Patch,
    Verb::Create,
    Verb::Update,
    Verb::Watch,
];

/// The verbs of an ordinary resource, in discovery's (alphabetical) order.
pub const ALL_VERBS: [Verb; 8] = [
    Verb::Create,
    Verb::Delete,
    Verb::DeleteCollection,
    Verb::Get,
    Verb::List,
    Verb::Patch,
    Verb::Update,
    Verb::Watch,
];

/// The groups kcp serves natively only in `root`; every other logical cluster gets them through
/// APIBindings to root's exports of the same names (`kcp::root_apis`).
pub const ROOT_ONLY_GROUPS: [&str; 2] = ["tenancy.kcp.io", "topology.kcp.io"];
/// The logical cluster that serves [`ROOT_ONLY_GROUPS`] natively.
const ROOT: &str = "root";

/// Resources served by the server: built-ins everywhere, root's own APIs in root, plus per-cluster
/// additions.
#[derive(Debug, Default)]
pub struct Registry {
    builtin: Vec<Arc<ResourceDef>>,
    root_only: Vec<Arc<ResourceDef>>,
    per_cluster: RwLock<Clusters>,
    /// [`Registry::all_resources`]' answer until a cluster's definitions change.
    all: Mutex<Option<Arc<[Arc<ResourceDef>]>>>,
}

/// The schema-defined resources of every cluster, and by group/resource which clusters define
/// them. [`Registry::all_resources`] reads the second: virtual workspace requests ask for it, every
/// binding reconcile of every workspace changes the first, and walking every workspace's
/// definitions for each answer made a tenant's creation cost grow with the number of workspaces
/// (`bench scale`: 1.95× per item at 10 000 workspaces, a third of the server's CPU in that walk).
#[derive(Debug, Default)]
struct Clusters {
    defs: BTreeMap<String, Vec<Arc<ResourceDef>>>,
    /// (group, resource) → cluster → that cluster's first definition of it.
    by_resource: BTreeMap<(String, String), BTreeMap<String, Arc<ResourceDef>>>,
}

impl Clusters {
    fn set(&mut self, cluster: &str, defs: Vec<ResourceDef>) {
        for old in self.defs.remove(cluster).unwrap_or_default() {
            let gr = (old.group.clone(), old.resource.clone());
            if let Some(clusters) = self.by_resource.get_mut(&gr) {
                clusters.remove(cluster);
                if clusters.is_empty() {
                    self.by_resource.remove(&gr);
                }
            }
        }
        if defs.is_empty() {
            return;
        }
        let defs: Vec<Arc<ResourceDef>> = defs.into_iter().map(Arc::new).collect();
        for d in &defs {
            self.by_resource
                .entry((d.group.clone(), d.resource.clone()))
                .or_default()
                .entry(cluster.to_string())
                .or_insert_with(|| d.clone());
        }
        self.defs.insert(cluster.to_string(), defs);
    }
}

impl Registry {
    /// Definitions of a group in [`ROOT_ONLY_GROUPS`] are served in root only.
    pub fn new(builtin: Vec<ResourceDef>) -> Self {
        let (root_only, builtin): (Vec<_>, Vec<_>) = builtin
            .into_iter()
            .partition(|d| ROOT_ONLY_GROUPS.contains(&d.group.as_str()));
        Self {
            builtin: builtin.into_iter().map(Arc::new).collect(),
            root_only: root_only.into_iter().map(Arc::new).collect(),
            per_cluster: RwLock::default(),
            all: Mutex::default(),
        }
    }

    /// The natively served definitions of `cluster`.
    fn native(&self, cluster: &str) -> impl Iterator<Item = &Arc<ResourceDef>> {
        let root = if cluster == ROOT { &self.root_only[..] } else { &[] };
        self.builtin.iter().chain(root)
    }

    /// Every resource served in `cluster`, built-ins first.
    pub fn resources(&self, cluster: &str) -> Vec<Arc<ResourceDef>> {
        let mut out: Vec<Arc<ResourceDef>> = self.native(cluster).cloned().collect();
        if let Some(extra) = self.read().defs.get(cluster) {
            out.extend(extra.iter().cloned());
        }
        out
    }

    /// The resource `group/version/resource` in `cluster`, if served there.
    pub fn lookup(&self, cluster: &str, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceDef>> {
        let matches = |d: &Arc<ResourceDef>| d.group == group && d.version == version && d.resource == resource;
        if let Some(d) = self.native(cluster).find(|d| matches(d)) {
            return Some(d.clone());
        }
        self.read()
            .defs
            .get(cluster)
            .and_then(|extra| extra.iter().find(|d| matches(d)).cloned())
    }

    /// Whether any cluster serves this group-version-resource (for wildcard requests).
    pub fn lookup_any(&self, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceDef>> {
        let matches = |d: &Arc<ResourceDef>| d.group == group && d.version == version && d.resource == resource;
        if let Some(d) = self.builtin.iter().chain(&self.root_only).find(|d| matches(d)) {
            return Some(d.clone());
        }
        // Only the clusters defining the resource are searched (in cluster order, as before the
        // index): wildcard requests would otherwise walk every workspace's definitions.
        let per_cluster = self.read();
        let clusters = per_cluster
            .by_resource
            .get(&(group.to_string(), resource.to_string()))?;
        clusters
            .keys()
            .filter_map(|cluster| per_cluster.defs.get(cluster))
            .find_map(|defs| defs.iter().find(|d| matches(d)))
            .cloned()
    }

    /// The definition objects of `def`'s resource are stored as (itself unless it is converted).
    pub fn storage_def(&self, cluster: &str, def: &Arc<ResourceDef>) -> Arc<ResourceDef> {
        match &def.conversion {
            None => def.clone(),
            Some(c) => self
                .lookup(cluster, &def.group, c.storage_version, &def.resource)
                .unwrap_or_else(|| def.clone()),
        }
    }

    /// Replaces the schema-defined resources of `cluster`.
    pub fn set_cluster_resources(&self, cluster: &str, defs: Vec<ResourceDef>) {
        let mut guard = self.per_cluster.write().unwrap_or_else(|p| p.into_inner());
        guard.set(cluster, defs);
        *self.all_cached() = None;
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Clusters> {
        // A poisoned lock only means a writer panicked in `Clusters::set`, which allocates and moves
        // entries but has nothing else that can panic; both maps are still valid.
        self.per_cluster.read().unwrap_or_else(|p| p.into_inner())
    }
}

impl Registry {
    /// Every resource definition of every cluster: the natively served ones, then per
    /// group/resource (in their order) the first definition of the first cluster, in name order,
    /// that defines it.
    pub fn all_resources(&self) -> Arc<[Arc<ResourceDef>]> {
        if let Some(all) = self.all_cached().as_ref() {
            return all.clone();
        }
        // Computed and cached under the read lock: a change of definitions waits for it, then
        // drops the cache, so a stale answer is never stored after a change.
        let per_cluster = self.read();
        let mut out: Vec<Arc<ResourceDef>> = self.builtin.iter().chain(&self.root_only).cloned().collect();
        let natives = out.len();
        for ((group, resource), clusters) in &per_cluster.by_resource {
            if out[..natives]
                .iter()
                .any(|n| &n.group == group && &n.resource == resource)
            {
                continue;
            }
            if let Some(first) = clusters.values().next() {
                out.push(first.clone());
            }
        }
        let all: Arc<[Arc<ResourceDef>]> = out.into();
        *self.all_cached() = Some(all.clone());
        all
    }

    fn all_cached(&self) -> std::sync::MutexGuard<'_, Option<Arc<[Arc<ResourceDef>]>>> {
        // A poisoned lock only means a panic between taking and putting a whole answer.
        self.all.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Errors building a resource definition from a CRD-like description.
#[derive(Debug, thiserror::Error)]
pub enum DefinitionError {
    #[error("missing or invalid field {0}")]
    Missing(&'static str),
    #[error("version {version}: invalid schema: {reason}")]
    Schema { version: String, reason: String },
}

impl ResourceDef {
    /// A resource served like a CustomResource from CRD-shaped `spec` (a CRD spec or an
    /// APIResourceSchema spec) and one of its `versions[]` entries. `schema_at` is the JSON pointer of
    /// the OpenAPI schema inside the version (`/schema/openAPIV3Schema` for CRDs, `/schema` for
    /// APIResourceSchemas).
    pub fn from_crd_like(
        spec: &serde_json::Value,
        version: &serde_json::Value,
        schema_at: &str,
    ) -> Result<Self, DefinitionError> {
        use serde_json::Value;
        let s = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).map(String::from);
        let list = |v: &Value, p: &str| -> Vec<String> {
            v.pointer(p)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect())
                .unwrap_or_default()
        };
        let group = s(spec, "/group").ok_or(DefinitionError::Missing("spec.group"))?;
        let kind = s(spec, "/names/kind").ok_or(DefinitionError::Missing("spec.names.kind"))?;
        let plural = s(spec, "/names/plural").ok_or(DefinitionError::Missing("spec.names.plural"))?;
        let version_name = s(version, "/name").ok_or(DefinitionError::Missing("spec.versions[].name"))?;
        let raw_schema = version
            .pointer(schema_at)
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
        let mut schema = Schema::from_openapi_v3(&raw_schema).map_err(|e| DefinitionError::Schema {
            version: version_name.clone(),
            reason: e.to_string(),
        })?;
        // The structural schema of a CR never describes metadata beyond ObjectMeta; apiVersion/kind are implicit.
        schema
            .properties
            .insert("metadata".into(), crate::schema::object_meta_schema());
        schema.properties.entry("apiVersion".into()).or_insert_with(|| Schema {
            type_: Some("string".into()),
            ..Default::default()
        });
        schema.properties.entry("kind".into()).or_insert_with(|| Schema {
            type_: Some("string".into()),
            ..Default::default()
        });
        let printer_columns = version
            .pointer("/additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|cols| {
                cols.iter()
                    .filter(|c| c.get("name").and_then(Value::as_str) != Some("Age"))
                    .map(|c| PrinterColumn {
                        name: s(c, "/name").unwrap_or_default(),
                        type_: s(c, "/type").unwrap_or_else(|| "string".into()),
                        format: s(c, "/format").unwrap_or_default(),
                        description: s(c, "/description").unwrap_or_default(),
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0) as i32,
                        json_path: s(c, "/jsonPath").unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let selectable_fields = version
            .pointer("/selectableFields")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter_map(|x| x.get("jsonPath").and_then(Value::as_str))
                    .map(|p| p.trim_start_matches('.').to_string())
                    .collect()
            })
            .unwrap_or_default();
        Ok(Self {
            singular: s(spec, "/names/singular").unwrap_or_else(|| kind.to_lowercase()),
            list_kind: s(spec, "/names/listKind").unwrap_or_else(|| format!("{kind}List")),
            namespaced: s(spec, "/scope").as_deref() != Some("Cluster"),
            short_names: list(spec, "/names/shortNames"),
            categories: list(spec, "/names/categories"),
            status_subresource: version.pointer("/subresources/status").is_some(),
            generation: true,
            strategic_merge: false,
            create_only: false,
            selectable_fields,
            printer_columns,
            schema: Arc::new(schema),
            conversion: None,
            terminating: false,
            storage_version_hash: None,
            schema_versions: None,
            group,
            version: version_name,
            resource: plural,
            kind,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Registry, ResourceDef};

    fn def(group: &str, resource: &str, version: &str) -> ResourceDef {
        let kind = format!("{resource}-kind");
        let spec = json!({"group": group, "scope": "Namespaced", "names": {"plural": resource, "kind": kind}});
        let version = json!({"name": version, "schema": {"openAPIV3Schema": {"type": "object"}}});
        ResourceDef::from_crd_like(&spec, &version, "/schema").unwrap()
    }

    fn names(registry: &Registry) -> Vec<String> {
        registry
            .all_resources()
            .iter()
            .map(|d| format!("{}/{}/{}", d.group, d.version, d.resource))
            .collect()
    }

    /// Natives first, then each group/resource once (in their order), from the first cluster in name
    /// order that defines it; a change of any cluster's definitions shows in the next answer (it is
    /// cached), and a cluster's removed definitions leave no trace.
    #[test]
    fn all_resources_dedups_and_follows_changes() {
        let registry = Registry::new(vec![def("", "configmaps", "v1")]);
        assert_eq!(names(&registry), ["/v1/configmaps"]);
        registry.set_cluster_resources("b", vec![def("x.io", "widgets", "v2"), def("", "configmaps", "v9")]);
        registry.set_cluster_resources("a", vec![def("x.io", "widgets", "v1")]);
        assert_eq!(names(&registry), ["/v1/configmaps", "x.io/v1/widgets"]);
        assert_eq!(
            names(&registry),
            ["/v1/configmaps", "x.io/v1/widgets"],
            "the cached answer"
        );
        registry.set_cluster_resources("a", vec![]);
        assert_eq!(names(&registry), ["/v1/configmaps", "x.io/v2/widgets"]);
        registry.set_cluster_resources("c", vec![def("y.io", "gadgets", "v1")]);
        assert_eq!(
            names(&registry),
            ["/v1/configmaps", "x.io/v2/widgets", "y.io/v1/gadgets"]
        );
        registry.set_cluster_resources("b", vec![def("z.io", "things", "v1")]);
        assert_eq!(
            names(&registry),
            ["/v1/configmaps", "y.io/v1/gadgets", "z.io/v1/things"]
        );
        registry.set_cluster_resources("c", vec![]);
        registry.set_cluster_resources("b", vec![]);
        assert_eq!(names(&registry), ["/v1/configmaps"]);
    }

    /// A wildcard lookup finds a version any cluster serves (natives first, then clusters in name
    /// order), whichever of a cluster's definitions of the resource it is, and forgets removed ones.
    #[test]
    fn lookup_any_finds_any_clusters_version() {
        let registry = Registry::new(vec![def("", "configmaps", "v1")]);
        registry.set_cluster_resources("b", vec![def("x.io", "widgets", "v1"), def("x.io", "widgets", "v2")]);
        registry.set_cluster_resources("a", vec![def("y.io", "gadgets", "v1"), def("x.io", "widgets", "v2")]);
        let found = |g: &str, v: &str, r: &str| {
            registry
                .lookup_any(g, v, r)
                .map(|d| format!("{}/{}", d.version, d.resource))
        };
        let cases = [
            (("", "v1", "configmaps"), Some("v1/configmaps")),
            (("x.io", "v1", "widgets"), Some("v1/widgets")),
            (("x.io", "v2", "widgets"), Some("v2/widgets")),
            (("y.io", "v1", "gadgets"), Some("v1/gadgets")),
            (("x.io", "v3", "widgets"), None),
            (("z.io", "v1", "widgets"), None),
        ];
        for ((g, v, r), want) in cases {
            assert_eq!(found(g, v, r).as_deref(), want, "{g}/{v}/{r}");
        }
        registry.set_cluster_resources("b", vec![]);
        assert_eq!(found("x.io", "v1", "widgets"), None, "b's v1 is gone");
        assert_eq!(
            found("x.io", "v2", "widgets").as_deref(),
            Some("v2/widgets"),
            "a still serves v2"
        );
        registry.set_cluster_resources("a", vec![]);
        assert_eq!(found("y.io", "v1", "gadgets"), None);
    }

    #[test]
    fn discovery_verbs_per_state() {
        let spec = json!({"group": "example.io", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"}});
        let version = json!({"name": "v1", "schema": {"openAPIV3Schema": {"type": "object"}}});
        // A custom resource's verbs in kube's custom resource handler's order.
        let all = vec![
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "create",
            "update",
            "watch",
        ];
        let no_create: Vec<&str> = all.iter().copied().filter(|v| *v != "create").collect();
        let cases: [(bool, bool, Vec<&str>); 4] = [
            (false, false, all.clone()),
            (false, true, no_create),
            (true, false, vec!["create"]),
            (true, true, vec!["create"]),
        ];
        for (create_only, terminating, want) in cases {
            let mut def = ResourceDef::from_crd_like(&spec, &version, "/schema").unwrap();
            def.create_only = create_only;
            def.terminating = terminating;
            assert_eq!(
                def.verbs(),
                want,
                "create_only {create_only}, terminating {terminating}"
            );
        }
    }
}
