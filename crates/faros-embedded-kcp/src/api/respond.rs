//! Shaping responses: the `kcp.io/cluster` annotation, content negotiation (Table and
//! PartialObjectMetadata for kubectl and kube-rs metadata calls; protobuf or JSON bodies for Go
//! clients), and JSON bodies.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use faros_core::status::Status;
use http::{HeaderMap, StatusCode, header};
use serde_json::{Value, json};

use super::protobuf;

use crate::objects::meta;
use crate::registry::{PrinterColumn, ResourceDef};

/// What representation the client asked for in `Accept`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Representation {
    Object,
    Table,
    PartialMetadata,
}

impl Representation {
    pub fn from_headers(headers: &HeaderMap) -> Self {
        let accept = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        // Clients list alternatives in preference order; the first we support wins.
        for alt in accept.split(',') {
            if alt.contains("as=Table") {
                return Self::Table;
            }
            if alt.contains("as=PartialObjectMetadata") {
                return Self::PartialMetadata;
            }
            if alt.trim().starts_with("application/json") || alt.trim().starts_with("*/*") {
                return Self::Object;
            }
        }
        Self::Object
    }
}

/// The body encodings a client accepts, from `Accept`: alternatives by `q` (0 excludes), then in
/// the order given, as Kubernetes negotiates. No `Accept` means JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Accepts {
    /// Protobuf is acceptable and preferred over JSON.
    pub protobuf_first: bool,
    pub protobuf: bool,
    pub json: bool,
}

impl Accepts {
    pub fn from_headers(headers: &HeaderMap) -> Self {
        let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
            return Self::parse("");
        };
        Self::parse(accept)
    }

    pub fn parse(accept: &str) -> Self {
        if accept.trim().is_empty() {
            return Self {
                protobuf_first: false,
                protobuf: false,
                json: true,
            };
        }
        let mut alternatives: Vec<(f32, bool)> = Vec::new();
        for alt in accept.split(',') {
            let mut parts = alt.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default().to_ascii_lowercase();
            let mut q = 1.0f32;
            let mut transformed = false;
            for p in parts {
                match p.split_once('=') {
                    Some(("q", v)) => q = v.trim().parse().unwrap_or(0.0),
                    Some(("as", _)) => transformed = true,
                    _ => {}
                }
            }
            let protobuf = match media.as_str() {
                protobuf::MEDIA_TYPE if !transformed => true,
                "application/json" | "*/*" | "application/*" => false,
                // Protobuf Tables and metadata are not served; JSON ones are (`Representation`).
                _ => continue,
            };
            if q > 0.0 {
                alternatives.push((q, protobuf));
            }
        }
        alternatives.sort_by(|a, b| b.0.total_cmp(&a.0));
        let wildcard = accept.split(',').any(|a| {
            let m = a.split(';').next().unwrap_or_default().trim();
            m == "*/*" || m == "application/*"
        });
        Self {
            protobuf_first: alternatives.first().is_some_and(|a| a.1),
            protobuf: alternatives.iter().any(|a| a.1) || wildcard,
            json: alternatives.iter().any(|a| !a.1),
        }
    }

    /// Whether any body this server writes is acceptable.
    pub fn any(&self) -> bool {
        self.protobuf || self.json
    }
}

/// 406 with the media types this server writes, as kube-apiserver answers.
pub fn not_acceptable() -> Status {
    Status::failure(
        406,
        "NotAcceptable",
        format!(
            "only the following media types are accepted: application/json, {}",
            protobuf::MEDIA_TYPE
        ),
    )
}

/// Re-encodes a JSON answer in protobuf when the client prefers it (or accepts nothing else) and
/// the answer is a built-in kind, a list of one, or a Status. Anything without a lossless
/// protobuf form stays JSON if the client accepts JSON, else it is a 406.
pub async fn negotiate_encoding(resp: Response, accepts: Accepts) -> Response {
    if accepts.json && !accepts.protobuf_first {
        return resp;
    }
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/json");
    if !is_json {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return Status::internal("the response body could not be read").into_response();
    };
    let encoded = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| protobuf::encode(&v).ok());
    match encoded {
        Some(pb) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            parts.headers.insert(
                header::CONTENT_TYPE,
                http::HeaderValue::from_static(protobuf::MEDIA_TYPE),
            );
            Response::from_parts(parts, Body::from(pb))
        }
        None if accepts.json => Response::from_parts(parts, Body::from(bytes)),
        None => not_acceptable().into_response(),
    }
}

/// A JSON response.
pub fn json_response(code: StatusCode, body: &Value) -> Response {
    json_bytes(code, serde_json::to_vec(body).unwrap_or_default())
}

pub fn json_bytes(code: StatusCode, body: impl Into<bytes::Bytes>) -> Response {
    let mut resp = Response::new(Body::from(body.into()));
    *resp.status_mut() = code;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    resp
}

/// One object in the requested representation.
pub fn object_repr(def: &ResourceDef, obj: Value, repr: Representation, rv: u64) -> Value {
    match repr {
        Representation::Object => obj,
        Representation::PartialMetadata => partial(&obj),
        Representation::Table => table(def, vec![obj], rv, None),
    }
}

/// A list in the requested representation.
pub fn list_repr(
    def: &ResourceDef,
    items: Vec<Value>,
    rv: u64,
    cont: Option<String>,
    remaining: Option<u64>,
    repr: Representation,
) -> Value {
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if let Some(c) = &cont {
        metadata["continue"] = json!(c);
    }
    if let Some(r) = remaining {
        metadata["remainingItemCount"] = json!(r);
    }
    match repr {
        Representation::Object => {
            // kube-apiserver writes a built-in kind's list from typed objects, whose items carry no
            // apiVersion/kind; lists of custom resources (kcp's own kinds are CRDs there) keep them
            // and always say `continue`, empty on the last page.
            let items = if typed_builtin(def) {
                items.into_iter().map(without_type_meta).collect()
            } else {
                if cont.is_none() {
                    metadata["continue"] = json!("");
                }
                items
            };
            json!({"kind": def.list_kind, "apiVersion": def.api_version(), "metadata": metadata, "items": items})
        }
        Representation::PartialMetadata => json!({
            "kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": metadata,
            "items": items.iter().map(partial).collect::<Vec<_>>()
        }),
        Representation::Table => table(def, items, rv, cont),
    }
}

/// Whether kube-apiserver serves `def` as a typed built-in kind rather than a custom resource:
/// exactly the kinds that take strategic merge patches.
fn typed_builtin(def: &ResourceDef) -> bool {
    def.strategic_merge
}

fn without_type_meta(mut obj: Value) -> Value {
    if let Some(map) = obj.as_object_mut() {
        map.remove("apiVersion");
        map.remove("kind");
    }
    obj
}

fn partial(obj: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata").cloned().unwrap_or(json!({}))})
}

/// A `meta.k8s.io/v1` Table: Name, the resource's printer columns, Age.
pub fn table(def: &ResourceDef, items: Vec<Value>, rv: u64, cont: Option<String>) -> Value {
    let mut columns = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0}),
    ];
    let age_in_columns = def.printer_columns.iter().any(|c| c.name == "Age");
    for c in &def.printer_columns {
        columns.push(json!({"name": c.name, "type": c.type_, "format": c.format, "description": c.description, "priority": c.priority}));
    }
    if !age_in_columns {
        columns.push(json!({"name": "Age", "type": "date", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created.", "priority": 0}));
    }
    let now = jiff::Timestamp::now();
    let rows: Vec<Value> = items
        .iter()
        .map(|obj| {
            let mut cells = vec![json!(meta::name(obj).unwrap_or_default())];
            for c in &def.printer_columns {
                cells.push(cell(c, obj, now));
            }
            if !age_in_columns {
                cells.push(json!(age(meta::creation_timestamp(obj), now)));
            }
            json!({"cells": cells, "object": partial(obj)})
        })
        .collect();
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if let Some(c) = cont {
        metadata["continue"] = json!(c);
    }
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata, "columnDefinitions": columns, "rows": rows})
}

fn cell(c: &PrinterColumn, obj: &Value, now: jiff::Timestamp) -> Value {
    let values = json_path(obj, &c.json_path);
    let Some(first) = values.first() else {
        return json!("<none>");
    };
    if c.type_ == "date" {
        return json!(age(first.as_str(), now));
    }
    match first {
        Value::String(_) | Value::Number(_) | Value::Bool(_) => (*first).clone(),
        other => json!(other.to_string()),
    }
}

/// A human age like kubectl prints: `45s`, `12m`, `3h5m`, `4d`.
pub fn age(created: Option<&str>, now: jiff::Timestamp) -> String {
    let Some(t) = created.and_then(|s| s.parse::<jiff::Timestamp>().ok()) else {
        return "<unknown>".into();
    };
    let secs = (now.as_second() - t.as_second()).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 600 => format!("{}m{}s", s / 60, s % 60),
        s if s < 3 * 3600 => format!("{}m", s / 60),
        s if s < 8 * 3600 => format!("{}h{}m", s / 3600, (s % 3600) / 60),
        s if s < 2 * 86400 => format!("{}h", s / 3600),
        s if s < 8 * 86400 => format!("{}d{}h", s / 86400, (s % 86400) / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// Evaluates the JSONPath subset printer columns use: `.a.b`, `[0]`, `[*]`, and
/// `[?(@.field=="value")]` filters.
pub fn json_path<'a>(obj: &'a Value, path: &str) -> Vec<&'a Value> {
    let path = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('$');
    let mut current: Vec<&Value> = vec![obj];
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let key = &r[..end];
            current = current.into_iter().filter_map(|v| v.get(key)).collect();
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else { return vec![] };
            let inner = &r[..end];
            rest = &r[end + 1..];
            if inner == "*" {
                current = current.into_iter().filter_map(Value::as_array).flatten().collect();
            } else if let Ok(i) = inner.parse::<usize>() {
                current = current.into_iter().filter_map(|v| v.get(i)).collect();
            } else if let Some(filter) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let Some((field, want)) = filter.split_once("==") else {
                    return vec![];
                };
                let want = want.trim().trim_matches('"').trim_matches('\'');
                current = current
                    .into_iter()
                    .filter_map(Value::as_array)
                    .flatten()
                    .filter(|item| item.get(field.trim()).and_then(Value::as_str) == Some(want))
                    .collect();
            } else {
                return vec![];
            }
        } else {
            return vec![];
        }
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_shaped_as_kube_apiserver_writes_them() {
        let builtin = crate::builtin::builtin_resources();
        let configmaps = builtin.iter().find(|d| d.resource == "configmaps").unwrap();
        let kcp = crate::kcp::resources::kcp_resources();
        let bindings = kcp.iter().find(|d| d.resource == "apibindings").unwrap();
        let item =
            |kind: &str, api_version: &str| json!({"kind": kind, "apiVersion": api_version, "metadata": {"name": "a"}});
        let rows = [
            // Built-in kinds: items without type meta, no `continue` on the last page.
            (
                configmaps,
                item("ConfigMap", "v1"),
                None,
                json!({"metadata": {"name": "a"}}),
                json!({"resourceVersion": "7"}),
            ),
            (
                configmaps,
                item("ConfigMap", "v1"),
                Some("next"),
                json!({"metadata": {"name": "a"}}),
                json!({"resourceVersion": "7", "continue": "next"}),
            ),
            // Custom resources: items keep it, `continue` is always there.
            (
                bindings,
                item("APIBinding", "apis.kcp.io/v1alpha2"),
                None,
                item("APIBinding", "apis.kcp.io/v1alpha2"),
                json!({"resourceVersion": "7", "continue": ""}),
            ),
        ];
        for (def, it, cont, want_item, want_meta) in rows {
            let list = list_repr(def, vec![it], 7, cont.map(String::from), None, Representation::Object);
            assert_eq!(list["items"], json!([want_item]), "{}", def.resource);
            assert_eq!(list["metadata"], want_meta, "{}", def.resource);
            assert_eq!(list["kind"], def.list_kind.as_str());
        }
    }

    #[test]
    fn json_path_subset() {
        let obj = json!({"status": {"phase": "Ready", "conditions": [{"type": "A", "status": "False"}, {"type": "Ready", "status": "True"}]}, "spec": {"items": [1, 2]}});
        let cases = [
            (".status.phase", vec![json!("Ready")]),
            (".status.conditions[?(@.type==\"Ready\")].status", vec![json!("True")]),
            (".spec.items[1]", vec![json!(2)]),
            (".spec.items[*]", vec![json!(1), json!(2)]),
            (".missing.x", vec![]),
        ];
        for (path, want) in cases {
            let got: Vec<Value> = json_path(&obj, path).into_iter().cloned().collect();
            assert_eq!(got, want, "{path}");
        }
    }

    #[test]
    fn ages_like_kubectl() {
        let now: jiff::Timestamp = "2026-01-02T00:00:00Z".parse().unwrap();
        for (created, want) in [
            ("2026-01-01T23:59:15Z", "45s"),
            ("2026-01-01T23:55:00Z", "5m0s"),
            ("2026-01-01T23:00:00Z", "60m"),
            ("2026-01-01T20:30:00Z", "3h30m"),
            ("2025-12-30T00:00:00Z", "3d0h"),
            ("2025-12-01T00:00:00Z", "32d"),
        ] {
            assert_eq!(age(Some(created), now), want, "{created}");
        }
    }

    #[test]
    fn negotiates_encoding() {
        let accepts = |protobuf_first, protobuf, json| Accepts {
            protobuf_first,
            protobuf,
            json,
        };
        let cases = [
            ("", accepts(false, false, true)),
            ("application/json", accepts(false, false, true)),
            // client-go's typed clients
            (
                "application/vnd.kubernetes.protobuf,application/json",
                accepts(true, true, true),
            ),
            ("application/vnd.kubernetes.protobuf, */*", accepts(true, true, true)),
            ("application/json, */*", accepts(false, true, true)),
            ("application/vnd.kubernetes.protobuf", accepts(true, true, false)),
            (
                "application/vnd.kubernetes.protobuf;q=0.5, application/json",
                accepts(false, true, true),
            ),
            (
                "application/json;q=0, application/vnd.kubernetes.protobuf",
                accepts(true, true, false),
            ),
            (
                "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io",
                accepts(false, false, true),
            ),
            ("text/html,application/xhtml+xml,*/*;q=0.8", accepts(false, true, true)),
            ("application/yaml", accepts(false, false, false)),
            ("application/cbor", accepts(false, false, false)),
        ];
        for (accept, want) in cases {
            assert_eq!(Accepts::parse(accept), want, "{accept}");
        }
    }

    #[tokio::test]
    async fn re_encodes_only_what_has_a_protobuf_form() {
        use http_body_util::BodyExt;
        let pb_first = Accepts::parse("application/vnd.kubernetes.protobuf,application/json");
        let pb_only = Accepts::parse("application/vnd.kubernetes.protobuf");
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        let provider = json!({"apiVersion": "faros.sh/v1alpha1", "kind": "Provider", "metadata": {"name": "a"}});
        let status = serde_json::to_value(Status::not_found_message("gone")).unwrap();
        let cases = [
            (&cm, pb_first, 200, protobuf::MEDIA_TYPE),
            (&status, pb_first, 404, protobuf::MEDIA_TYPE),
            (&provider, pb_first, 200, "application/json"),
            (&provider, pb_only, 406, "application/json"),
            (&cm, Accepts::parse("application/json"), 200, "application/json"),
        ];
        for (body, accepts, code, content_type) in cases {
            let original = StatusCode::from_u16(if body["kind"] == "Status" { 404 } else { 200 }).unwrap();
            let resp = negotiate_encoding(json_response(original, body), accepts).await;
            assert_eq!(resp.status().as_u16(), code, "{body} {accepts:?}");
            assert_eq!(resp.headers()[header::CONTENT_TYPE], content_type, "{body} {accepts:?}");
            let bytes = resp.into_body().collect().await.unwrap().to_bytes();
            if content_type == protobuf::MEDIA_TYPE {
                assert_eq!(&protobuf::decode(&bytes).unwrap(), body);
            }
        }
    }

    #[test]
    fn negotiates_representation() {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
                .parse()
                .unwrap(),
        );
        assert_eq!(Representation::from_headers(&h), Representation::Table);
        h.insert(
            header::ACCEPT,
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
                .parse()
                .unwrap(),
        );
        assert_eq!(Representation::from_headers(&h), Representation::PartialMetadata);
        h.insert(header::ACCEPT, "application/json".parse().unwrap());
        assert_eq!(Representation::from_headers(&h), Representation::Object);
    }
}
