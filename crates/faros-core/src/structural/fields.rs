//! Which fields a schema knows: unknown-field reporting (`fieldValidation=Strict|Warn`),
//! pruning (custom-resource semantics) and defaulting.
//!
//! The rules follow kube-apiserver's structural pruning: a named property or
//! `additionalProperties` makes a field known; `x-kubernetes-preserve-unknown-fields` keeps
//! unknown ones (while still descending into known ones); anything else is unknown. At a
//! resource root and at every `x-kubernetes-embedded-resource` node, `apiVersion` and `kind`
//! are always known and `metadata` is judged against ObjectMeta, whatever the schema says.
//! [`Schema::unknown_fields`] reports exactly what [`Schema::prune`] removes.

use serde_json::Value;

use super::Schema;
use super::builtin::object_meta;

/// How one field of an object is treated.
enum Field<'s> {
    /// Known, with this schema for its value.
    Known(&'s Schema),
    /// Known, value kept as is (an implicit `apiVersion`/`kind`, or a preserved unknown field).
    Kept,
    Unknown,
}

fn classify<'s>(s: &'s Schema, key: &str, resource_root: bool) -> Field<'s> {
    if resource_root {
        match key {
            "metadata" => return Field::Known(object_meta()),
            "apiVersion" | "kind" => return s.properties.get(key).map_or(Field::Kept, Field::Known),
            _ => {}
        }
    }
    match s.field(key) {
        Some(child) => Field::Known(child),
        None if s.preserve_unknown_fields => Field::Kept,
        None => Field::Unknown,
    }
}

impl Schema {
    /// Paths of the fields `prune` would drop, like `.spec.foo` or `.spec.items[0].bar`, in
    /// document order. `self` is the schema of a whole object (a resource root).
    pub fn unknown_fields(&self, obj: &Value) -> Vec<String> {
        let mut out = Vec::new();
        collect_unknown(Some(self), obj, &mut String::new(), true, &mut out);
        out
    }

    /// Drops every field the schema does not know (see the module docs).
    pub fn prune(&self, obj: &mut Value) {
        prune(Some(self), obj, true);
    }

    /// Fills in `default`s of absent properties, top-down (a defaulted object gets its own
    /// nested defaults too), and drops `null`s of non-nullable properties that have no default,
    /// as kube-apiserver does before validation. Call after [`Schema::prune`] and before
    /// [`Schema::validate`].
    pub fn apply_defaults(&self, obj: &mut Value) {
        apply_defaults(self, obj, true);
    }
}

/// `s` is None below a field whose schema says nothing (e.g. list items without an `items`
/// schema): there every object key is unknown.
fn collect_unknown(s: Option<&Schema>, v: &Value, path: &mut String, root: bool, out: &mut Vec<String>) {
    match v {
        Value::Object(fields) => {
            let root = root || s.is_some_and(|s| s.embedded_resource);
            for (k, child) in fields {
                let len = path.len();
                path.push('.');
                path.push_str(k);
                match s.map_or(Field::Unknown, |s| classify(s, k, root)) {
                    Field::Known(cs) => collect_unknown(Some(cs), child, path, false, out),
                    Field::Kept => {}
                    Field::Unknown => out.push(path.clone()),
                }
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            let item_schema = match s {
                Some(s) if s.items.is_none() && s.preserve_unknown_fields => return,
                Some(s) => s.items.as_deref(),
                None => None,
            };
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                collect_unknown(item_schema, item, path, false, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

fn prune(s: Option<&Schema>, v: &mut Value, root: bool) {
    match v {
        Value::Object(fields) => {
            let root = root || s.is_some_and(|s| s.embedded_resource);
            fields.retain(|k, _| !matches!(s.map_or(Field::Unknown, |s| classify(s, k, root)), Field::Unknown));
            if let Some(s) = s {
                for (k, child) in fields.iter_mut() {
                    if let Field::Known(cs) = classify(s, k, root) {
                        prune(Some(cs), child, false);
                    }
                }
            }
        }
        Value::Array(items) => {
            let item_schema = match s {
                Some(s) if s.items.is_none() && s.preserve_unknown_fields => return,
                Some(s) => s.items.as_deref(),
                None => None,
            };
            for item in items {
                prune(item_schema, item, false);
            }
        }
        _ => {}
    }
}

fn apply_defaults(s: &Schema, v: &mut Value, root: bool) {
    match v {
        Value::Object(fields) => {
            let root = root || s.embedded_resource;
            for (k, ps) in &s.properties {
                if root && k == "metadata" {
                    continue;
                }
                match fields.get(k) {
                    None => {
                        if let Some(d) = &ps.default {
                            fields.insert(k.clone(), d.clone());
                        }
                    }
                    Some(Value::Null) if !ps.nullable => match &ps.default {
                        Some(d) => {
                            fields.insert(k.clone(), d.clone());
                        }
                        None => {
                            fields.remove(k);
                        }
                    },
                    Some(_) => {}
                }
            }
            for (k, child) in fields.iter_mut() {
                if let Field::Known(cs) = classify(s, k, root) {
                    apply_defaults(cs, child, false);
                }
            }
        }
        Value::Array(items) => {
            if let Some(is) = &s.items {
                for item in items {
                    apply_defaults(is, item, false);
                }
            }
        }
        _ => {}
    }
}
