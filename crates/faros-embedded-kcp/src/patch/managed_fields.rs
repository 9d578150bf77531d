//! `metadata.managedFields`: who owns which fields, and how ordinary writes change that.
//!
//! This module holds the schema-aware pieces shared with server-side apply ([`super::apply`]):
//! the field set of an object ([`field_set`]), the difference between two objects
//! ([`compare`]), the `managedFields` entry codec, and [`update_managed_fields`] for
//! create/update/patch requests (operation `Update`).
//!
//! Semantics follow Kubernetes' structured-merge-diff: objects are walked with their schema;
//! maps are granular unless `x-kubernetes-map-type: atomic`; lists are atomic unless
//! `x-kubernetes-list-type` is `set` (items owned by value) or `map` (items owned by key);
//! fields the schema does not know are treated like a granular map / atomic list.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use serde_json::{Map, Value};

use super::fieldpath::{FieldPathError, FieldSet, PathElement, path_string};
use crate::schema::{ListType, Schema, object_meta_schema};

/// Why an object or a `managedFields` list could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ManagedFieldsError {
    /// The object does not fit its schema's list semantics (missing or duplicate list keys).
    #[error("{path}: {message}")]
    Typed { path: String, message: String },
    #[error("managedFields[{index}]: {message}")]
    Entry { index: usize, message: String },
    #[error("managedFields[{index}].fieldsV1: {source}")]
    Fields { index: usize, source: FieldPathError },
}

// ---------------------------------------------------------------------------------------------
// Walking an object with its schema
// ---------------------------------------------------------------------------------------------

/// ObjectMeta's schema, used for `metadata` whenever a resource schema does not spell it out
/// (schema-defined resources usually say just `type: object`; Kubernetes always uses ObjectMeta).
static OBJECT_META: LazyLock<Schema> = LazyLock::new(object_meta_schema);

/// A position in the schema: the node's schema (None = unknown) and whether it is the root of a
/// resource (the object itself, or an `x-kubernetes-embedded-resource`), whose `metadata` is ObjectMeta.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node<'s> {
    schema: Option<&'s Schema>,
    resource_root: bool,
}

impl<'s> Node<'s> {
    pub(crate) fn root(schema: &'s Schema) -> Self {
        Self {
            schema: Some(schema),
            resource_root: true,
        }
    }

    fn of(schema: Option<&'s Schema>) -> Self {
        Self {
            schema,
            resource_root: schema.is_some_and(|s| s.embedded_resource),
        }
    }

    pub(crate) fn field(self, name: &str) -> Node<'s> {
        let child = self.schema.and_then(|s| s.field(name));
        if self.resource_root && name == "metadata" && !child.is_some_and(|m| m.properties.contains_key("labels")) {
            return Node {
                schema: Some(&OBJECT_META),
                resource_root: false,
            };
        }
        Node::of(child)
    }

    pub(crate) fn items(self) -> Node<'s> {
        Node::of(self.schema.and_then(|s| s.items.as_deref()))
    }

    /// The child node reached through `pe`.
    pub(crate) fn child(self, pe: &PathElement) -> Node<'s> {
        match pe {
            PathElement::Field(name) => self.field(name),
            _ => self.items(),
        }
    }

    /// A named property (a struct field), as opposed to a key of a map-like object.
    fn is_named(self, name: &str) -> bool {
        (self.resource_root && name == "metadata") || self.schema.is_some_and(|s| s.properties.contains_key(name))
    }

    fn map_atomic(self) -> bool {
        self.schema.is_some_and(|s| s.map_atomic)
    }

    fn list_type(self) -> ListType {
        self.schema.map(Schema::list_type).unwrap_or_default()
    }
}

/// How a value is owned and merged at its position in the schema.
pub(crate) enum Shape<'v> {
    /// Owned and replaced as a whole: scalars, atomic maps and lists.
    Leaf,
    Null,
    /// A granular map (possibly empty).
    Map(&'v Map<String, Value>),
    /// A granular (set or associative) list, with each item's path element.
    List(Vec<(PathElement, &'v Value)>),
}

impl Shape<'_> {
    /// Whether the node has parts owned separately (a non-empty granular map or list).
    fn has_children(&self) -> bool {
        match self {
            Shape::Map(m) => !m.is_empty(),
            Shape::List(items) => !items.is_empty(),
            Shape::Leaf | Shape::Null => false,
        }
    }

    /// The children and the path element that leads to each.
    pub(crate) fn children(&self) -> Vec<(PathElement, &Value)> {
        match self {
            Shape::Map(m) => m.iter().map(|(k, v)| (PathElement::Field(k.clone()), v)).collect(),
            Shape::List(items) => items.iter().map(|(pe, v)| (pe.clone(), *v)).collect(),
            Shape::Leaf | Shape::Null => Vec::new(),
        }
    }
}

/// The shape of `v` at `node`. A granular list whose items lack keys or repeat is an error when
/// `strict` (an applied configuration must be well-formed) and otherwise owned as a whole, so
/// a malformed stored object still gets managed fields.
pub(crate) fn shape<'v>(v: &'v Value, node: Node<'_>, strict: bool) -> Result<Shape<'v>, String> {
    match v {
        Value::Null => Ok(Shape::Null),
        Value::Object(m) if !node.map_atomic() => Ok(Shape::Map(m)),
        Value::Array(items) => {
            let list_type = node.list_type();
            if list_type == ListType::Atomic {
                return Ok(Shape::Leaf);
            }
            match list_elements(items, &list_type, node.items()) {
                Ok(elements) => Ok(Shape::List(elements)),
                Err(e) if strict => Err(e),
                Err(_) => Ok(Shape::Leaf),
            }
        }
        _ => Ok(Shape::Leaf),
    }
}

/// The path element of every item of a set or associative list.
fn list_elements<'v>(
    items: &'v [Value],
    list_type: &ListType,
    item_node: Node<'_>,
) -> Result<Vec<(PathElement, &'v Value)>, String> {
    let mut out: Vec<(PathElement, &Value)> = Vec::with_capacity(items.len());
    let mut seen = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let pe = match list_type {
            ListType::Map(keys) if !keys.is_empty() => {
                let obj = item
                    .as_object()
                    .ok_or_else(|| format!("element {i}: associative list with keys may not have non-map elements"))?;
                let mut key = BTreeMap::new();
                for k in keys {
                    let value = obj
                        .get(k)
                        .filter(|v| !v.is_null())
                        .or_else(|| item_node.field(k).schema.and_then(|s| s.default.as_ref()))
                        .ok_or_else(|| {
                            format!(
                                "element {i}: associative list with keys has an element that omits key field {k:?} (and doesn't have default value)"
                            )
                        })?;
                    key.insert(k.clone(), value.clone());
                }
                PathElement::key(&key)
            }
            _ => PathElement::value(item),
        };
        if !seen.insert(pe.clone()) {
            return Err(format!(
                "duplicate entries for key {}",
                path_string(std::slice::from_ref(&pe))
            ));
        }
        out.push((pe, item));
    }
    Ok(out)
}

/// The fields an object sets: every leaf, every list item, every key of a map-like object, and
/// every struct field that is null or an empty object (structured-merge-diff's `ToFieldSet`).
pub fn field_set(obj: &Value, schema: &Schema) -> Result<FieldSet, ManagedFieldsError> {
    let mut out = FieldSet::new();
    collect_fields(obj, Node::root(schema), &mut Vec::new(), &mut out)?;
    Ok(out)
}

fn collect_fields(
    v: &Value,
    node: Node<'_>,
    path: &mut Vec<PathElement>,
    out: &mut FieldSet,
) -> Result<(), ManagedFieldsError> {
    let shape = shape(v, node, true).map_err(|message| ManagedFieldsError::Typed {
        path: path_string(path),
        message,
    })?;
    match &shape {
        Shape::Leaf => out.insert(path),
        Shape::Null => {}
        Shape::Map(m) => {
            for (k, child) in m.iter() {
                path.push(PathElement::Field(k.clone()));
                let empty = child.is_null() || child.as_object().is_some_and(Map::is_empty);
                if empty || !node.is_named(k) {
                    out.insert(path);
                }
                collect_fields(child, node.field(k), path, out)?;
                path.pop();
            }
        }
        Shape::List(items) => {
            for (pe, item) in items {
                path.push(pe.clone());
                out.insert(path);
                collect_fields(item, node.items(), path, out)?;
                path.pop();
            }
        }
    }
    Ok(())
}

/// What changed between two versions of an object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Fields (and granular maps/lists/items) present only in the new object.
    pub added: FieldSet,
    /// Leaves whose value changed.
    pub modified: FieldSet,
    /// Fields (and granular maps/lists/items) present only in the old object.
    pub removed: FieldSet,
}

/// Compare two versions of an object field by field.
pub fn compare(old: &Value, new: &Value, schema: &Schema) -> Comparison {
    let mut c = Comparison::default();
    compare_at(Some(old), Some(new), Node::root(schema), &mut Vec::new(), &mut c);
    c
}

fn compare_at(l: Option<&Value>, r: Option<&Value>, node: Node<'_>, path: &mut Vec<PathElement>, c: &mut Comparison) {
    match (l, r) {
        (None, None) => {}
        (None, Some(r)) => mark_subtree(r, node, path, &mut c.added),
        (Some(l), None) => mark_subtree(l, node, path, &mut c.removed),
        (Some(l), Some(r)) => {
            // Not strict: stored objects may be malformed; such lists are compared whole.
            let (Ok(sl), Ok(sr)) = (shape(l, node, false), shape(r, node, false)) else {
                return;
            };
            if !sl.has_children() && !sr.has_children() {
                if l != r {
                    c.modified.insert(path);
                }
                return;
            }
            let compatible = matches!(
                (&sl, &sr),
                (Shape::Map(_), Shape::Map(_)) | (Shape::List(_), Shape::List(_)) | (Shape::Null, _) | (_, Shape::Null)
            );
            if !compatible {
                // The value changed kind (e.g. map to scalar): the node changed and every part
                // of the old value went away.
                c.modified.insert(path);
                mark_children(&sl, node, path, &mut c.removed);
                mark_children(&sr, node, path, &mut c.added);
                return;
            }
            let left: BTreeMap<PathElement, &Value> = sl.children().into_iter().collect();
            let right: BTreeMap<PathElement, &Value> = sr.children().into_iter().collect();
            for (pe, lv) in &left {
                path.push(pe.clone());
                compare_at(Some(lv), right.get(pe).copied(), node.child(pe), path, c);
                path.pop();
            }
            for (pe, rv) in &right {
                if !left.contains_key(pe) {
                    path.push(pe.clone());
                    compare_at(None, Some(rv), node.child(pe), path, c);
                    path.pop();
                }
            }
        }
    }
}

/// Insert `path` and every part of `v` below it.
fn mark_subtree(v: &Value, node: Node<'_>, path: &mut Vec<PathElement>, set: &mut FieldSet) {
    set.insert(path);
    if let Ok(shape) = shape(v, node, false) {
        mark_children(&shape, node, path, set);
    }
}

fn mark_children(shape: &Shape<'_>, node: Node<'_>, path: &mut Vec<PathElement>, set: &mut FieldSet) {
    for (pe, child) in shape.children() {
        path.push(pe.clone());
        mark_subtree(child, node.child(&pe), path, set);
        path.pop();
    }
}

/// Identity and server-owned fields nobody owns (the apiserver's "strip meta" filter).
const IGNORED_METADATA: &[&str] = &[
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "clusterName",
    "generation",
    "managedFields",
    "resourceVersion",
];

/// `set` without the fields that are never owned: `apiVersion`, `kind`, `metadata` itself and
/// the identity fields of `metadata`.
pub(crate) fn strip_ignored(set: &FieldSet) -> FieldSet {
    let mut out = set.clone();
    for top in ["apiVersion", "kind"] {
        out.remove_subtree(&[PathElement::Field(top.into())]);
    }
    let meta = PathElement::Field("metadata".into());
    out.remove_member(std::slice::from_ref(&meta));
    for name in IGNORED_METADATA {
        out.remove_subtree(&[meta.clone(), PathElement::Field((*name).into())]);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// managedFields entries
// ---------------------------------------------------------------------------------------------

/// `managedFields[].operation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One `metadata.managedFields` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedFieldsEntry {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    pub time: Option<String>,
    pub fields: FieldSet,
    pub subresource: Option<String>,
}

impl ManagedFieldsEntry {
    /// Whether this entry belongs to the given writer. As in Kubernetes, an entry is identified by
    /// manager, operation and subresource, and `Update` entries also by API version (an applier
    /// keeps one entry across versions).
    pub fn is(&self, manager: &str, operation: Operation, api_version: &str, subresource: Option<&str>) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.as_deref() == subresource
            && (operation == Operation::Apply || self.api_version == api_version)
    }

    fn to_json(&self) -> Value {
        // Key order as Kubernetes serialises ManagedFieldsEntry.
        let mut obj = Map::new();
        obj.insert("manager".into(), Value::String(self.manager.clone()));
        obj.insert("operation".into(), Value::String(self.operation.as_str().into()));
        obj.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        if let Some(t) = &self.time {
            obj.insert("time".into(), Value::String(t.clone()));
        }
        obj.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        obj.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if let Some(s) = &self.subresource {
            obj.insert("subresource".into(), Value::String(s.clone()));
        }
        Value::Object(obj)
    }

    fn from_json(index: usize, v: &Value) -> Result<Self, ManagedFieldsError> {
        let err = |message: &str| ManagedFieldsError::Entry {
            index,
            message: message.into(),
        };
        let obj = v.as_object().ok_or_else(|| err("must be an object"))?;
        let text = |key: &str| {
            obj.get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let operation = match text("operation").as_deref() {
            Some("Apply") => Operation::Apply,
            Some("Update") => Operation::Update,
            _ => return Err(err("operation must be Apply or Update")),
        };
        if text("fieldsType").as_deref() != Some("FieldsV1") {
            return Err(err("fieldsType must be FieldsV1"));
        }
        let fields = match obj.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::new(),
            Some(f) => FieldSet::from_fields_v1(f).map_err(|source| ManagedFieldsError::Fields { index, source })?,
        };
        Ok(Self {
            manager: text("manager").unwrap_or_default(),
            operation,
            api_version: text("apiVersion").unwrap_or_default(),
            time: text("time"),
            fields,
            subresource: text("subresource"),
        })
    }
}

/// See [`ManagedFieldsEntry::describe`].
pub fn describe_manager(manager: &str, operation: Operation, api_version: &str, subresource: Option<&str>) -> String {
    let mut out = format!("{manager:?}");
    if let Some(s) = subresource {
        out.push_str(&format!(" with subresource {s:?}"));
    }
    if operation == Operation::Update {
        out.push_str(&format!(" using {api_version}"));
    }
    out
}

/// Read `managedFields` (the JSON array).
pub fn decode_managed_fields(v: &Value) -> Result<Vec<ManagedFieldsEntry>, ManagedFieldsError> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, e)| ManagedFieldsEntry::from_json(i, e))
            .collect(),
        _ => Err(ManagedFieldsError::Entry {
            index: 0,
            message: "managedFields must be a list".into(),
        }),
    }
}

/// Write `managedFields` in Kubernetes' order (Apply before Update, then oldest first, then by
/// manager, API version, subresource), dropping entries that own nothing.
pub fn encode_managed_fields(entries: &[ManagedFieldsEntry]) -> Value {
    let mut kept: Vec<&ManagedFieldsEntry> = entries.iter().filter(|e| !e.fields.is_empty()).collect();
    kept.sort_by(|a, b| {
        a.operation
            .cmp(&b.operation)
            .then_with(|| time_seconds(&a.time).cmp(&time_seconds(&b.time)))
            .then_with(|| a.manager.cmp(&b.manager))
            .then_with(|| a.api_version.cmp(&b.api_version))
            .then_with(|| a.subresource.cmp(&b.subresource))
    });
    Value::Array(kept.into_iter().map(ManagedFieldsEntry::to_json).collect())
}

fn time_seconds(t: &Option<String>) -> i64 {
    t.as_deref()
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
        .map_or(0, |ts| ts.as_second())
}

/// The managed fields stored in an object (`metadata.managedFields`).
pub(crate) fn managed_fields_of(obj: &Value) -> Option<&Value> {
    obj.get("metadata")?.get("managedFields")
}

/// A copy of `obj` without `metadata.managedFields`, the form objects are compared and merged in.
pub(crate) fn without_managed_fields(obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.shift_remove("managedFields");
    }
    out
}

/// Runs `f` on `obj` without its `metadata.managedFields`, then puts them back where they were: the
/// form objects are compared in, without copying the object being written.
fn with_managed_fields_aside<T>(obj: &mut Value, f: impl FnOnce(&Value) -> T) -> T {
    let aside = obj.get_mut("metadata").and_then(Value::as_object_mut).and_then(|meta| {
        let at = meta.keys().position(|k| k == "managedFields")?;
        Some((at, meta.shift_remove("managedFields")?))
    });
    let out = f(obj);
    if let Some((at, fields)) = aside
        && let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.shift_insert(at, "managedFields".into(), fields);
    }
    out
}

/// Store `entries` into `obj.metadata.managedFields` (removed when nothing is owned).
pub(crate) fn set_managed_fields(obj: &mut Value, entries: &[ManagedFieldsEntry]) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let encoded = encode_managed_fields(entries);
    let empty = encoded.as_array().is_some_and(Vec::is_empty);
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    if empty {
        meta.shift_remove("managedFields");
    } else {
        meta.insert("managedFields".into(), encoded);
    }
}

/// The entries to start from for a non-apply write: the request's own `managedFields` when it
/// sends a valid non-empty list (clients may rewrite ownership), none when it sends `[]` or
/// `[{}]` (an explicit reset), else the stored object's. Writes through a subresource always
/// start from the stored object's.
fn entries_for_update(old: Option<&Value>, new: &Value, via_subresource: bool) -> Vec<ManagedFieldsEntry> {
    let live = || {
        old.and_then(managed_fields_of)
            .and_then(|v| decode_managed_fields(v).ok())
            .unwrap_or_default()
    };
    if via_subresource {
        return live();
    }
    match managed_fields_of(new) {
        Some(Value::Array(items)) if items.is_empty() => Vec::new(),
        Some(Value::Array(items)) if items.len() == 1 && items[0].as_object().is_some_and(Map::is_empty) => Vec::new(),
        Some(v) => match decode_managed_fields(v) {
            Ok(entries) if !entries.is_empty() => entries,
            _ => live(),
        },
        None => live(),
    }
}

/// Record a create, update or patch by `manager` (operation `Update`) in `new`'s managedFields.
///
/// `old` is the stored object (None on create) and `new` the object about to be stored, after
/// every other change (defaults, status reset) has been made. The manager gains the fields whose
/// value it changed or added and keeps its earlier ones; other managers lose the fields whose
/// value changed; removed fields leave every set. The manager's entry gets time `now` only when
/// it changed something.
pub fn update_managed_fields(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    schema: &Schema,
    subresource: Option<&str>,
    api_version: &str,
    now: &str,
) {
    if !new.is_object() {
        return;
    }
    let mut entries = entries_for_update(old, new, subresource.is_some());
    let old_obj = old.map_or_else(|| Value::Object(Map::new()), without_managed_fields);
    let c = with_managed_fields_aside(new, |new_obj| compare(&old_obj, new_obj, schema));
    let changed = strip_ignored(&c.added.union(&c.modified));
    for e in &mut entries {
        e.fields = e.fields.difference(&changed).difference(&c.removed);
    }
    if !changed.is_empty() {
        match entries
            .iter_mut()
            .find(|e| e.is(manager, Operation::Update, api_version, subresource))
        {
            Some(e) => {
                e.fields = e.fields.union(&changed);
                e.time = Some(now.to_string());
            }
            None => entries.push(ManagedFieldsEntry {
                manager: manager.to_string(),
                operation: Operation::Update,
                api_version: api_version.to_string(),
                time: Some(now.to_string()),
                fields: changed,
                subresource: subresource.map(str::to_string),
            }),
        }
    }
    set_managed_fields(new, &entries);
}

#[cfg(test)]
mod tests {
    use super::*;
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
                    "y": {"type": "object", "properties": {"z": {"type": "string"}}},
                    "items": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "string"}}}
                    },
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "env": {"type": "object", "additionalProperties": {
                        "type": "object", "properties": {"value": {"type": "string"}}
                    }},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }},
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
            }
        }))
        .unwrap()
    }

    fn fields_of(obj: Value) -> Value {
        field_set(&obj, &schema()).unwrap().to_fields_v1()
    }

    #[test]
    fn managed_fields_are_set_aside_and_put_back_in_place() {
        let mf = json!([{"manager": "m", "operation": "Update"}]);
        // (object, what the closure sees)
        let cases = [
            (
                json!({"metadata": {"name": "a", "managedFields": mf, "uid": "u"}, "spec": {}}),
                json!({"metadata": {"name": "a", "uid": "u"}, "spec": {}}),
            ),
            (json!({"metadata": {"name": "a"}}), json!({"metadata": {"name": "a"}})),
            (json!({"metadata": "odd"}), json!({"metadata": "odd"})),
            (json!({}), json!({})),
        ];
        for (obj, seen) in cases {
            let mut out = obj.clone();
            let got = with_managed_fields_aside(&mut out, Value::clone);
            assert_eq!(got, seen);
            // Back in its place: the same text, key order included.
            assert_eq!(
                serde_json::to_string(&out).unwrap(),
                serde_json::to_string(&obj).unwrap()
            );
        }
    }

    #[test]
    fn field_set_of_objects() {
        let cases = [
            // metadata uses ObjectMeta even though the schema says just `type: object`.
            (
                json!({"metadata": {"name": "w", "labels": {"app": "a"}, "finalizers": ["f"],
                                    "ownerReferences": [{"uid": "u1", "name": "o"}]}}),
                json!({"f:metadata": {
                    "f:finalizers": {"v:\"f\"": {}},
                    "f:labels": {"f:app": {}},
                    "f:name": {},
                    "f:ownerReferences": {"k:{\"uid\":\"u1\"}": {".": {}, "f:name": {}, "f:uid": {}}}
                }}),
            ),
            // Struct fields that are null or empty are owned themselves; non-empty ones only via children.
            (
                json!({"spec": {"x": null, "y": {}}}),
                json!({"f:spec": {"f:x": {}, "f:y": {}}}),
            ),
            (
                json!({"spec": {"y": {"z": "1"}}}),
                json!({"f:spec": {"f:y": {"f:z": {}}}}),
            ),
            // Keys of map-like objects and unknown fields are owned themselves too.
            (
                json!({"spec": {"env": {"A": {"value": "1"}}, "extra": {"k": {"deep": 1}}}}),
                json!({"f:spec": {
                    "f:env": {"f:A": {".": {}, "f:value": {}}},
                    "f:extra": {"f:k": {".": {}, "f:deep": {}}}
                }}),
            ),
            // An empty granular list owns nothing; list items own themselves.
            (json!({"spec": {"tags": []}}), json!({})),
            (
                json!({"spec": {"items": [{"name": "a"}], "tags": ["t"]}}),
                json!({"f:spec": {"f:items": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}}}, "f:tags": {"v:\"t\"": {}}}}),
            ),
        ];
        for (obj, want) in cases {
            assert_eq!(fields_of(obj.clone()), want, "{obj}");
        }
    }

    #[test]
    fn builtin_schemas_are_walked_too() {
        let Some(cm) = crate::schema::builtin_schema("", "ConfigMap") else {
            panic!("ConfigMap schema missing")
        };
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "c", "annotations": {"a": "b"}, "finalizers": ["f"]},
                         "data": {"k": "v"}});
        assert_eq!(
            strip_ignored(&field_set(&obj, &cm).unwrap()).to_fields_v1(),
            json!({"f:data": {"f:k": {}}, "f:metadata": {"f:annotations": {"f:a": {}}, "f:finalizers": {"v:\"f\"": {}}}})
        );
    }

    #[test]
    fn identity_fields_are_never_owned() {
        let obj = json!({"apiVersion": V, "kind": "W", "metadata": {
            "name": "w", "namespace": "n", "uid": "u", "resourceVersion": "1", "generation": 1,
            "creationTimestamp": "t", "managedFields": [], "labels": {"a": "b"}
        }});
        let set = strip_ignored(&field_set(&obj, &schema()).unwrap());
        assert_eq!(set.to_fields_v1(), json!({"f:metadata": {"f:labels": {"f:a": {}}}}));
    }

    #[test]
    fn compare_reports_added_modified_removed() {
        let old = json!({"spec": {"x": "1", "y": {"z": "1"}, "items": [{"name": "a", "v": "1"}, {"name": "b"}]}});
        let new = json!({"spec": {"x": "2", "items": [{"name": "a", "v": "2"}, {"name": "c"}], "tags": ["t"]}});
        let c = compare(&old, &new, &schema());
        assert_eq!(
            c.added.to_fields_v1(),
            json!({"f:spec": {"f:items": {"k:{\"name\":\"c\"}": {".": {}, "f:name": {}}}, "f:tags": {".": {}, "v:\"t\"": {}}}})
        );
        assert_eq!(
            c.modified.to_fields_v1(),
            json!({"f:spec": {"f:items": {"k:{\"name\":\"a\"}": {"f:v": {}}}, "f:x": {}}})
        );
        assert_eq!(
            c.removed.to_fields_v1(),
            json!({"f:spec": {"f:items": {"k:{\"name\":\"b\"}": {".": {}, "f:name": {}}}, "f:y": {".": {}, "f:z": {}}}})
        );
        // A value changing kind is modified, and its old parts are removed.
        let c = compare(
            &json!({"spec": {"y": {"z": "1"}}}),
            &json!({"spec": {"y": "flat"}}),
            &schema(),
        );
        assert_eq!(c.modified.to_fields_v1(), json!({"f:spec": {"f:y": {}}}));
        assert_eq!(c.removed.to_fields_v1(), json!({"f:spec": {"f:y": {"f:z": {}}}}));
        assert!(c.added.is_empty());
    }

    fn entry(manager: &str, operation: &str, time: &str, fields: Value) -> Value {
        json!({"manager": manager, "operation": operation, "apiVersion": V, "time": time,
               "fieldsType": "FieldsV1", "fieldsV1": fields})
    }

    fn obj(spec: Value, managed: Vec<Value>) -> Value {
        let mut o = json!({"apiVersion": V, "kind": "W", "metadata": {"name": "w"}, "spec": spec});
        if !managed.is_empty() {
            o["metadata"]["managedFields"] = Value::Array(managed);
        }
        o
    }

    fn update(old: Option<&Value>, mut new: Value, manager: &str, subresource: Option<&str>, now: &str) -> Value {
        update_managed_fields(old, &mut new, manager, &schema(), subresource, V, now);
        new["metadata"].get("managedFields").cloned().unwrap_or(Value::Null)
    }

    #[test]
    fn create_owns_everything_set() {
        let mut new = obj(json!({"x": "1", "items": [{"name": "a"}]}), vec![]);
        new["metadata"]["labels"] = json!({"app": "a"});
        assert_eq!(
            update(None, new, "kubectl-create", None, T0),
            json!([entry(
                "kubectl-create",
                "Update",
                T0,
                json!({
                    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {".": {}, "f:items": {".": {}, "k:{\"name\":\"a\"}": {".": {}, "f:name": {}}}, "f:x": {}}
                })
            )])
        );
    }

    #[test]
    fn updates_move_ownership() {
        let alice = entry("alice", "Apply", T0, json!({"f:spec": {"f:x": {}, "f:y": {"f:z": {}}}}));
        let live = obj(json!({"x": "1", "y": {"z": "1"}}), vec![alice.clone()]);
        let cases = [
            // bob changes x: it becomes bob's.
            (
                obj(json!({"x": "2", "y": {"z": "1"}}), vec![alice.clone()]),
                json!([
                    entry("alice", "Apply", T0, json!({"f:spec": {"f:y": {"f:z": {}}}})),
                    entry("bob", "Update", T1, json!({"f:spec": {"f:x": {}}})),
                ]),
            ),
            // bob removes y: it leaves every set, and bob gains nothing.
            (
                obj(json!({"x": "1"}), vec![alice.clone()]),
                json!([entry("alice", "Apply", T0, json!({"f:spec": {"f:x": {}}}))]),
            ),
            // A no-op write records nothing.
            (live.clone(), json!([alice.clone()])),
            // A request without managedFields keeps the stored ones.
            (obj(json!({"x": "1", "y": {"z": "1"}}), vec![]), json!([alice.clone()])),
            // A request may rewrite them ...
            (
                obj(
                    json!({"x": "1", "y": {"z": "1"}}),
                    vec![entry("carol", "Update", T0, json!({"f:spec": {"f:x": {}}}))],
                ),
                json!([entry("carol", "Update", T0, json!({"f:spec": {"f:x": {}}}))]),
            ),
            // ... and `[]` resets them: only what this write changed is recorded.
            (
                {
                    let mut o = obj(json!({"x": "1", "y": {"z": "2"}}), vec![]);
                    o["metadata"]["managedFields"] = json!([]);
                    o
                },
                json!([entry("bob", "Update", T1, json!({"f:spec": {"f:y": {"f:z": {}}}}))]),
            ),
        ];
        for (i, (new, want)) in cases.into_iter().enumerate() {
            assert_eq!(update(Some(&live), new, "bob", None, T1), want, "case {i}");
        }
    }

    #[test]
    fn repeated_updates_merge_into_one_entry_per_manager() {
        let live = obj(
            json!({"x": "1"}),
            vec![entry("bob", "Update", T0, json!({"f:spec": {"f:x": {}}}))],
        );
        let mut new = live.clone();
        new["spec"]["tags"] = json!(["t"]);
        let mf = update(Some(&live), new, "bob", None, T1);
        assert_eq!(
            mf,
            json!([entry(
                "bob",
                "Update",
                T1,
                json!({"f:spec": {"f:tags": {".": {}, "v:\"t\"": {}}, "f:x": {}}})
            )])
        );
    }

    #[test]
    fn status_writes_get_their_own_entries() {
        let alice = entry("alice", "Update", T0, json!({"f:spec": {"f:x": {}}}));
        let live = obj(json!({"x": "1"}), vec![alice.clone()]);
        let mut new = live.clone();
        new["status"] = json!({"phase": "Ready"});
        // Through /status the request's managedFields are ignored.
        new["metadata"]["managedFields"] = json!([]);
        let mut status_entry = entry("alice", "Update", T1, json!({"f:status": {".": {}, "f:phase": {}}}));
        status_entry["subresource"] = json!("status");
        assert_eq!(
            update(Some(&live), new, "alice", Some("status"), T1),
            json!([alice, status_entry])
        );
    }

    #[test]
    fn entries_sort_like_kubernetes() {
        let mut sub = entry("a", "Update", T0, json!({"f:x": {}}));
        sub["subresource"] = json!("status");
        let entries: Vec<ManagedFieldsEntry> = decode_managed_fields(&json!([
            entry("z", "Update", T2, json!({"f:x": {}})),
            sub.clone(),
            entry("b", "Apply", T1, json!({"f:x": {}})),
            entry("a", "Update", T0, json!({"f:x": {}})),
            entry("c", "Apply", T0, json!({"f:x": {}})),
            entry("empty", "Apply", T0, json!({})),
        ]))
        .unwrap();
        let order: Vec<(String, String)> = encode_managed_fields(&entries)
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["manager"].as_str().unwrap().to_string(),
                    e.get("subresource").map(|s| s.to_string()).unwrap_or_default(),
                )
            })
            .collect();
        let want: Vec<(String, String)> = [("c", ""), ("b", ""), ("a", ""), ("a", "\"status\""), ("z", "")]
            .iter()
            .map(|(m, s)| (m.to_string(), s.to_string()))
            .collect();
        assert_eq!(order, want);
    }

    #[test]
    fn malformed_managed_fields_are_reported() {
        let cases = [
            (json!({}), "managedFields must be a list"),
            (
                json!([{"operation": "Delete", "fieldsType": "FieldsV1"}]),
                "operation must be Apply or Update",
            ),
            (
                json!([{"operation": "Apply", "fieldsType": "FieldsV2"}]),
                "fieldsType must be FieldsV1",
            ),
            (
                json!([{"operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {"q": {}}}]),
                "invalid FieldsV1 key",
            ),
        ];
        for (v, want) in cases {
            let err = decode_managed_fields(&v).unwrap_err().to_string();
            assert!(err.contains(want), "{v}: {err}");
        }
    }
}
