//! Value validation against a structural schema, reported the way kube-apiserver reports CRD
//! validation failures: kube-openapi's messages wrapped in `field.Error` bodies
//! (`Invalid value: "x": spec.foo in body should match '^a'`), Kubernetes field paths
//! (`spec.items[0].name`) and `StatusCause` reasons (`FieldValueInvalid`, ...).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use crate::status::StatusCause;
use serde_json::Value;

use super::gofmt::{bad_value, float, quote};
use super::{ListType, Schema};

impl Schema {
    /// Every validation failure of `obj`, in a stable order (depth first, object keys in
    /// document order, `required` first).
    pub fn validate(&self, obj: &Value) -> Vec<StatusCause> {
        let mut out = Vec::new();
        check(self, obj, "", &mut out);
        out
    }
}

fn cause(reason: &str, field: &str, message: String) -> StatusCause {
    StatusCause {
        reason: reason.into(),
        message,
        field: field.into(),
    }
}

/// `field.Invalid` with a kube-openapi detail (`<path> in body <detail>`).
fn invalid(out: &mut Vec<StatusCause>, path: &str, value: &Value, detail: impl std::fmt::Display) {
    let msg = format!("Invalid value: {}: {} in body {detail}", bad_value(value), name(path));
    out.push(cause("FieldValueInvalid", path, msg));
}

fn name(path: &str) -> &str {
    if path.is_empty() { "." } else { path }
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The JSON type name of a value as kube-openapi reports it.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(want: &str, v: &Value) -> bool {
    match (want, v) {
        ("object", Value::Object(_)) | ("array", Value::Array(_)) | ("string", Value::String(_)) => true,
        ("boolean", Value::Bool(_)) | ("number", Value::Number(_)) => true,
        // Kubernetes decodes `2.0` as a float; kube-openapi accepts whole floats as integers.
        ("integer", Value::Number(n)) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    }
}

fn check(s: &Schema, v: &Value, path: &str, out: &mut Vec<StatusCause>) {
    // Type first: a value of the wrong type gets no further checks (kube-openapi stops too).
    let wanted = if s.int_or_string {
        Some("integer,string")
    } else {
        s.type_.as_deref()
    };
    if let Some(wanted) = wanted {
        let ok = if v.is_null() {
            s.nullable
        } else if s.int_or_string {
            type_matches("integer", v) || v.is_string()
        } else {
            type_matches(wanted, v)
        };
        if !ok {
            let got = type_name(v);
            let msg = format!(
                "Invalid value: {}: {} in body must be of type {wanted}: {}",
                quote(got),
                name(path),
                quote(got)
            );
            out.push(cause("FieldValueTypeInvalid", path, msg));
            return;
        }
    }
    if v.is_null() {
        return;
    }
    if !s.enum_.is_empty() && !s.enum_.contains(v) {
        let supported = s
            .enum_
            .iter()
            .map(|e| match e {
                Value::String(s) => quote(s),
                other => quote(&other.to_string()),
            })
            .collect::<Vec<_>>()
            .join(", ");
        let msg = format!("Unsupported value: {}: supported values: {supported}", bad_value(v));
        out.push(cause("FieldValueNotSupported", path, msg));
    }
    match v {
        Value::String(text) => check_string(s, text, v, path, out),
        Value::Number(n) => check_number(s, n.as_f64().unwrap_or(0.0), v, path, out),
        Value::Array(items) => check_array(s, items, path, out),
        Value::Object(fields) => check_object(s, fields, path, out),
        Value::Bool(_) | Value::Null => {}
    }
}

fn check_string(s: &Schema, text: &str, v: &Value, path: &str, out: &mut Vec<StatusCause>) {
    // kube-openapi counts characters (runes) while field.TooLong words the limit in bytes.
    let chars = text.chars().count() as u64;
    if let Some(max) = s.max_length
        && chars > max
    {
        let unit = if max == 1 { "byte" } else { "bytes" };
        out.push(cause(
            "FieldValueTooLong",
            path,
            format!("Too long: may not be more than {max} {unit}"),
        ));
    }
    if let Some(min) = s.min_length
        && chars < min
    {
        invalid(out, path, v, format_args!("should be at least {min} chars long"));
    }
    if let Some(pattern) = &s.pattern
        && !matches(pattern, text)
    {
        invalid(out, path, v, format_args!("should match '{pattern}'"));
    }
}

fn check_number(s: &Schema, n: f64, v: &Value, path: &str, out: &mut Vec<StatusCause>) {
    if let Some(max) = s.maximum {
        if s.exclusive_maximum && n >= max {
            invalid(out, path, v, format_args!("should be less than {}", float(max)));
        } else if n > max {
            invalid(
                out,
                path,
                v,
                format_args!("should be less than or equal to {}", float(max)),
            );
        }
    }
    if let Some(min) = s.minimum {
        if s.exclusive_minimum && n <= min {
            invalid(out, path, v, format_args!("should be greater than {}", float(min)));
        } else if n < min {
            invalid(
                out,
                path,
                v,
                format_args!("should be greater than or equal to {}", float(min)),
            );
        }
    }
    if let Some(m) = s.multiple_of
        && m > 0.0
        && (n / m).fract() != 0.0
    {
        invalid(out, path, v, format_args!("should be a multiple of {}", float(m)));
    }
}

fn too_many(out: &mut Vec<StatusCause>, path: &str, actual: usize, max: u64) {
    let unit = if max == 1 { "item" } else { "items" };
    out.push(cause(
        "FieldValueTooMany",
        path,
        format!("Too many: {actual}: must have at most {max} {unit}"),
    ));
}

fn check_array(s: &Schema, items: &[Value], path: &str, out: &mut Vec<StatusCause>) {
    if let Some(max) = s.max_items
        && items.len() as u64 > max
    {
        too_many(out, path, items.len(), max);
    }
    if let Some(min) = s.min_items
        && (items.len() as u64) < min
    {
        invalid(
            out,
            path,
            &Value::from(items.len()),
            format_args!("should have at least {min} items"),
        );
    }
    match &s.list_type {
        Some(ListType::Set) => {
            for (i, item) in items.iter().enumerate() {
                if items[..i].contains(item) {
                    let msg = format!("Duplicate value: {}", bad_value(item));
                    out.push(cause("FieldValueDuplicate", &format!("{path}[{i}]"), msg));
                }
            }
        }
        Some(ListType::Map(keys)) => {
            let key_of = |item: &Value| -> Value {
                let m = keys
                    .iter()
                    .filter_map(|k| item.get(k).map(|kv| (k.clone(), kv.clone())))
                    .collect::<serde_json::Map<_, _>>();
                Value::Object(m)
            };
            let seen: Vec<Value> = items.iter().map(key_of).collect();
            for (i, key) in seen.iter().enumerate() {
                if seen[..i].contains(key) {
                    let msg = format!("Duplicate value: {}", bad_value(key));
                    out.push(cause("FieldValueDuplicate", &format!("{path}[{i}]"), msg));
                }
            }
        }
        Some(ListType::Atomic) | None => {}
    }
    if let Some(item_schema) = &s.items {
        for (i, item) in items.iter().enumerate() {
            check(item_schema, item, &format!("{path}[{i}]"), out);
        }
    }
}

fn check_object(s: &Schema, fields: &serde_json::Map<String, Value>, path: &str, out: &mut Vec<StatusCause>) {
    for r in &s.required {
        if !fields.contains_key(r) {
            out.push(cause("FieldValueRequired", &child(path, r), "Required value".into()));
        }
    }
    if let Some(max) = s.max_properties
        && fields.len() as u64 > max
    {
        too_many(out, path, fields.len(), max);
    }
    if let Some(min) = s.min_properties
        && (fields.len() as u64) < min
    {
        invalid(
            out,
            path,
            &Value::from(fields.len()),
            format_args!("should have at least {min} properties"),
        );
    }
    for (k, fv) in fields {
        if let Some(fs) = s.field(k) {
            check(fs, fv, &child(path, k), out);
        }
    }
}

/// Regexes are compiled once per distinct pattern: validation runs on every write.
fn matches(pattern: &str, text: &str) -> bool {
    static CACHE: LazyLock<Mutex<HashMap<String, Option<regex::Regex>>>> = LazyLock::new(Default::default);
    // A poisoned lock only means another validation panicked mid-insert; the map is still usable.
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() > 1024 {
        cache.clear();
    }
    let re = cache
        .entry(pattern.to_string())
        .or_insert_with(|| regex::Regex::new(pattern).ok());
    // Patterns are checked when a schema is parsed; one that still does not compile cannot be
    // enforced and is not held against the object.
    re.as_ref().is_none_or(|re| re.is_match(text))
}
