//! Just enough Kubernetes protobuf to read the review requests kubectl sends in protobuf
//! (`kubectl auth can-i` posts a SelfSubjectAccessReview as `application/vnd.kubernetes.protobuf`
//! and does not retry with JSON). Every other protobuf body is refused with 415.
//!
//! Wire format: the 4-byte magic `k8s\0`, then a `runtime.Unknown` message whose `raw` field holds
//! the object's own message. Only the fields of the review kinds are decoded; the response is JSON,
//! which kubectl accepts as its second choice.

use faros_core::status::Status;
use serde_json::{Map, Value, json};

const MAGIC: &[u8] = b"k8s\0";

/// Field shapes of the messages we decode.
#[derive(Clone, Copy)]
enum Shape {
    Str,
    RepeatedStr,
    Msg(&'static [(u64, &'static str, Shape)]),
    /// `map<string, ExtraValue>` where ExtraValue is `{ repeated string items = 1 }`.
    ExtraMap,
}

const RESOURCE_ATTRIBUTES: &[(u64, &str, Shape)] = &[
    (1, "namespace", Shape::Str),
    (2, "verb", Shape::Str),
    (3, "group", Shape::Str),
    (4, "version", Shape::Str),
    (5, "resource", Shape::Str),
    (6, "subresource", Shape::Str),
    (7, "name", Shape::Str),
];
const NON_RESOURCE_ATTRIBUTES: &[(u64, &str, Shape)] = &[(1, "path", Shape::Str), (2, "verb", Shape::Str)];
const OBJECT_META: &[(u64, &str, Shape)] = &[
    (1, "name", Shape::Str),
    (2, "generateName", Shape::Str),
    (3, "namespace", Shape::Str),
];
const SSAR_SPEC: &[(u64, &str, Shape)] = &[
    (1, "resourceAttributes", Shape::Msg(RESOURCE_ATTRIBUTES)),
    (2, "nonResourceAttributes", Shape::Msg(NON_RESOURCE_ATTRIBUTES)),
];
const SAR_SPEC: &[(u64, &str, Shape)] = &[
    (1, "resourceAttributes", Shape::Msg(RESOURCE_ATTRIBUTES)),
    (2, "nonResourceAttributes", Shape::Msg(NON_RESOURCE_ATTRIBUTES)),
    (3, "user", Shape::Str),
    (4, "groups", Shape::RepeatedStr),
    (5, "extra", Shape::ExtraMap),
    (6, "uid", Shape::Str),
];
const TOKEN_REVIEW_SPEC: &[(u64, &str, Shape)] = &[(1, "token", Shape::Str), (2, "audiences", Shape::RepeatedStr)];

fn review_shape(kind: &str) -> Option<&'static [(u64, &'static str, Shape)]> {
    Some(match kind {
        "SelfSubjectAccessReview" => &[
            (1, "metadata", Shape::Msg(OBJECT_META)),
            (2, "spec", Shape::Msg(SSAR_SPEC)),
        ],
        "SubjectAccessReview" | "LocalSubjectAccessReview" => &[
            (1, "metadata", Shape::Msg(OBJECT_META)),
            (2, "spec", Shape::Msg(SAR_SPEC)),
        ],
        "TokenReview" => &[
            (1, "metadata", Shape::Msg(OBJECT_META)),
            (2, "spec", Shape::Msg(TOKEN_REVIEW_SPEC)),
        ],
        _ => return None,
    })
}

fn bad(msg: &str) -> Status {
    Status::bad_request(format!("error decoding protobuf request body: {msg}"))
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

/// Iterates `(field number, length-delimited bytes)`; other wire types are skipped.
fn fields(buf: &[u8]) -> Result<Vec<(u64, &[u8])>, Status> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let tag = varint(buf, &mut pos)?;
        match tag & 7 {
            0 => {
                varint(buf, &mut pos)?;
            }
            1 => pos += 8,
            5 => pos += 4,
            2 => {
                let len = usize::try_from(varint(buf, &mut pos)?).map_err(|_| bad("length overflow"))?;
                let end = pos
                    .checked_add(len)
                    .filter(|e| *e <= buf.len())
                    .ok_or_else(|| bad("truncated field"))?;
                out.push((tag >> 3, &buf[pos..end]));
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

fn text(b: &[u8]) -> Result<String, Status> {
    String::from_utf8(b.to_vec()).map_err(|_| bad("string field is not UTF-8"))
}

fn message(buf: &[u8], shape: &[(u64, &str, Shape)]) -> Result<Value, Status> {
    let mut out = Map::new();
    for (number, bytes) in fields(buf)? {
        let Some((_, name, kind)) = shape.iter().find(|(n, _, _)| *n == number) else {
            continue;
        };
        match kind {
            Shape::Str => {
                out.insert(name.to_string(), Value::String(text(bytes)?));
            }
            Shape::RepeatedStr => {
                let list = out.entry(name.to_string()).or_insert_with(|| json!([]));
                if let Some(a) = list.as_array_mut() {
                    a.push(Value::String(text(bytes)?));
                }
            }
            Shape::Msg(inner) => {
                out.insert(name.to_string(), message(bytes, inner)?);
            }
            Shape::ExtraMap => {
                let mut key = String::new();
                let mut items = Vec::new();
                for (n, b) in fields(bytes)? {
                    match n {
                        1 => key = text(b)?,
                        2 => {
                            for (m, item) in fields(b)? {
                                if m == 1 {
                                    items.push(Value::String(text(item)?));
                                }
                            }
                        }
                        _ => {}
                    }
                }
                let map = out.entry(name.to_string()).or_insert_with(|| json!({}));
                map[key] = Value::Array(items);
            }
        }
    }
    Ok(Value::Object(out))
}

/// Decodes a protobuf-encoded review into its JSON form.
pub fn decode_review(body: &[u8]) -> Result<Value, Status> {
    let unknown = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| bad("missing the k8s protobuf magic prefix"))?;
    let mut api_version = String::new();
    let mut kind = String::new();
    let mut raw: &[u8] = &[];
    for (n, b) in fields(unknown)? {
        match n {
            1 => {
                for (m, v) in fields(b)? {
                    match m {
                        1 => api_version = text(v)?,
                        2 => kind = text(v)?,
                        _ => {}
                    }
                }
            }
            2 => raw = b,
            _ => {}
        }
    }
    let shape = review_shape(&kind).ok_or_else(|| {
        Status::unsupported_media_type(format!(
            "protobuf is only accepted for review requests, not {kind:?}; send application/json"
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

    #[test]
    fn decodes_self_subject_access_review() {
        let attrs = [field(1, b"default"), field(2, b"create"), field(5, b"secrets")].concat();
        let spec = field(1, &attrs);
        let raw = [field(1, b""), field(2, &spec)].concat();
        let type_meta = [
            field(1, b"authorization.k8s.io/v1"),
            field(2, b"SelfSubjectAccessReview"),
        ]
        .concat();
        let body = [MAGIC.to_vec(), field(1, &type_meta), field(2, &raw)].concat();
        let got = decode_review(&body).unwrap();
        assert_eq!(got["kind"], "SelfSubjectAccessReview");
        assert_eq!(got["apiVersion"], "authorization.k8s.io/v1");
        assert_eq!(
            got["spec"]["resourceAttributes"],
            json!({"namespace": "default", "verb": "create", "resource": "secrets"})
        );
    }

    #[test]
    fn refuses_other_kinds_and_garbage() {
        let type_meta = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
        let body = [MAGIC.to_vec(), field(1, &type_meta)].concat();
        assert_eq!(decode_review(&body).unwrap_err().code, 415);
        assert_eq!(decode_review(b"nope").unwrap_err().code, 400);
        assert_eq!(decode_review(&[MAGIC, &[0x0a, 0x7f]].concat()).unwrap_err().code, 400);
    }
}
