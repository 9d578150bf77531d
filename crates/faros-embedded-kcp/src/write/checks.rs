//! The checks and defaults of the write pipeline before an object is stored: unknown-field policy,
//! pruning, defaults and schema validation; the namespace check; kcp admission; the cluster
//! annotation. Each returns a Kubernetes Status on refusal and writes nothing.

use faros_core::status::Status;
use serde_json::Value;

use super::{FieldValidation, Writer, store_status};
use crate::kcp::admission::Operation;
use crate::objects::meta;
use crate::registry::ResourceDef;
use crate::store::ObjectKey;

/// Unknown-field policy, pruning, defaulting and schema validation. Returns warnings.
pub fn prune_and_validate(w: &Writer<'_>, def: &ResourceDef, obj: &mut Value) -> Result<Vec<String>, Status> {
    let mut warnings = Vec::new();
    let unknown = def.schema.unknown_fields(obj);
    if !unknown.is_empty() {
        match w.field_validation.clone()? {
            FieldValidation::Strict => {
                let list = unknown
                    .iter()
                    .map(|f| format!("unknown field {:?}", f.trim_start_matches('.')))
                    .collect::<Vec<_>>();
                // A typed built-in's decoder names the kind and version it was decoding into.
                let decoding = match def.typed_builtin() {
                    true => format!(
                        "{kind} in version {v:?} cannot be handled as a {kind}: ",
                        kind = def.kind,
                        v = def.version
                    ),
                    false => String::new(),
                };
                return Err(Status::bad_request(format!(
                    "{decoding}strict decoding error: {}",
                    list.join(", ")
                )));
            }
            FieldValidation::Warn => {
                warnings.extend(
                    unknown
                        .iter()
                        .map(|f| format!("unknown field {:?}", f.trim_start_matches('.'))),
                );
            }
            FieldValidation::Ignore => {}
        }
        def.schema.prune(obj);
    }
    def.schema.apply_defaults(obj);
    let mut causes = def.schema.validate(obj);
    causes.extend(crate::kcp::crd_rules::rule_causes(
        &def.group,
        &def.resource,
        obj,
        &causes,
    ));
    if !causes.is_empty() {
        let name = meta::name(obj).unwrap_or_default().to_string();
        return Err(Status::invalid(&def.group, &def.kind, &name, causes));
    }
    Ok(warnings)
}

/// kcp admission for the writer's user and cluster.
pub fn kcp_admit(
    w: &Writer<'_>,
    def: &ResourceDef,
    operation: Operation,
    old: Option<&Value>,
    subresource: Option<&str>,
    obj: &mut Value,
) -> Result<(), Status> {
    let req = crate::kcp::admission::Request {
        operation,
        user: w.user,
        cluster: w.cluster,
        def,
        old,
        subresource,
    };
    crate::kcp::admission::admit(w.state, &req, obj)
}

/// The cluster annotation kcp derives from the storage key.
pub fn stamp_cluster(obj: &mut Value, cluster: &str) {
    if let Some(a) = meta::annotations_mut(obj) {
        a.insert(meta::CLUSTER_ANNOTATION.into(), Value::String(cluster.into()));
    }
}

/// Namespaced creates need an existing, non-terminating namespace.
pub fn check_namespace(w: &Writer<'_>, def: &ResourceDef, ns: &str, name: &str) -> Result<(), Status> {
    let key = ObjectKey {
        group: String::new(),
        resource: "namespaces".into(),
        cluster: w.cluster.to_string(),
        namespace: String::new(),
        name: ns.into(),
    };
    /// What the check reads of the namespace (every create in it reads it).
    #[derive(serde::Deserialize)]
    struct Namespace {
        #[serde(default)]
        metadata: Deleting,
    }
    #[derive(Default, serde::Deserialize)]
    struct Deleting {
        #[serde(default, rename = "deletionTimestamp")]
        deletion_timestamp: Option<serde::de::IgnoredAny>,
    }
    let found = w
        .state
        .store
        .get_as::<Namespace>(&key)
        .map_err(|e| store_status(e, def, name))?;
    match found {
        None => Err(Status::not_found("", "namespaces", ns)),
        Some(n) if n.metadata.deletion_timestamp.is_some() => Err(Status::forbidden(format!(
            "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
            faros_core::status::qualified(&def.group, &def.resource)
        ))),
        Some(_) => Ok(()),
    }
}
