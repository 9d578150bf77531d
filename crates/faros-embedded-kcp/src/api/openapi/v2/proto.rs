//! The v2 document in gnostic's protobuf form (`openapi_v2.Document` of gnostic-models'
//! `OpenAPIv2.proto`), the only form client-go's `OpenAPISchema` reads. IO-free.
//!
//! It encodes what [`super::document`] writes: every key of a message this module knows is
//! encoded, vendor extensions (`x-…`) as gnostic's `NamedAny` with the value's YAML (its JSON, which
//! is YAML), and a key it does not know is an error rather than a silent difference between the
//! JSON and the protobuf answer.

use serde_json::{Map, Value};

use crate::api::protobuf::wire::{put_bytes_field, put_varint, put_varint_field};

/// A key of the document without a place in gnostic's messages here.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the OpenAPI v2 document has no protobuf form for `{key}` in {message}")]
pub struct EncodeError {
    pub message: &'static str,
    pub key: String,
}

type Encoded = Result<Vec<u8>, EncodeError>;

fn unknown(message: &'static str, key: &str) -> EncodeError {
    EncodeError {
        message,
        key: key.to_string(),
    }
}

/// The `Document` message of a Swagger 2.0 JSON document.
pub fn encode(doc: &Value) -> Encoded {
    message(doc, "Document", 16, |out, key, v| {
        match key {
            "swagger" => string(out, 1, v),
            "info" => put_message(
                out,
                2,
                message(v, "Info", 7, |out, key, v| {
                    match key {
                        "title" => string(out, 1, v),
                        "version" => string(out, 2, v),
                        "description" => string(out, 3, v),
                        _ => return Ok(false),
                    }
                    Ok(true)
                })?,
            ),
            "paths" => put_message(out, 8, paths(v)?),
            "definitions" => put_message(out, 9, named(v, 1, schema)?),
            _ => return Ok(false),
        }
        Ok(true)
    })
}

/// A JSON object as a message: `field` says whether it encoded a key; `x-…` keys it leaves are
/// vendor extensions (field `extensions`), anything else an error.
fn message(
    v: &Value,
    name: &'static str,
    extensions: u64,
    mut field: impl FnMut(&mut Vec<u8>, &str, &Value) -> Result<bool, EncodeError>,
) -> Encoded {
    let obj = object(v, name)?;
    let mut out = Vec::new();
    for (key, value) in obj {
        if field(&mut out, key, value)? {
            continue;
        }
        if key.starts_with("x-") {
            put_message(&mut out, extensions, named_any(key, value));
        } else {
            return Err(unknown(name, key));
        }
    }
    Ok(out)
}

fn object<'a>(v: &'a Value, name: &'static str) -> Result<&'a Map<String, Value>, EncodeError> {
    v.as_object().ok_or_else(|| unknown(name, "(not an object)"))
}

/// A map as gnostic's repeated `Named…` entries (`name` = 1, `value` = 2) in field `field`.
fn named(v: &Value, field: u64, value: fn(&Value) -> Encoded) -> Encoded {
    let mut out = Vec::new();
    for (name, entry) in object(v, "map")? {
        let mut named = Vec::new();
        put_bytes_field(&mut named, 1, name.as_bytes());
        put_message(&mut named, 2, value(entry)?);
        put_message(&mut out, field, named);
    }
    Ok(out)
}

/// `NamedAny`: the extension's name and its value as YAML.
fn named_any(name: &str, v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    put_bytes_field(&mut out, 1, name.as_bytes());
    put_message(&mut out, 2, any(v));
    out
}

/// `Any` with `yaml` = 2: JSON is YAML.
fn any(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    put_bytes_field(&mut out, 2, v.to_string().as_bytes());
    out
}

fn put_message(out: &mut Vec<u8>, field: u64, body: Vec<u8>) {
    put_bytes_field(out, field, &body);
}

fn string(out: &mut Vec<u8>, field: u64, v: &Value) {
    match v {
        Value::String(s) => put_bytes_field(out, field, s.as_bytes()),
        other => put_bytes_field(out, field, other.to_string().as_bytes()),
    }
}

fn strings(out: &mut Vec<u8>, field: u64, v: &Value) {
    for s in v.as_array().into_iter().flatten() {
        string(out, field, s);
    }
}

fn boolean(out: &mut Vec<u8>, field: u64, v: &Value) {
    if v.as_bool() == Some(true) {
        put_varint_field(out, field, 1);
    }
}

fn int64(out: &mut Vec<u8>, field: u64, v: &Value) {
    if let Some(n) = v.as_i64() {
        put_varint_field(out, field, n as u64);
    }
}

/// A `double` field: wire type 1, eight little-endian bytes.
fn double(out: &mut Vec<u8>, field: u64, v: &Value) {
    if let Some(n) = v.as_f64() {
        put_varint(out, (field << 3) | 1);
        out.extend_from_slice(&n.to_le_bytes());
    }
}

fn paths(v: &Value) -> Encoded {
    message(v, "Paths", 1, |out, key, v| {
        if !key.starts_with('/') {
            return Ok(false);
        }
        let mut named = Vec::new();
        put_bytes_field(&mut named, 1, key.as_bytes());
        put_message(&mut named, 2, path_item(v)?);
        put_message(out, 2, named);
        Ok(true)
    })
}

fn path_item(v: &Value) -> Encoded {
    message(v, "PathItem", 10, |out, key, v| {
        let field = match key {
            "get" => 2,
            "put" => 3,
            "post" => 4,
            "delete" => 5,
            "options" => 6,
            "head" => 7,
            "patch" => 8,
            _ => return Ok(false),
        };
        put_message(out, field, operation(v)?);
        Ok(true)
    })
}

fn operation(v: &Value) -> Encoded {
    message(v, "Operation", 13, |out, key, v| {
        match key {
            "tags" => strings(out, 1, v),
            "summary" => string(out, 2, v),
            "description" => string(out, 3, v),
            "operationId" => string(out, 5, v),
            "produces" => strings(out, 6, v),
            "consumes" => strings(out, 7, v),
            "parameters" => {
                for p in v.as_array().into_iter().flatten() {
                    // ParametersItem.parameter = 1
                    put_message(out, 8, {
                        let mut item = Vec::new();
                        put_message(&mut item, 1, parameter(p)?);
                        item
                    });
                }
            }
            "responses" => put_message(out, 9, responses(v)?),
            "schemes" => strings(out, 10, v),
            "deprecated" => boolean(out, 11, v),
            _ => return Ok(false),
        }
        Ok(true)
    })
}

/// `Parameter`: a body parameter (1) or a non-body one (2), of which only query parameters are
/// written here (`NonBodyParameter.query_parameter_sub_schema` = 3).
fn parameter(v: &Value) -> Encoded {
    let mut out = Vec::new();
    if v.get("in").and_then(Value::as_str) == Some("body") {
        let body = message(v, "BodyParameter", 6, |out, key, v| {
            match key {
                "description" => string(out, 1, v),
                "name" => string(out, 2, v),
                "in" => string(out, 3, v),
                "required" => boolean(out, 4, v),
                "schema" => put_message(out, 5, schema(v)?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        put_message(&mut out, 1, body);
        return Ok(out);
    }
    if v.get("in").and_then(Value::as_str) != Some("query") {
        return Err(unknown("Parameter", "in"));
    }
    let query = message(v, "QueryParameterSubSchema", 23, |out, key, v| {
        match key {
            "required" => boolean(out, 1, v),
            "in" => string(out, 2, v),
            "description" => string(out, 3, v),
            "name" => string(out, 4, v),
            "type" => string(out, 6, v),
            "uniqueItems" => boolean(out, 20, v),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let mut non_body = Vec::new();
    put_message(&mut non_body, 3, query);
    put_message(&mut out, 2, non_body);
    Ok(out)
}

/// `Responses.response_code` = 1 of `NamedResponseValue`s, each a `ResponseValue.response` = 1.
fn responses(v: &Value) -> Encoded {
    message(v, "Responses", 2, |out, code, v| {
        if code.starts_with("x-") {
            return Ok(false);
        }
        let response = message(v, "Response", 5, |out, key, v| {
            match key {
                "description" => string(out, 1, v),
                // SchemaItem.schema = 1
                "schema" => put_message(out, 2, {
                    let mut item = Vec::new();
                    put_message(&mut item, 1, schema(v)?);
                    item
                }),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        let mut value = Vec::new();
        put_message(&mut value, 1, response);
        let mut named = Vec::new();
        put_bytes_field(&mut named, 1, code.as_bytes());
        put_message(&mut named, 2, value);
        put_message(out, 1, named);
        Ok(true)
    })
}

fn schema(v: &Value) -> Encoded {
    message(v, "Schema", 31, |out, key, v| {
        match key {
            "$ref" => string(out, 1, v),
            "format" => string(out, 2, v),
            "title" => string(out, 3, v),
            "description" => string(out, 4, v),
            "default" => put_message(out, 5, any(v)),
            "multipleOf" => double(out, 6, v),
            "maximum" => double(out, 7, v),
            "exclusiveMaximum" => boolean(out, 8, v),
            "minimum" => double(out, 9, v),
            "exclusiveMinimum" => boolean(out, 10, v),
            "maxLength" => int64(out, 11, v),
            "minLength" => int64(out, 12, v),
            "pattern" => string(out, 13, v),
            "maxItems" => int64(out, 14, v),
            "minItems" => int64(out, 15, v),
            "uniqueItems" => boolean(out, 16, v),
            "maxProperties" => int64(out, 17, v),
            "minProperties" => int64(out, 18, v),
            "required" => strings(out, 19, v),
            "enum" => {
                for e in v.as_array().into_iter().flatten() {
                    put_message(out, 20, any(e));
                }
            }
            // AdditionalPropertiesItem: schema = 1 or boolean = 2.
            "additionalProperties" => put_message(out, 21, {
                let mut item = Vec::new();
                match v {
                    Value::Bool(b) => put_varint_field(&mut item, 2, u64::from(*b)),
                    other => put_message(&mut item, 1, schema(other)?),
                }
                item
            }),
            // TypeItem.value = 1 (repeated).
            "type" => put_message(out, 22, {
                let mut item = Vec::new();
                match v {
                    Value::Array(_) => strings(&mut item, 1, v),
                    other => string(&mut item, 1, other),
                }
                item
            }),
            // ItemsItem.schema = 1 (repeated).
            "items" => put_message(out, 23, {
                let mut item = Vec::new();
                match v {
                    Value::Array(all) => {
                        for s in all {
                            put_message(&mut item, 1, schema(s)?);
                        }
                    }
                    other => put_message(&mut item, 1, schema(other)?),
                }
                item
            }),
            "allOf" => {
                for s in v.as_array().into_iter().flatten() {
                    put_message(out, 24, schema(s)?);
                }
            }
            "properties" => put_message(out, 25, named(v, 1, schema)?),
            "readOnly" => boolean(out, 27, v),
            "example" => put_message(out, 30, any(v)),
            _ => return Ok(false),
        }
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::api::protobuf::wire::{Wire, fields};

    fn bytes(msg: &[u8], field: u64) -> Vec<&[u8]> {
        fields(msg)
            .unwrap()
            .into_iter()
            .filter(|(f, _)| *f == field)
            .map(|(_, w)| match w {
                Wire::Bytes(b) => b,
                Wire::Varint(v) => panic!("field {field} is a varint {v}"),
            })
            .collect()
    }

    #[test]
    fn a_document_encodes_as_gnostics_messages() {
        let doc = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": {"/api/v1/namespaces/{namespace}/configmaps/{name}": {"patch": {
                "operationId": "patchConfigMap",
                "parameters": [
                    {"name": "body", "in": "body", "required": true, "schema": {"$ref": "#/definitions/c"}},
                    {"name": "fieldValidation", "in": "query", "type": "string", "uniqueItems": true},
                ],
                "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/c"}}},
                "x-kubernetes-group-version-kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
            }}},
            "definitions": {"c": {"type": "object", "required": ["data"], "minProperties": 1, "maximum": 1.5,
                "properties": {"data": {"type": "object", "additionalProperties": {"type": "string"}}},
                "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "ConfigMap"}]}},
        });
        let out = encode(&doc).unwrap();
        assert_eq!(bytes(&out, 1), [b"2.0"]);
        assert_eq!(bytes(bytes(&out, 2)[0], 1), [b"Kubernetes"]);
        // Paths.path → NamedPathItem{name, value: PathItem{patch: Operation}}.
        let named_path = bytes(bytes(&out, 8)[0], 2)[0];
        assert_eq!(
            bytes(named_path, 1),
            [b"/api/v1/namespaces/{namespace}/configmaps/{name}".as_slice()]
        );
        let patch = bytes(bytes(named_path, 2)[0], 8)[0];
        assert_eq!(bytes(patch, 5), [b"patchConfigMap"]);
        let params = bytes(patch, 8);
        let body = bytes(bytes(params[0], 1)[0], 1)[0];
        assert_eq!(bytes(bytes(body, 5)[0], 1), [b"#/definitions/c"]);
        let query = bytes(bytes(bytes(bytes(params[1], 1)[0], 2)[0], 3)[0], 4);
        assert_eq!(query, [b"fieldValidation"]);
        let extension = bytes(patch, 13)[0];
        assert_eq!(bytes(extension, 1), [b"x-kubernetes-group-version-kind"]);
        let yaml = bytes(bytes(extension, 2)[0], 2)[0];
        assert_eq!(
            serde_json::from_slice::<Value>(yaml).unwrap(),
            json!({"group": "", "version": "v1", "kind": "ConfigMap"})
        );
        // Definitions → NamedSchema{name, value: Schema}.
        let named_schema = bytes(bytes(&out, 9)[0], 1)[0];
        let schema = bytes(named_schema, 2)[0];
        assert_eq!(bytes(bytes(schema, 22)[0], 1), [b"object"]);
        assert_eq!(bytes(schema, 19), [b"data"]);
        let scalars: Vec<_> = fields(schema).unwrap().into_iter().filter(|(f, _)| *f == 18).collect();
        assert_eq!(scalars, [(18, Wire::Varint(1))]);
        let data = bytes(bytes(bytes(schema, 25)[0], 1)[0], 2)[0];
        let additional = bytes(bytes(data, 21)[0], 1)[0];
        assert_eq!(bytes(bytes(additional, 22)[0], 1), [b"string"]);
    }

    #[test]
    fn keys_without_a_protobuf_form_are_refused() {
        for (doc, want) in [
            (json!({"swagger": "2.0", "host": "h"}), unknown("Document", "host")),
            (
                json!({"definitions": {"a": {"nullable": true}}}),
                unknown("Schema", "nullable"),
            ),
            (
                json!({"paths": {"/p": {"get": {"parameters": [{"name": "n", "in": "path"}]}}}}),
                unknown("Parameter", "in"),
            ),
        ] {
            assert_eq!(encode(&doc).unwrap_err(), want, "{doc}");
        }
    }
}
