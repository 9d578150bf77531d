//! Server-side apply (`application/apply-patch+yaml`).
//!
//! The applied configuration is merged into the live object (maps recursively; lists by their
//! schema: atomic lists replaced, set lists united by value, associative lists merged item by
//! item by key). The applier then owns exactly the fields of its configuration. Fields it
//! applied before and omits now are removed unless another manager owns them (then they are
//! only released). Changing a field another manager owns is a conflict, refused with 409 unless
//! `force`, which takes the field from that manager; setting a field to the value it already
//! has shares ownership instead.
//!
//! Status is owned separately, as in Kubernetes: an apply through `/status` sees only `.status`
//! of the configuration and records its entry with `subresource: status`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use faros_core::status::{Status, StatusCause, StatusDetails};

use super::fieldpath::{FieldSet, PathElement, path_string};
use super::managed_fields::{
    ManagedFieldsEntry, Node, Operation, Shape, compare, decode_managed_fields, describe_manager, field_set,
    managed_fields_of, set_managed_fields, shape, strip_ignored, without_managed_fields,
};
use crate::schema::Schema;

/// One server-side apply request.
#[derive(Clone, Copy, Debug)]
pub struct ApplyOptions<'a> {
    /// `?fieldManager=` (required for apply; the HTTP layer rejects an empty one).
    pub manager: &'a str,
    /// `?force=true`: take conflicting fields from their owners instead of failing.
    pub force: bool,
    /// The full object schema of the resource.
    pub schema: &'a Schema,
    /// `Some("status")` for `.../status`. For the main resource of a kind *with* a status
    /// subresource the caller removes `.status` from the configuration first, as the apiserver
    /// ignores it there.
    pub subresource: Option<&'a str>,
    /// The request's `group/version` (`v1` for core); the configuration's `apiVersion` must match.
    pub api_version: &'a str,
    /// RFC 3339 time recorded in the applier's managedFields entry.
    pub now: &'a str,
}

/// A field another manager owns and the apply would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    pub manager: String,
    pub operation: Operation,
    /// The owner entry's API version (part of an `Update` owner's identity).
    pub api_version: String,
    pub subresource: Option<String>,
    /// The field, printed like the apiserver does: `.spec.x`, `.spec.items[name="a"].x`.
    pub field: String,
}

impl Conflict {
    /// The owner as apiserver messages name it (`"m"`, `"m" using v1`, ...).
    pub fn describe_manager(&self) -> String {
        describe_manager(
            &self.manager,
            self.operation,
            &self.api_version,
            self.subresource.as_deref(),
        )
    }
}

/// Why an apply was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// Fields owned by other managers would change (409 unless forced).
    #[error("{}", conflict_message(.0))]
    Conflicts(Vec<Conflict>),
    /// The request is malformed: wrong `apiVersion`, `metadata.managedFields` set, not an object.
    #[error("{0}")]
    BadRequest(String),
    /// The configuration does not fit the schema's list semantics (an associative-list item
    /// without its key, duplicate items). kube-apiserver answers these with 500.
    #[error("{0}")]
    Invalid(String),
}

#[cfg(test)]
impl ApplyError {
    /// The Status to answer with.
    pub fn to_status(&self) -> Status {
        match self {
            ApplyError::Conflicts(c) => conflict_status(c),
            ApplyError::BadRequest(m) => Status::bad_request(m.clone()),
            ApplyError::Invalid(m) => Status::internal(m.clone()),
        }
    }
}

/// kube-apiserver's message for apply conflicts: one conflict on one line, several grouped by
/// manager with one `- <field>` line each.
fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            only.describe_manager(),
            only.field
        );
    }
    let mut lines: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    // `server_side_apply` returns conflicts grouped by manager; sort anyway for other callers.
    let mut sorted: Vec<&Conflict> = conflicts.iter().collect();
    sorted.sort_by_key(|c| {
        (
            c.manager.clone(),
            c.operation,
            c.api_version.clone(),
            c.subresource.clone(),
        )
    });
    for c in sorted {
        let who = c.describe_manager();
        if current.as_ref() != Some(&who) {
            lines.push(format!("conflicts with {who}:"));
            current = Some(who);
        }
        lines.push(format!("- {}", c.field));
    }
    format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
}

/// The 409 kube-apiserver returns for apply conflicts: reason `Conflict`, one
/// `FieldManagerConflict` cause per field, and (its `NewApplyConflict`) no object in the details.
pub fn conflict_status(conflicts: &[Conflict]) -> Status {
    let causes = conflicts
        .iter()
        .map(|c| StatusCause {
            reason: "FieldManagerConflict".into(),
            message: format!("conflict with {}", c.describe_manager()),
            field: c.field.clone(),
        })
        .collect();
    Status::conflict_message(conflict_message(conflicts)).with_details(StatusDetails {
        causes,
        ..Default::default()
    })
}

/// Apply `applied` (the request body) to `live` (None: the object does not exist yet) and
/// return the object to store, its `metadata.managedFields` updated.
pub fn server_side_apply(live: Option<&Value>, applied: &Value, opts: &ApplyOptions<'_>) -> Result<Value, ApplyError> {
    let Some(applied_obj) = applied.as_object() else {
        return Err(ApplyError::BadRequest(
            "the apply configuration must be an object".into(),
        ));
    };
    let version = applied_obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if version != opts.api_version {
        return Err(ApplyError::BadRequest(format!(
            "Incorrect version specified in apply patch. Specified patch version: {version}, expected: {}",
            opts.api_version
        )));
    }
    if managed_fields_of(applied).is_some_and(|v| !v.is_null()) {
        return Err(ApplyError::BadRequest("metadata.managedFields must be nil".into()));
    }
    let status_only = opts.subresource == Some("status");
    let config = if status_only {
        status_part(applied_obj)
    } else {
        applied.clone()
    };

    let live_obj = live.map_or_else(|| Value::Object(Map::new()), without_managed_fields);
    // Unreadable stored ownership is dropped rather than failing every later apply.
    let mut entries = live
        .and_then(managed_fields_of)
        .and_then(|v| decode_managed_fields(v).ok())
        .unwrap_or_default();

    let mut applied_set = strip_ignored(&field_set(&config, opts.schema).map_err(|e| invalid(applied_obj, &e))?);
    if status_only {
        applied_set = applied_set.restricted_to(&[PathElement::Field("status".into())]);
    }
    let root = Node::root(opts.schema);
    let mut new_obj = merge(Some(&live_obj), &config, root, &mut Vec::new()).map_err(|e| invalid(applied_obj, &e))?;

    let mine = entries
        .iter()
        .position(|e| e.is(opts.manager, Operation::Apply, opts.api_version, opts.subresource));
    let last_set = mine.map(|i| entries[i].fields.clone()).unwrap_or_default();
    let owned_elsewhere = entries
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != mine)
        .fold(applied_set.clone(), |acc, (_, e)| acc.union(&e.fields));
    prune(&mut new_obj, &last_set.difference(&applied_set), &owned_elsewhere, root);

    let c = compare(&live_obj, &new_obj, opts.schema);
    let changed = c.added.union(&c.modified);
    let conflicts = find_conflicts(&entries, mine, &changed);
    if !conflicts.is_empty() && !opts.force {
        return Err(ApplyError::Conflicts(conflicts));
    }
    for (i, e) in entries.iter_mut().enumerate() {
        if Some(i) != mine {
            e.fields = e.fields.difference(&changed).difference(&c.removed);
        }
    }

    let object_changed = new_obj != live_obj;
    match mine {
        Some(i) => {
            let e = &mut entries[i];
            e.fields = applied_set;
            e.api_version = opts.api_version.to_string();
            if object_changed || e.time.is_none() {
                e.time = Some(opts.now.to_string());
            }
        }
        None => entries.push(ManagedFieldsEntry {
            manager: opts.manager.to_string(),
            operation: Operation::Apply,
            api_version: opts.api_version.to_string(),
            time: Some(opts.now.to_string()),
            fields: applied_set,
            subresource: opts.subresource.map(str::to_string),
        }),
    }
    set_managed_fields(&mut new_obj, &entries);
    Ok(new_obj)
}

/// The part of a configuration an apply through `/status` may touch: identity and `.status`.
fn status_part(applied: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    for key in ["apiVersion", "kind"] {
        if let Some(v) = applied.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    if let Some(meta) = applied.get("metadata").and_then(Value::as_object) {
        let identity: Map<String, Value> = ["name", "namespace"]
            .iter()
            .filter_map(|k| meta.get(*k).map(|v| ((*k).to_string(), v.clone())))
            .collect();
        out.insert("metadata".into(), Value::Object(identity));
    }
    if let Some(status) = applied.get("status") {
        out.insert("status".into(), status.clone());
    }
    Value::Object(out)
}

/// kube-apiserver's wording for a configuration that does not fit the schema.
fn invalid(applied: &Map<String, Value>, err: &impl std::fmt::Display) -> ApplyError {
    let meta = applied.get("metadata");
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    let name = text(meta.and_then(|m| m.get("name")));
    let namespaced = match text(meta.and_then(|m| m.get("namespace"))) {
        ns if ns.is_empty() => name,
        ns => format!("{ns}/{name}"),
    };
    let api_version = text(applied.get("apiVersion"));
    let gv = if api_version.contains('/') {
        api_version
    } else {
        format!("/{api_version}")
    };
    let kind = text(applied.get("kind"));
    ApplyError::Invalid(format!(
        "failed to create typed patch object ({namespaced}; {gv}, Kind={kind}): {err}"
    ))
}

/// Fields of other managers among `changed`, grouped by manager in a stable order.
fn find_conflicts(entries: &[ManagedFieldsEntry], mine: Option<usize>, changed: &FieldSet) -> Vec<Conflict> {
    let mut owners: Vec<&ManagedFieldsEntry> = entries
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != mine)
        .map(|(_, e)| e)
        .collect();
    owners.sort_by_key(|e| {
        (
            e.manager.clone(),
            e.operation,
            e.api_version.clone(),
            e.subresource.clone(),
        )
    });
    let mut out = Vec::new();
    for e in owners {
        for path in e.fields.intersection(changed).paths() {
            out.push(Conflict {
                manager: e.manager.clone(),
                operation: e.operation,
                api_version: e.api_version.clone(),
                subresource: e.subresource.clone(),
                field: path_string(&path),
            });
        }
    }
    out
}

/// Merge `config` into `live` at `node`.
fn merge(
    live: Option<&Value>,
    config: &Value,
    node: Node<'_>,
    path: &mut Vec<PathElement>,
) -> Result<Value, MergeError> {
    let Some(live) = live else {
        return Ok(config.clone());
    };
    let config_shape = shape(config, node, true).map_err(|message| MergeError {
        path: path_string(path),
        message,
    })?;
    // A malformed stored list is replaced whole (not strict).
    let live_shape = shape(live, node, false).map_err(|message| MergeError {
        path: path_string(path),
        message,
    })?;
    match (live_shape, config_shape) {
        (Shape::Map(lm), Shape::Map(cm)) => {
            let mut out = lm.clone();
            for (k, cv) in cm {
                path.push(PathElement::Field(k.clone()));
                let merged = merge(lm.get(k), cv, node.field(k), path)?;
                path.pop();
                // Keeps the key's position when it exists (serde_json preserve_order).
                out.insert(k.clone(), merged);
            }
            Ok(Value::Object(out))
        }
        (Shape::List(li), Shape::List(ci)) => merge_lists(&li, &ci, node.items(), path),
        _ => Ok(config.clone()),
    }
}

/// Merge two granular lists. Items of the configuration come in its order, merged with the
/// live item of the same key; live-only items stay right after the live item that preceded
/// them (or first, when none did).
fn merge_lists(
    live: &[(PathElement, &Value)],
    config: &[(PathElement, &Value)],
    item_node: Node<'_>,
    path: &mut Vec<PathElement>,
) -> Result<Value, MergeError> {
    let in_config: BTreeSet<&PathElement> = config.iter().map(|(pe, _)| pe).collect();
    let live_items: BTreeMap<&PathElement, &Value> = live.iter().map(|(pe, v)| (pe, *v)).collect();
    // Live-only items by the shared item they follow (None: before any shared item).
    let mut following: BTreeMap<Option<&PathElement>, Vec<&Value>> = BTreeMap::new();
    let mut anchor: Option<&PathElement> = None;
    for (pe, v) in live {
        if in_config.contains(pe) {
            anchor = Some(pe);
        } else {
            following.entry(anchor).or_default().push(v);
        }
    }
    let mut out: Vec<Value> = Vec::with_capacity(live.len() + config.len());
    out.extend(following.get(&None).into_iter().flatten().map(|v| (*v).clone()));
    for (pe, cv) in config {
        path.push(pe.clone());
        out.push(merge(live_items.get(pe).copied(), cv, item_node, path)?);
        path.pop();
        out.extend(following.get(&Some(pe)).into_iter().flatten().map(|v| (*v).clone()));
    }
    Ok(Value::Array(out))
}

/// A configuration that does not fit its schema, with the path where it does not.
#[derive(Debug)]
struct MergeError {
    path: String,
    message: String,
}

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Remove from `v` the members of `remove`, except where `keep` owns the field or anything
/// below it; there only the unkept parts below are removed.
fn prune(v: &mut Value, remove: &FieldSet, keep: &FieldSet, node: Node<'_>) {
    let nothing = FieldSet::new();
    let drop_whole = |pe: &PathElement| remove.has_member(pe) && !keep.owns_any_at(pe);
    // Leaves (scalars, atomic maps and lists) are removed whole by their parent or not at all.
    let elements: Vec<PathElement> = match shape(v, node, false) {
        Ok(s @ (Shape::Map(_) | Shape::List(_))) => s.children().into_iter().map(|(pe, _)| pe).collect(),
        _ => return,
    };
    match v {
        Value::Object(m) => {
            for pe in elements {
                let PathElement::Field(k) = &pe else { continue };
                if drop_whole(&pe) {
                    m.shift_remove(k);
                } else if let (Some(sub), Some(child)) = (remove.child(&pe), m.get_mut(k)) {
                    prune(child, sub, keep.child(&pe).unwrap_or(&nothing), node.field(k));
                }
            }
        }
        Value::Array(items) => {
            let mut kept = Vec::with_capacity(items.len());
            for (pe, mut item) in elements.into_iter().zip(std::mem::take(items)) {
                if drop_whole(&pe) {
                    continue;
                }
                if let Some(sub) = remove.child(&pe) {
                    prune(&mut item, sub, keep.child(&pe).unwrap_or(&nothing), node.items());
                }
                kept.push(item);
            }
            *items = kept;
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::managed_fields::update_managed_fields;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    const V: &str = "example.io/v1";
    const T0: &str = "2026-01-01T00:00:00Z";
    const T1: &str = "2026-01-01T00:01:00Z";
    const T2: &str = "2026-01-01T00:02:00Z";

    fn schema() -> Schema {
        Schema::from_openapi_v3(&json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {"type": "object", "properties": {
                    "x": {"type": "string"},
                    "y": {"type": "string"},
                    "replicas": {"type": "integer"},
                    "items": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "properties": {
                            "name": {"type": "string"}, "x": {"type": "string"}, "y": {"type": "string"}
                        }}
                    },
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["port", "protocol"],
                        "items": {"type": "object", "properties": {
                            "port": {"type": "integer"},
                            "protocol": {"type": "string", "default": "TCP"},
                            "name": {"type": "string"}
                        }}
                    },
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "selector": {
                        "type": "object",
                        "x-kubernetes-map-type": "atomic",
                        "additionalProperties": {"type": "string"}
                    }
                }},
                "status": {"type": "object", "properties": {
                    "phase": {"type": "string"}, "ready": {"type": "boolean"}
                }}
            }
        }))
        .unwrap()
    }

    /// An apply configuration for widget `w` with the given spec.
    fn cfg(spec: Value) -> Value {
        json!({"apiVersion": V, "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
    }

    fn apply_as(
        live: Option<&Value>,
        config: &Value,
        manager: &str,
        force: bool,
        now: &str,
    ) -> Result<Value, ApplyError> {
        let s = schema();
        let opts = ApplyOptions {
            manager,
            force,
            schema: &s,
            subresource: None,
            api_version: V,
            now,
        };
        server_side_apply(live, config, &opts)
    }

    fn apply(live: Option<&Value>, config: &Value, manager: &str, now: &str) -> Value {
        apply_as(live, config, manager, false, now).unwrap()
    }

    fn entry(manager: &str, operation: &str, time: &str, fields: Value) -> Value {
        json!({"manager": manager, "operation": operation, "apiVersion": V, "time": time,
               "fieldsType": "FieldsV1", "fieldsV1": fields})
    }

    /// `obj` with `metadata.managedFields` replaced by `entries`.
    fn with_mf(mut obj: Value, entries: Vec<Value>) -> Value {
        obj["metadata"]["managedFields"] = Value::Array(entries);
        obj
    }

    fn conflicts(r: Result<Value, ApplyError>) -> Vec<(String, String)> {
        match r {
            Err(ApplyError::Conflicts(c)) => c.into_iter().map(|c| (c.describe_manager(), c.field)).collect(),
            other => panic!("expected conflicts, got {other:?}"),
        }
    }

    #[test]
    fn create_via_apply_owns_exactly_the_applied_fields() {
        let config = json!({
            "apiVersion": V, "kind": "Widget",
            "metadata": {"name": "w", "namespace": "ns", "labels": {"app": "a"}},
            "spec": {"x": "1", "items": [{"name": "a", "x": "1"}], "tags": ["t1"], "selector": {"k": "v"}}
        });
        let got = apply(None, &config, "alice", T0);
        let want = with_mf(
            config.clone(),
            vec![entry(
                "alice",
                "Apply",
                T0,
                json!({
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {
                        "f:items": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:x": {}}},
                        "f:selector": {},
                        "f:tags": {"v:\"t1\"": {}},
                        "f:x": {}
                    }
                }),
            )],
        );
        assert_eq!(got, want);
    }

    #[test]
    fn managed_fields_wire_format_is_exact() {
        let got = apply(None, &cfg(json!({"y": "2", "x": "1"})), "alice", T0);
        assert_eq!(
            got.to_string(),
            concat!(
                r#"{"apiVersion":"example.io/v1","kind":"Widget","metadata":{"name":"w","managedFields":"#,
                r#"[{"manager":"alice","operation":"Apply","apiVersion":"example.io/v1","time":"2026-01-01T00:00:00Z","#,
                r#""fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:x":{},"f:y":{}}}}]},"spec":{"y":"2","x":"1"}}"#
            )
        );
        // Through /status the entry names its subresource (last key, as Kubernetes writes it).
        let s = schema();
        let opts = ApplyOptions {
            manager: "ctl",
            force: false,
            schema: &s,
            subresource: Some("status"),
            api_version: V,
            now: T1,
        };
        let status_cfg =
            json!({"apiVersion": V, "kind": "Widget", "metadata": {"name": "w"}, "status": {"phase": "Ready"}});
        let got = server_side_apply(Some(&got), &status_cfg, &opts).unwrap();
        assert_eq!(
            got["metadata"]["managedFields"][1].to_string(),
            concat!(
                r#"{"manager":"ctl","operation":"Apply","apiVersion":"example.io/v1","time":"2026-01-01T00:01:00Z","#,
                r#""fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:phase":{}}},"subresource":"status"}"#
            )
        );
    }

    #[test]
    fn reapplying_the_same_configuration_changes_nothing() {
        let config = cfg(json!({"x": "1", "items": [{"name": "a"}], "tags": ["t"]}));
        let first = apply(None, &config, "alice", T0);
        let second = apply(Some(&first), &config, "alice", T1);
        assert_eq!(second, first);
        assert_eq!(second["metadata"]["managedFields"][0]["time"], T0);
    }

    #[test]
    fn equal_values_are_shared_without_conflict() {
        let live = apply(None, &cfg(json!({"x": "1"})), "alice", T0);
        let got = apply(Some(&live), &cfg(json!({"x": "1", "y": "2"})), "bob", T1);
        let want = with_mf(
            cfg(json!({"x": "1", "y": "2"})),
            vec![
                entry("alice", "Apply", T0, json!({"f:spec": {"f:x": {}}})),
                entry("bob", "Apply", T1, json!({"f:spec": {"f:x": {}, "f:y": {}}})),
            ],
        );
        assert_eq!(got, want);
    }

    #[test]
    fn changing_another_managers_field_conflicts() {
        let live = apply(None, &cfg(json!({"x": "1", "y": "1"})), "alice", T0);
        let live = with_mf(
            live.clone(),
            vec![
                live["metadata"]["managedFields"][0].clone(),
                entry("carol", "Update", T1, json!({"f:spec": {"f:replicas": {}}})),
            ],
        );
        let mut live = live;
        live["spec"]["replicas"] = json!(3);

        let one = apply_as(Some(&live), &cfg(json!({"x": "2"})), "bob", false, T2);
        assert_eq!(
            conflicts(one.clone()),
            vec![("\"alice\"".to_string(), ".spec.x".to_string())]
        );
        let Err(err) = one else { unreachable!() };
        let status = serde_json::to_value(err.to_status()).unwrap();
        assert_eq!(
            status,
            json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "Apply failed with 1 conflict: conflict with \"alice\": .spec.x",
                "reason": "Conflict",
                "details": {"causes": [
                    {"reason": "FieldManagerConflict", "message": "conflict with \"alice\"", "field": ".spec.x"}
                ]},
                "code": 409
            })
        );

        let three = apply_as(
            Some(&live),
            &cfg(json!({"x": "2", "y": "2", "replicas": 1})),
            "bob",
            false,
            T2,
        );
        let Err(err) = three else { panic!("expected conflicts") };
        assert_eq!(
            err.to_string(),
            "Apply failed with 3 conflicts: conflicts with \"alice\":\n- .spec.x\n- .spec.y\n\
             conflicts with \"carol\" using example.io/v1:\n- .spec.replicas"
        );
        let status = err.to_status();
        let causes: Vec<(&str, &str)> = status
            .details
            .as_ref()
            .unwrap()
            .causes
            .iter()
            .map(|c| (c.message.as_str(), c.field.as_str()))
            .collect();
        assert_eq!(
            causes,
            vec![
                ("conflict with \"alice\"", ".spec.x"),
                ("conflict with \"alice\"", ".spec.y"),
                ("conflict with \"carol\" using example.io/v1", ".spec.replicas"),
            ]
        );
    }

    #[test]
    fn force_transfers_ownership() {
        let live = apply(None, &cfg(json!({"x": "1", "y": "1"})), "alice", T0);
        let got = apply_as(Some(&live), &cfg(json!({"x": "2"})), "bob", true, T1).unwrap();
        let want = with_mf(
            cfg(json!({"x": "2", "y": "1"})),
            vec![
                entry("alice", "Apply", T0, json!({"f:spec": {"f:y": {}}})),
                entry("bob", "Apply", T1, json!({"f:spec": {"f:x": {}}})),
            ],
        );
        assert_eq!(got, want);
        // Alice no longer owns x: omitting it does not remove bob's value.
        let got = apply(Some(&got), &cfg(json!({"y": "1"})), "alice", T2);
        assert_eq!(got["spec"], json!({"x": "2", "y": "1"}));
    }

    #[test]
    fn omitted_fields_are_removed_unless_someone_else_owns_them() {
        // (second apply by alice, fields another manager holds, expected spec, expected alice set)
        let cases = [
            (
                json!({"x": "1"}),
                None,
                json!({"x": "1"}),
                json!({"f:spec": {"f:x": {}}}),
            ),
            (
                json!({"x": "1"}),
                Some("bob"),
                json!({"x": "1", "y": "2"}),
                json!({"f:spec": {"f:x": {}}}),
            ),
            (json!({}), None, json!({}), json!({"f:spec": {}})),
        ];
        for (second, other, want_spec, want_set) in cases {
            let mut live = apply(None, &cfg(json!({"x": "1", "y": "2"})), "alice", T0);
            if let Some(other) = other {
                live = apply(Some(&live), &cfg(json!({"y": "2"})), other, T1);
            }
            let got = apply(Some(&live), &cfg(second.clone()), "alice", T2);
            assert_eq!(got["spec"], want_spec, "{second}");
            let alice = got["metadata"]["managedFields"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["manager"] == "alice")
                .unwrap();
            assert_eq!(alice["fieldsV1"], want_set, "{second}");
        }
    }

    #[test]
    fn omitted_field_held_by_an_updater_is_released_not_removed() {
        let s = schema();
        let live = apply(None, &cfg(json!({"x": "1", "y": "2"})), "alice", T0);
        let mut edited = live.clone();
        edited["spec"]["y"] = json!("3");
        update_managed_fields(Some(&live), &mut edited, "kubectl-edit", &s, None, V, T1);
        assert_eq!(
            edited["metadata"]["managedFields"],
            json!([
                entry("alice", "Apply", T0, json!({"f:spec": {"f:x": {}}})),
                entry("kubectl-edit", "Update", T1, json!({"f:spec": {"f:y": {}}})),
            ])
        );
        // Alice re-applies x=1 only: nothing changes, y (now kubectl-edit's) stays.
        let got = apply(Some(&edited), &cfg(json!({"x": "1"})), "alice", T2);
        assert_eq!(got, edited);
        // Alice applying y again conflicts with the updater.
        let r = apply_as(Some(&edited), &cfg(json!({"x": "1", "y": "2"})), "alice", false, T2);
        assert_eq!(
            conflicts(r),
            vec![(
                "\"kubectl-edit\" using example.io/v1".to_string(),
                ".spec.y".to_string()
            )]
        );
    }

    #[test]
    fn associative_lists_merge_by_key() {
        let live = apply(
            None,
            &cfg(json!({"items": [{"name": "a", "x": "1"}, {"name": "b", "x": "2"}]})),
            "alice",
            T0,
        );
        let got = apply(
            Some(&live),
            &cfg(json!({"items": [{"name": "b", "y": "3"}, {"name": "c", "x": "4"}]})),
            "bob",
            T1,
        );
        assert_eq!(
            got["spec"]["items"],
            json!([{"name": "a", "x": "1"}, {"name": "b", "x": "2", "y": "3"}, {"name": "c", "x": "4"}])
        );
        assert_eq!(
            got["metadata"]["managedFields"][1]["fieldsV1"],
            json!({"f:spec": {"f:items": {
                "k:{\"name\":\"b\"}": {".": {}, "f:name": {}, "f:y": {}},
                "k:{\"name\":\"c\"}": {".": {}, "f:name": {}, "f:x": {}}
            }}})
        );
        // Alice drops b: bob still holds the item, so only alice's x goes.
        let got = apply(
            Some(&got),
            &cfg(json!({"items": [{"name": "a", "x": "1"}]})),
            "alice",
            T2,
        );
        assert_eq!(
            got["spec"]["items"],
            json!([{"name": "a", "x": "1"}, {"name": "b", "y": "3"}, {"name": "c", "x": "4"}])
        );
        // Changing a keyed item's field another manager owns conflicts at the item path.
        let r = apply_as(
            Some(&got),
            &cfg(json!({"items": [{"name": "c", "x": "5"}]})),
            "alice",
            false,
            T2,
        );
        assert_eq!(
            conflicts(r),
            vec![("\"bob\"".to_string(), ".spec.items[name=\"c\"].x".to_string())]
        );
    }

    #[test]
    fn list_keys_take_schema_defaults_and_config_order_wins() {
        let live = apply(
            None,
            &cfg(json!({"ports": [{"port": 80, "name": "http"}]})),
            "alice",
            T0,
        );
        assert_eq!(
            live["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:spec": {"f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}, "f:port": {}}}}})
        );
        let config =
            cfg(json!({"ports": [{"port": 443, "name": "https"}, {"port": 80, "protocol": "TCP", "name": "http"}]}));
        let got = apply(Some(&live), &config, "alice", T1);
        assert_eq!(
            got["spec"]["ports"],
            json!([{"port": 443, "name": "https"}, {"port": 80, "name": "http", "protocol": "TCP"}])
        );
    }

    #[test]
    fn set_lists_unite_by_value() {
        let live = apply(None, &cfg(json!({"tags": ["t1", "t2"]})), "alice", T0);
        let got = apply(Some(&live), &cfg(json!({"tags": ["t3", "t1"]})), "bob", T1);
        assert_eq!(got["spec"]["tags"], json!(["t3", "t1", "t2"]));
        assert_eq!(
            got["metadata"]["managedFields"][1]["fieldsV1"],
            json!({"f:spec": {"f:tags": {"v:\"t1\"": {}, "v:\"t3\"": {}}}})
        );
        // Alice drops t1 and t2: t1 is bob's too and stays.
        let got = apply(Some(&got), &cfg(json!({"tags": []})), "alice", T2);
        assert_eq!(got["spec"]["tags"], json!(["t3", "t1"]));
        assert_eq!(got["metadata"]["managedFields"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn atomic_lists_and_maps_are_owned_whole() {
        let live = apply(
            None,
            &cfg(json!({"args": ["a", "b"], "selector": {"k": "v"}})),
            "alice",
            T0,
        );
        let r = apply_as(
            Some(&live),
            &cfg(json!({"args": ["c"], "selector": {"k": "v", "k2": "v2"}})),
            "bob",
            false,
            T1,
        );
        assert_eq!(
            conflicts(r),
            vec![
                ("\"alice\"".to_string(), ".spec.args".to_string()),
                ("\"alice\"".to_string(), ".spec.selector".to_string())
            ]
        );
        let got = apply_as(Some(&live), &cfg(json!({"args": ["c"]})), "bob", true, T1).unwrap();
        assert_eq!(got["spec"], json!({"args": ["c"], "selector": {"k": "v"}}));
        assert_eq!(
            got["metadata"]["managedFields"],
            json!([
                entry("alice", "Apply", T0, json!({"f:spec": {"f:selector": {}}})),
                entry("bob", "Apply", T1, json!({"f:spec": {"f:args": {}}})),
            ])
        );
    }

    #[test]
    fn status_is_applied_and_owned_separately() {
        let s = schema();
        let status_opts = |now| ApplyOptions {
            manager: "alice",
            force: false,
            schema: &s,
            subresource: Some("status"),
            api_version: V,
            now,
        };
        let live = apply(None, &cfg(json!({"x": "1"})), "alice", T0);
        // Through /status only .status counts; the spec in the body is ignored.
        let mut body = cfg(json!({"x": "ignored"}));
        body["status"] = json!({"phase": "Ready"});
        let got = server_side_apply(Some(&live), &body, &status_opts(T1)).unwrap();
        assert_eq!(got["spec"], json!({"x": "1"}));
        assert_eq!(got["status"], json!({"phase": "Ready"}));
        let mut status_entry = entry("alice", "Apply", T1, json!({"f:status": {"f:phase": {}}}));
        status_entry["subresource"] = json!("status");
        assert_eq!(
            got["metadata"]["managedFields"],
            json!([
                entry("alice", "Apply", T0, json!({"f:spec": {"f:x": {}}})),
                status_entry
            ])
        );
        // The main-resource entry does not own status: re-applying the spec keeps it.
        let again = apply(Some(&got), &cfg(json!({"x": "1"})), "alice", T2);
        assert_eq!(again, got);
        // Omitting status fields in a later status apply removes them.
        let mut body = cfg(json!({}));
        body["status"] = json!({"ready": true});
        let got = server_side_apply(Some(&again), &body, &status_opts(T2)).unwrap();
        assert_eq!(got["status"], json!({"ready": true}));
    }

    #[test]
    fn malformed_requests_are_refused() {
        let s = schema();
        let opts = ApplyOptions {
            manager: "m",
            force: false,
            schema: &s,
            subresource: None,
            api_version: V,
            now: T0,
        };
        let mut with_mf = cfg(json!({}));
        with_mf["metadata"]["managedFields"] = json!([]);
        let cases = [
            (
                json!({"apiVersion": "example.io/v2", "kind": "Widget"}),
                ApplyError::BadRequest(
                    "Incorrect version specified in apply patch. Specified patch version: example.io/v2, expected: example.io/v1".into(),
                ),
            ),
            (with_mf, ApplyError::BadRequest("metadata.managedFields must be nil".into())),
            (
                cfg(json!({"items": [{"x": "1"}]})),
                ApplyError::Invalid(
                    "failed to create typed patch object (w; example.io/v1, Kind=Widget): .spec.items: element 0: \
                     associative list with keys has an element that omits key field \"name\" (and doesn't have default value)"
                        .into(),
                ),
            ),
            (
                cfg(json!({"items": [{"name": "a"}, {"name": "a"}]})),
                ApplyError::Invalid(
                    "failed to create typed patch object (w; example.io/v1, Kind=Widget): .spec.items: \
                     duplicate entries for key [name=\"a\"]"
                        .into(),
                ),
            ),
            (
                cfg(json!({"tags": ["a", "a"]})),
                ApplyError::Invalid(
                    "failed to create typed patch object (w; example.io/v1, Kind=Widget): .spec.tags: \
                     duplicate entries for key [=\"a\"]"
                        .into(),
                ),
            ),
        ];
        for (body, want) in cases {
            assert_eq!(server_side_apply(None, &body, &opts), Err(want), "{body}");
        }
        assert_eq!(
            ApplyError::Invalid("x".into()).to_status().code,
            500,
            "kube-apiserver answers typed-object errors with 500"
        );
    }
}
