//! `/openapi/v2`: the Swagger 2.0 document kube-apiserver serves beside v3, built from the same
//! schemas, in JSON or in gnostic's protobuf form ([`proto`]).
//!
//! kubectl reads it (always as protobuf) for client-side validation whenever its v3 check does not
//! settle a manifest: a kind no served group-version has (a mistyped `apiVersion`, which must reach
//! "no matches for kind"), and the items of a `kind: List` file. Without it kubectl stops at "the
//! server was unable to respond with a content type that the client supports". Real kcp's v2
//! document lists only the built-in kinds; this one lists every kind served in the cluster, which
//! makes kubectl's client validation check more, never less.

use axum::response::{IntoResponse, Response};
use faros_core::status::Status;
use http::{HeaderMap, StatusCode, header};
use serde_json::{Map, Value, json};

use super::{operation_paths, schema_name};
use crate::state::ServerState;

pub mod proto;

/// The media type kubectl and client-go ask for.
pub const PROTOBUF_MEDIA_TYPE: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// The content type kube-openapi answers protobuf with (the `@` of the request's type is a dot).
pub const PROTOBUF_CONTENT_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The two encodings of the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Json,
    Protobuf,
}

/// kube-openapi's negotiation: `Accept`'s clauses by `q`, then the specific before the wildcard;
/// the first clause that matches JSON or protobuf (JSON first, so wildcards get JSON). No `Accept`
/// is `*/*`. None when nothing matches (kube answers 406).
pub fn negotiate(accept: Option<&str>) -> Option<Encoding> {
    let accept = accept.filter(|a| !a.trim().is_empty()).unwrap_or("*/*");
    let mut clauses: Vec<(f32, u8, &str, &str)> = Vec::new();
    for clause in accept.split(',') {
        let mut parts = clause.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default();
        let (kind, sub) = media.split_once('/').unwrap_or((media, "*"));
        let q = parts
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| k.trim() == "q")
            .map_or(1.0, |(_, v)| v.trim().parse().unwrap_or(0.0));
        if q > 0.0 {
            let specificity = u8::from(kind != "*") + u8::from(sub != "*");
            clauses.push((q, specificity, kind, sub));
        }
    }
    clauses.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    let offered = [
        ("application/json", Encoding::Json),
        (PROTOBUF_MEDIA_TYPE, Encoding::Protobuf),
        (PROTOBUF_CONTENT_TYPE, Encoding::Protobuf),
    ];
    clauses.iter().find_map(|(_, _, kind, sub)| {
        offered.iter().find_map(|(media, encoding)| {
            let (k, s) = media.split_once('/').unwrap_or_default();
            let matches =
                (*kind == "*" || kind.eq_ignore_ascii_case(k)) && (*sub == "*" || sub.eq_ignore_ascii_case(s));
            matches.then_some(*encoding)
        })
    })
}

/// The 406 of an `Accept` that names neither encoding. kube-openapi answers it without a body;
/// this one says what it serves.
fn not_acceptable() -> Status {
    Status::failure(
        406,
        "NotAcceptable",
        format!("only the following media types are accepted: application/json, {PROTOBUF_MEDIA_TYPE}"),
    )
}

/// Answers `GET /openapi/v2` in the encoding `Accept` asks for.
pub fn serve(state: &ServerState, cluster: &str, headers: &HeaderMap) -> Result<Response, Status> {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let encoding = negotiate(accept).ok_or_else(not_acceptable)?;
    let doc = document(state, cluster);
    let (content_type, body) = match encoding {
        Encoding::Json => ("application/json", serde_json::to_vec(&doc).unwrap_or_default()),
        Encoding::Protobuf => (
            PROTOBUF_CONTENT_TYPE,
            proto::encode(&doc).map_err(|e| Status::internal(e.to_string()))?,
        ),
    };
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, content_type), (header::VARY, "Accept")],
        body,
    )
        .into_response())
}

/// The document: every kind served in `cluster` as a definition, and the write operations
/// kubectl's field-validation check looks at (create, update, patch with `fieldValidation`).
pub fn document(state: &ServerState, cluster: &str) -> Value {
    let mut paths = Map::new();
    let mut definitions = Map::new();
    for def in state.registry.resources(cluster) {
        let gvk = json!({"group": def.group, "version": def.version, "kind": def.kind});
        let name = schema_name(&def);
        let mut schema = to_v2(def.schema.to_openapi_v3());
        schema["x-kubernetes-group-version-kind"] = json!([gvk]);
        definitions.insert(name.clone(), schema);
        let reference = json!({"$ref": format!("#/definitions/{name}")});
        let query = |name: &str| json!({"name": name, "in": "query", "type": "string", "uniqueItems": true});
        let op = |verb: &str| {
            json!({
                "operationId": format!("{verb}{}", def.kind),
                "consumes": ["application/json"],
                "produces": ["application/json"],
                "parameters": [
                    {"name": "body", "in": "body", "required": true, "schema": reference},
                    query("dryRun"),
                    query("fieldManager"),
                    query("fieldValidation"),
                ],
                "responses": {"200": {"description": "OK", "schema": reference}},
                "x-kubernetes-action": verb,
                "x-kubernetes-group-version-kind": gvk,
            })
        };
        let (collection, item) = operation_paths(&def);
        paths.insert(collection, json!({"post": op("post")}));
        if let Some(item) = item {
            paths.insert(item, json!({"put": op("put"), "patch": op("patch")}));
        }
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": format!("v1.{}.0", crate::api::discovery::KUBE_MINOR)},
        "paths": paths,
        "definitions": definitions,
    })
}

/// An OpenAPI v3 schema as kube-apiserver publishes a custom resource's in v2: Swagger 2.0 has no
/// `nullable` (such a node loses its type and structure), and kubectl's v2 validation would
/// refuse unknown fields under `x-kubernetes-preserve-unknown-fields` if the node kept its
/// properties, or fail to parse an array without items.
fn to_v2(mut v: Value) -> Value {
    let Some(node) = v.as_object_mut() else {
        return v;
    };
    for key in ["allOf", "anyOf", "oneOf", "not"] {
        node.remove(key);
    }
    if node.remove("nullable").is_some_and(|n| n == true) {
        node.remove("type");
        node.remove("items");
        node.remove("properties");
    }
    if node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        node.remove("items");
        node.remove("properties");
    }
    if node.get("type").and_then(Value::as_str) == Some("array") && !node.contains_key("items") {
        node.remove("type");
    }
    if let Some(Value::Object(props)) = node.get("properties") {
        let nullable: Vec<String> = props
            .iter()
            .filter(|(_, p)| p.get("nullable") == Some(&Value::Bool(true)))
            .map(|(k, _)| k.clone())
            .collect();
        if let Some(Value::Array(required)) = node.get_mut("required") {
            required.retain(|r| r.as_str().is_none_or(|r| !nullable.iter().any(|n| n == r)));
            if required.is_empty() {
                node.remove("required");
            }
        }
    }
    if let Some(Value::Object(props)) = node.remove("properties") {
        let props = props.into_iter().map(|(k, p)| (k, to_v2(p))).collect();
        node.insert("properties".into(), Value::Object(props));
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = node.remove(key) {
            node.insert(key.into(), to_v2(sub));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_follows_kube_openapi() {
        let cases: [(Option<&str>, Option<Encoding>); 12] = [
            (None, Some(Encoding::Json)),
            (Some(""), Some(Encoding::Json)),
            (Some("*/*"), Some(Encoding::Json)),
            (Some("application/*"), Some(Encoding::Json)),
            (Some("application/json"), Some(Encoding::Json)),
            (Some(PROTOBUF_MEDIA_TYPE), Some(Encoding::Protobuf)),
            (Some(PROTOBUF_CONTENT_TYPE), Some(Encoding::Protobuf)),
            (
                Some("application/json;q=0.5, application/com.github.proto-openapi.spec.v2@v1.0+protobuf"),
                Some(Encoding::Protobuf),
            ),
            (
                Some("*/*, application/com.github.proto-openapi.spec.v2@v1.0+protobuf"),
                Some(Encoding::Protobuf),
            ),
            (Some("text/plain"), None),
            (Some("application/yaml"), None),
            (Some("application/json;q=0"), None),
        ];
        for (accept, want) in cases {
            assert_eq!(negotiate(accept), want, "{accept:?}");
        }
    }

    #[test]
    fn v2_schemas_drop_what_swagger_2_and_kubectl_cannot_read() {
        let cases = [
            (
                json!({"type": "object", "required": ["a", "b"], "properties": {
                    "a": {"type": "string", "nullable": true}, "b": {"type": "integer"}}}),
                json!({"type": "object", "required": ["b"], "properties": {"a": {}, "b": {"type": "integer"}}}),
            ),
            (
                json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"a": {"type": "string"}}}),
                json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            ),
            (
                json!({"type": "array", "items": {"type": "object", "nullable": true, "properties": {"x": {}}}}),
                json!({"type": "array", "items": {}}),
            ),
            (
                json!({"type": "array", "x-kubernetes-preserve-unknown-fields": true, "items": {"type": "string"}}),
                json!({"x-kubernetes-preserve-unknown-fields": true}),
            ),
            (
                json!({"type": "object", "additionalProperties": {"type": "string", "nullable": true}}),
                json!({"type": "object", "additionalProperties": {}}),
            ),
        ];
        for (v3, want) in cases {
            assert_eq!(to_v2(v3.clone()), want, "{v3}");
        }
    }
}
