//! A schema's spec and versions as kcp's messages print them: Go's JSON encoding of the typed
//! `APIResourceSchemaSpec` (the request decoded into Go structs, then encoded again). Fields come in
//! the order of the structs, fields without `omitempty` are always there (zero when absent), unknown
//! fields are gone, the raw OpenAPI schema has its keys sorted (it went through a Go map), and `<`,
//! `>`, `&`, U+2028 and U+2029 are escaped as Go escapes them.

use serde_json::{Map, Value};

/// The spec, encoded.
pub fn spec(spec: &Value) -> String {
    encode(&typed_spec(spec))
}

/// The versions list, encoded (`null` when absent).
pub fn versions(spec: &Value) -> String {
    encode(&typed_versions(spec.get("versions")))
}

fn encode(v: &Value) -> String {
    v.to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// How a struct field is encoded.
#[derive(Clone, Copy)]
enum Field {
    /// Always present; this zero when absent.
    Always(fn() -> Value),
    /// `omitempty`: left out when absent or Go's zero value.
    OmitEmpty,
    /// `omitempty` on a struct pointer or nested struct, typed by the function.
    Nested(fn(&Value) -> Value),
    /// Always present nested struct (Go never omits a struct).
    AlwaysNested(fn(&Value) -> Value),
}

fn empty_string() -> Value {
    Value::String(String::new())
}
fn false_() -> Value {
    Value::Bool(false)
}
fn null() -> Value {
    Value::Null
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
    }
}

/// `v` as the struct `fields` describes.
fn structure(v: &Value, fields: &[(&str, Field)]) -> Value {
    let empty = Map::new();
    let map = v.as_object().unwrap_or(&empty);
    let mut out = Map::new();
    for (name, field) in fields {
        let got = map.get(*name).filter(|x| !x.is_null());
        let encoded = match (field, got) {
            (Field::Always(zero), None) => Some(zero()),
            (Field::Always(_), Some(x)) => Some(x.clone()),
            (Field::OmitEmpty, Some(x)) if !is_zero(x) => Some(x.clone()),
            (Field::OmitEmpty, _) => None,
            (Field::Nested(f), Some(x)) => Some(f(x)),
            (Field::Nested(_), None) => None,
            (Field::AlwaysNested(f), x) => Some(f(x.unwrap_or(&Value::Null))),
        };
        if let Some(e) = encoded {
            out.insert((*name).to_string(), e);
        }
    }
    Value::Object(out)
}

fn typed_spec(v: &Value) -> Value {
    structure(
        v,
        &[
            ("group", Field::Always(empty_string)),
            ("names", Field::AlwaysNested(typed_names)),
            ("scope", Field::Always(empty_string)),
            ("versions", Field::AlwaysNested(|v| typed_versions(Some(v)))),
            ("nameValidation", Field::OmitEmpty),
            ("conversion", Field::Nested(typed_conversion)),
        ],
    )
}

fn typed_names(v: &Value) -> Value {
    structure(
        v,
        &[
            ("plural", Field::Always(empty_string)),
            ("singular", Field::OmitEmpty),
            ("shortNames", Field::OmitEmpty),
            ("kind", Field::Always(empty_string)),
            ("listKind", Field::OmitEmpty),
            ("categories", Field::OmitEmpty),
        ],
    )
}

fn typed_versions(v: Option<&Value>) -> Value {
    match v {
        Some(Value::Array(items)) => Value::Array(items.iter().map(typed_version).collect()),
        _ => Value::Null,
    }
}

fn typed_version(v: &Value) -> Value {
    structure(
        v,
        &[
            ("name", Field::Always(empty_string)),
            ("served", Field::Always(false_)),
            ("storage", Field::Always(false_)),
            ("deprecated", Field::OmitEmpty),
            // A pointer: an empty warning is still there.
            ("deprecationWarning", Field::Nested(Value::clone)),
            ("schema", Field::AlwaysNested(sorted)),
            ("subresources", Field::AlwaysNested(typed_subresources)),
            ("additionalPrinterColumns", Field::Nested(typed_columns)),
        ],
    )
}

fn typed_subresources(v: &Value) -> Value {
    structure(
        v,
        &[
            ("status", Field::Nested(|_| Value::Object(Map::new()))),
            ("scale", Field::Nested(typed_scale)),
        ],
    )
}

fn typed_scale(v: &Value) -> Value {
    structure(
        v,
        &[
            ("specReplicasPath", Field::Always(empty_string)),
            ("statusReplicasPath", Field::Always(empty_string)),
            ("labelSelectorPath", Field::Nested(Value::clone)),
        ],
    )
}

fn typed_columns(v: &Value) -> Value {
    let column = |c: &Value| {
        structure(
            c,
            &[
                ("name", Field::Always(empty_string)),
                ("type", Field::Always(empty_string)),
                ("format", Field::OmitEmpty),
                ("description", Field::OmitEmpty),
                ("priority", Field::OmitEmpty),
                ("jsonPath", Field::Always(empty_string)),
            ],
        )
    };
    match v {
        Value::Array(items) if !items.is_empty() => Value::Array(items.iter().map(column).collect()),
        _ => Value::Null,
    }
}

fn typed_conversion(v: &Value) -> Value {
    structure(
        v,
        &[
            ("strategy", Field::Always(empty_string)),
            ("webhook", Field::Nested(typed_webhook)),
        ],
    )
}

fn typed_webhook(v: &Value) -> Value {
    structure(
        v,
        &[
            ("clientConfig", Field::Nested(typed_client_config)),
            ("conversionReviewVersions", Field::Always(null)),
        ],
    )
}

fn typed_client_config(v: &Value) -> Value {
    structure(v, &[("url", Field::OmitEmpty), ("caBundle", Field::OmitEmpty)])
}

/// `v` with every object's keys sorted, as Go encodes a map.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&map[k]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn the_spec_is_encoded_as_go_encodes_the_typed_spec() {
        let spec = json!({"versions": [{"subresources": {"status": {}}, "schema": {"type": "object", "properties": {"b": {"type": "string", "default": "<x>"}, "a": {"minimum": 1, "type": "integer"}}}, "storage": true, "served": true, "name": "v1"}],
            "scope": "Cluster", "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"}, "group": "example.io", "nameValidation": "DNS1123Subdomain"});
        assert_eq!(
            super::spec(&spec),
            r#"{"group":"example.io","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"scope":"Cluster","versions":[{"name":"v1","served":true,"storage":true,"schema":{"properties":{"a":{"minimum":1,"type":"integer"},"b":{"default":"\u003cx\u003e","type":"string"}},"type":"object"},"subresources":{"status":{}}}],"nameValidation":"DNS1123Subdomain"}"#
        );
    }

    #[test]
    fn absent_fields_are_zero_or_left_out_as_their_tags_say() {
        for (versions, want) in [
            (json!(null), "null"),
            (json!([]), "[]"),
            (
                json!([{"name": "v1"}]),
                r#"[{"name":"v1","served":false,"storage":false,"schema":null,"subresources":{}}]"#,
            ),
            (
                json!([{"name": "v1", "deprecated": false, "deprecationWarning": "", "schema": {}, "extra": 1,
                    "subresources": {"scale": {"specReplicasPath": ".spec.r"}},
                    "additionalPrinterColumns": [{"jsonPath": ".x", "name": "X", "type": "string", "priority": 0}]}]),
                r#"[{"name":"v1","served":false,"storage":false,"deprecationWarning":"","schema":{},"subresources":{"scale":{"specReplicasPath":".spec.r","statusReplicasPath":""}},"additionalPrinterColumns":[{"name":"X","type":"string","jsonPath":".x"}]}]"#,
            ),
        ] {
            assert_eq!(super::versions(&json!({"versions": versions})), want, "{versions}");
        }
        assert_eq!(
            super::spec(
                &json!({"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://x"}}}})
            ),
            r#"{"group":"","names":{"plural":"","kind":""},"scope":"","versions":null,"conversion":{"strategy":"Webhook","webhook":{"clientConfig":{"url":"https://x"},"conversionReviewVersions":null}}}"#
        );
    }
}
