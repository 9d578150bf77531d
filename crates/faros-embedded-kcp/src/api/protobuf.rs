//! Just enough Kubernetes protobuf to read the request bodies kubectl sends in protobuf.
//!
//! kubectl's typed clients (`kubectl auth can-i`, `kubectl create namespace|configmap|secret|
//! serviceaccount|role|rolebinding|clusterrole|clusterrolebinding`) post
//! `application/vnd.kubernetes.protobuf` and never retry with JSON, so those kinds are decoded here
//! into their JSON form; every other protobuf body is refused with 415. Responses stay JSON, which
//! kubectl accepts as its second choice.
//!
//! Wire format: the 4-byte magic `k8s\0`, then a `runtime.Unknown` message (`typeMeta` = 1 with
//! apiVersion = 1 / kind = 2, `raw` = 2) whose `raw` field holds the object's own message. Field
//! numbers are those of k8s.io/api's `generated.proto`.

use base64::Engine;
use faros_core::status::Status;
use serde_json::{Map, Value, json};

const MAGIC: &[u8] = b"k8s\0";

type Fields = &'static [(u64, &'static str, Shape)];

/// Field shapes of the messages we decode.
#[derive(Clone, Copy)]
enum Shape {
    Str,
    Bool,
    Int,
    RepeatedStr,
    Msg(Fields),
    RepeatedMsg(Fields),
    /// `map<string, string>`.
    MapStr,
    /// `map<string, bytes>`.
    MapBytes,
    /// `map<string, ExtraValue>` where ExtraValue is `{ repeated string items = 1 }`.
    ExtraMap,
    /// `meta.v1.Time` / `MicroTime` (`seconds` = 1, `nanos` = 2), rendered RFC 3339.
    Time,
}

const OWNER_REFERENCE: Fields = &[
    (1, "kind", Shape::Str),
    (3, "name", Shape::Str),
    (4, "uid", Shape::Str),
    (5, "apiVersion", Shape::Str),
    (6, "controller", Shape::Bool),
    (7, "blockOwnerDeletion", Shape::Bool),
];
const OBJECT_META: Fields = &[
    (1, "name", Shape::Str),
    (2, "generateName", Shape::Str),
    (3, "namespace", Shape::Str),
    (5, "uid", Shape::Str),
    (6, "resourceVersion", Shape::Str),
    (7, "generation", Shape::Int),
    (11, "labels", Shape::MapStr),
    (12, "annotations", Shape::MapStr),
    (13, "ownerReferences", Shape::RepeatedMsg(OWNER_REFERENCE)),
    (14, "finalizers", Shape::RepeatedStr),
];
const RESOURCE_ATTRIBUTES: Fields = &[
    (1, "namespace", Shape::Str),
    (2, "verb", Shape::Str),
    (3, "group", Shape::Str),
    (4, "version", Shape::Str),
    (5, "resource", Shape::Str),
    (6, "subresource", Shape::Str),
    (7, "name", Shape::Str),
];
const NON_RESOURCE_ATTRIBUTES: Fields = &[(1, "path", Shape::Str), (2, "verb", Shape::Str)];
const SSAR_SPEC: Fields = &[
    (1, "resourceAttributes", Shape::Msg(RESOURCE_ATTRIBUTES)),
    (2, "nonResourceAttributes", Shape::Msg(NON_RESOURCE_ATTRIBUTES)),
];
const SAR_SPEC: Fields = &[
    (1, "resourceAttributes", Shape::Msg(RESOURCE_ATTRIBUTES)),
    (2, "nonResourceAttributes", Shape::Msg(NON_RESOURCE_ATTRIBUTES)),
    (3, "user", Shape::Str),
    (4, "groups", Shape::RepeatedStr),
    (5, "extra", Shape::ExtraMap),
    (6, "uid", Shape::Str),
];
const TOKEN_REVIEW_SPEC: Fields = &[(1, "token", Shape::Str), (2, "audiences", Shape::RepeatedStr)];
const POLICY_RULE: Fields = &[
    (1, "verbs", Shape::RepeatedStr),
    (2, "apiGroups", Shape::RepeatedStr),
    (3, "resources", Shape::RepeatedStr),
    (4, "resourceNames", Shape::RepeatedStr),
    (5, "nonResourceURLs", Shape::RepeatedStr),
];
const SELECTOR_REQUIREMENT: Fields = &[
    (1, "key", Shape::Str),
    (2, "operator", Shape::Str),
    (3, "values", Shape::RepeatedStr),
];
const LABEL_SELECTOR: Fields = &[
    (1, "matchLabels", Shape::MapStr),
    (2, "matchExpressions", Shape::RepeatedMsg(SELECTOR_REQUIREMENT)),
];
const AGGREGATION_RULE: Fields = &[(1, "clusterRoleSelectors", Shape::RepeatedMsg(LABEL_SELECTOR))];
const SUBJECT: Fields = &[
    (1, "kind", Shape::Str),
    (2, "apiGroup", Shape::Str),
    (3, "name", Shape::Str),
    (4, "namespace", Shape::Str),
];
const ROLE_REF: Fields = &[
    (1, "apiGroup", Shape::Str),
    (2, "kind", Shape::Str),
    (3, "name", Shape::Str),
];
const OBJECT_REFERENCE: Fields = &[
    (1, "kind", Shape::Str),
    (2, "namespace", Shape::Str),
    (3, "name", Shape::Str),
    (4, "uid", Shape::Str),
    (5, "apiVersion", Shape::Str),
    (6, "resourceVersion", Shape::Str),
    (7, "fieldPath", Shape::Str),
];
const LOCAL_OBJECT_REFERENCE: Fields = &[(1, "name", Shape::Str)];
const LEASE_SPEC: Fields = &[
    (1, "holderIdentity", Shape::Str),
    (2, "leaseDurationSeconds", Shape::Int),
    (3, "acquireTime", Shape::Time),
    (4, "renewTime", Shape::Time),
    (5, "leaseTransitions", Shape::Int),
    (6, "strategy", Shape::Str),
    (7, "preferredHolder", Shape::Str),
];

/// The top-level message of each kind we accept in protobuf.
fn kind_fields(kind: &str) -> Option<Fields> {
    const META: (u64, &str, Shape) = (1, "metadata", Shape::Msg(OBJECT_META));
    Some(match kind {
        "SelfSubjectAccessReview" => &[META, (2, "spec", Shape::Msg(SSAR_SPEC))],
        "SubjectAccessReview" | "LocalSubjectAccessReview" => &[META, (2, "spec", Shape::Msg(SAR_SPEC))],
        "TokenReview" => &[META, (2, "spec", Shape::Msg(TOKEN_REVIEW_SPEC))],
        "Namespace" => &[META, (2, "spec", Shape::Msg(&[(1, "finalizers", Shape::RepeatedStr)]))],
        "ConfigMap" => &[
            META,
            (2, "data", Shape::MapStr),
            (3, "binaryData", Shape::MapBytes),
            (4, "immutable", Shape::Bool),
        ],
        "Secret" => &[
            META,
            (2, "data", Shape::MapBytes),
            (3, "type", Shape::Str),
            (4, "stringData", Shape::MapStr),
            (5, "immutable", Shape::Bool),
        ],
        "ServiceAccount" => &[
            META,
            (2, "secrets", Shape::RepeatedMsg(OBJECT_REFERENCE)),
            (3, "imagePullSecrets", Shape::RepeatedMsg(LOCAL_OBJECT_REFERENCE)),
            (4, "automountServiceAccountToken", Shape::Bool),
        ],
        "Role" => &[META, (2, "rules", Shape::RepeatedMsg(POLICY_RULE))],
        "ClusterRole" => &[
            META,
            (2, "rules", Shape::RepeatedMsg(POLICY_RULE)),
            (3, "aggregationRule", Shape::Msg(AGGREGATION_RULE)),
        ],
        "RoleBinding" | "ClusterRoleBinding" => &[
            META,
            (2, "subjects", Shape::RepeatedMsg(SUBJECT)),
            (3, "roleRef", Shape::Msg(ROLE_REF)),
        ],
        "Lease" => &[META, (2, "spec", Shape::Msg(LEASE_SPEC))],
        _ => return None,
    })
}

fn bad(msg: &str) -> Status {
    Status::bad_request(format!("error decoding protobuf request body: {msg}"))
}

/// One decoded field value.
enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(buf: &[u8], pos: &mut usize) -> Result<u64, Status> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos).ok_or_else(|| bad("truncated varint"))?;
        *pos += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(bad("varint too long"))
}

/// `(field number, value)` of every varint and length-delimited field; fixed-width ones are skipped.
fn fields(buf: &[u8]) -> Result<Vec<(u64, Wire<'_>)>, Status> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let tag = varint(buf, &mut pos)?;
        match tag & 7 {
            0 => out.push((tag >> 3, Wire::Varint(varint(buf, &mut pos)?))),
            1 => pos += 8,
            5 => pos += 4,
            2 => {
                let len = usize::try_from(varint(buf, &mut pos)?).map_err(|_| bad("length overflow"))?;
                let end = pos
                    .checked_add(len)
                    .filter(|e| *e <= buf.len())
                    .ok_or_else(|| bad("truncated field"))?;
                out.push((tag >> 3, Wire::Bytes(&buf[pos..end])));
                pos = end;
            }
            _ => return Err(bad("unsupported wire type")),
        }
    }
    if pos > buf.len() {
        return Err(bad("truncated message"));
    }
    Ok(out)
}

fn bytes_of<'a>(w: &Wire<'a>) -> Result<&'a [u8], Status> {
    match w {
        Wire::Bytes(b) => Ok(b),
        Wire::Varint(_) => Err(bad("expected a length-delimited field")),
    }
}

fn text(b: &[u8]) -> Result<String, Status> {
    String::from_utf8(b.to_vec()).map_err(|_| bad("string field is not UTF-8"))
}

/// A map entry message: key = 1, value = 2.
fn map_entry(b: &[u8]) -> Result<(String, &[u8]), Status> {
    let mut key = String::new();
    let mut value: &[u8] = &[];
    for (n, w) in fields(b)? {
        match n {
            1 => key = text(bytes_of(&w)?)?,
            2 => value = bytes_of(&w)?,
            _ => {}
        }
    }
    Ok((key, value))
}

fn time(b: &[u8]) -> Result<Value, Status> {
    let (mut seconds, mut nanos) = (0i64, 0i64);
    for (n, w) in fields(b)? {
        if let Wire::Varint(v) = w {
            match n {
                1 => seconds = v as i64,
                2 => nanos = v as i64,
                _ => {}
            }
        }
    }
    let ts = jiff::Timestamp::new(seconds, nanos as i32).map_err(|e| bad(&e.to_string()))?;
    Ok(Value::String(if nanos == 0 {
        ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    } else {
        ts.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
    }))
}

fn message(buf: &[u8], shape: Fields) -> Result<Value, Status> {
    let mut out = Map::new();
    for (number, wire) in fields(buf)? {
        let Some((_, name, kind)) = shape.iter().find(|(n, _, _)| *n == number) else {
            continue;
        };
        let name = name.to_string();
        match (kind, &wire) {
            (Shape::Bool, Wire::Varint(v)) => {
                out.insert(name, Value::Bool(*v != 0));
            }
            (Shape::Int, Wire::Varint(v)) => {
                out.insert(name, json!(*v as i64));
            }
            (Shape::Bool | Shape::Int, Wire::Bytes(_)) => return Err(bad("expected a varint field")),
            (Shape::Str, w) => {
                out.insert(name, Value::String(text(bytes_of(w)?)?));
            }
            (Shape::Time, w) => {
                out.insert(name, time(bytes_of(w)?)?);
            }
            (Shape::RepeatedStr, w) => {
                let item = Value::String(text(bytes_of(w)?)?);
                push(&mut out, name, item);
            }
            (Shape::Msg(inner), w) => {
                out.insert(name, message(bytes_of(w)?, inner)?);
            }
            (Shape::RepeatedMsg(inner), w) => {
                let item = message(bytes_of(w)?, inner)?;
                push(&mut out, name, item);
            }
            (Shape::MapStr | Shape::MapBytes, w) => {
                let (k, v) = map_entry(bytes_of(w)?)?;
                let v = match kind {
                    Shape::MapBytes => Value::String(base64::engine::general_purpose::STANDARD.encode(v)),
                    _ => Value::String(text(v)?),
                };
                let map = out.entry(name).or_insert_with(|| json!({}));
                map[k] = v;
            }
            (Shape::ExtraMap, w) => {
                let (k, v) = map_entry(bytes_of(w)?)?;
                let mut items = Vec::new();
                for (m, item) in fields(v)? {
                    if m == 1 {
                        items.push(Value::String(text(bytes_of(&item)?)?));
                    }
                }
                let map = out.entry(name).or_insert_with(|| json!({}));
                map[k] = Value::Array(items);
            }
        }
    }
    Ok(Value::Object(out))
}

fn push(out: &mut Map<String, Value>, name: String, item: Value) {
    let list = out.entry(name).or_insert_with(|| json!([]));
    if let Some(a) = list.as_array_mut() {
        a.push(item);
    }
}

/// Decodes a protobuf-encoded object of a supported kind into its JSON form.
pub fn decode(body: &[u8]) -> Result<Value, Status> {
    let unknown = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| bad("missing the k8s protobuf magic prefix"))?;
    let mut api_version = String::new();
    let mut kind = String::new();
    let mut raw: &[u8] = &[];
    for (n, w) in fields(unknown)? {
        match n {
            1 => {
                for (m, v) in fields(bytes_of(&w)?)? {
                    match m {
                        1 => api_version = text(bytes_of(&v)?)?,
                        2 => kind = text(bytes_of(&v)?)?,
                        _ => {}
                    }
                }
            }
            2 => raw = bytes_of(&w)?,
            _ => {}
        }
    }
    let shape = kind_fields(&kind).ok_or_else(|| {
        Status::unsupported_media_type(format!(
            "protobuf request bodies are accepted for built-in kinds kubectl creates, not {kind:?}; send application/json"
        ))
    })?;
    let mut obj = message(raw, shape)?;
    obj["apiVersion"] = json!(api_version);
    obj["kind"] = json!(kind);
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![((n << 3) | 2) as u8, bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    }

    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let type_meta = [field(1, api_version.as_bytes()), field(2, kind.as_bytes())].concat();
        [MAGIC.to_vec(), field(1, &type_meta), field(2, raw)].concat()
    }

    #[test]
    fn decodes_self_subject_access_review() {
        let attrs = [field(1, b"default"), field(2, b"create"), field(5, b"secrets")].concat();
        let raw = [field(1, b""), field(2, &field(1, &attrs))].concat();
        let got = decode(&envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview", &raw)).unwrap();
        assert_eq!(got["kind"], "SelfSubjectAccessReview");
        assert_eq!(
            got["spec"]["resourceAttributes"],
            json!({"namespace": "default", "verb": "create", "resource": "secrets"})
        );
    }

    #[test]
    fn decodes_configmap_with_maps_bools_and_labels() {
        let meta = [
            field(1, b"cm"),
            field(11, &[field(1, b"app"), field(2, b"web")].concat()),
        ]
        .concat();
        let raw = [
            field(1, &meta),
            field(2, &[field(1, b"a"), field(2, b"1")].concat()),
            field(3, &[field(1, b"bin"), field(2, &[0xff, 0x00])].concat()),
            vec![(4 << 3) as u8, 1],
        ]
        .concat();
        let got = decode(&envelope("v1", "ConfigMap", &raw)).unwrap();
        assert_eq!(
            got,
            json!({"metadata": {"name": "cm", "labels": {"app": "web"}}, "data": {"a": "1"}, "binaryData": {"bin": "/wA="}, "immutable": true, "apiVersion": "v1", "kind": "ConfigMap"})
        );
    }

    #[test]
    fn refuses_other_kinds_and_garbage() {
        assert_eq!(decode(&envelope("apps/v1", "Deployment", &[])).unwrap_err().code, 415);
        assert_eq!(decode(b"nope").unwrap_err().code, 400);
        assert_eq!(decode(&[MAGIC, &[0x0a, 0x7f]].concat()).unwrap_err().code, 400);
    }
}
