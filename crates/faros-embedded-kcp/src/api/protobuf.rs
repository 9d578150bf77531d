//! Kubernetes' protobuf encoding for the built-in kinds and the meta types Go clients use.
//!
//! Go clients (client-go: helm, kubectl's typed clients, controllers) send
//! `application/vnd.kubernetes.protobuf` bodies for built-in kinds and for `DeleteOptions`, and
//! ask for protobuf answers first. Bodies of every kind in `schema::KINDS`, of their lists, of
//! `Status` and of `DeleteOptions` are decoded into their JSON form and encoded back from it; a
//! protobuf body of any other kind is refused with 415 (Go clients send custom kinds as JSON).
//! Everything here is IO-free.
//!
//! Wire format: the 4-byte magic `k8s\0`, then a `runtime.Unknown` message (`typeMeta` = 1 with
//! apiVersion = 1 / kind = 2, `raw` = 2) whose `raw` field holds the object's own message. Watch
//! streams (`;stream=watch`) carry length-prefixed (4 bytes, big-endian) `WatchEvent` messages
//! without the envelope, whose `object.raw` is an enveloped object.

mod codec;
mod schema;
pub(in crate::api) mod wire;

use faros_core::status::Status;
use serde_json::{Map, Value};

use schema::Fields;

/// The media type of protobuf bodies.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The media type of a protobuf watch stream.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

const MAGIC: &[u8] = b"k8s\0";

/// What went wrong between protobuf and JSON.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtobufError {
    /// The bytes are not a valid message of the kind they claim to be.
    #[error("error decoding protobuf request body: {0}")]
    Malformed(String),
    /// A kind without a protobuf form here.
    #[error("protobuf bodies are accepted for built-in kinds, not {0}; send application/json")]
    UnsupportedKind(String),
    /// The JSON value has no lossless protobuf form (a field the message does not have).
    #[error("cannot encode as protobuf: {0}")]
    NotEncodable(String),
}

impl From<ProtobufError> for Status {
    fn from(e: ProtobufError) -> Self {
        match e {
            ProtobufError::UnsupportedKind(_) => Status::unsupported_media_type(e.to_string()),
            ProtobufError::Malformed(_) => Status::bad_request(e.to_string()),
            ProtobufError::NotEncodable(_) => Status::internal(e.to_string()),
        }
    }
}

/// The message of a top-level kind.
#[derive(Clone, Copy)]
enum Message {
    Object(Fields),
    /// `<Kind>List` of a built-in kind: `metadata` = 1 (ListMeta), `items` = 2.
    List(Fields),
}

fn message(api_version: &str, kind: &str) -> Option<Message> {
    match kind {
        "Status" => return Some(Message::Object(schema::STATUS)),
        // Registered in every group version, as in Kubernetes.
        "DeleteOptions" => return Some(Message::Object(schema::DELETE_OPTIONS)),
        _ => {}
    }
    if let Some(fields) = schema::kind(api_version, kind) {
        return Some(Message::Object(fields));
    }
    let item = kind.strip_suffix("List")?;
    schema::kind(api_version, item).map(Message::List)
}

/// Whether objects of this kind (or lists of it) have a protobuf form.
pub fn supports(api_version: &str, kind: &str) -> bool {
    message(api_version, kind).is_some()
}

const TYPE_KEYS: &[&str] = &["apiVersion", "kind"];

/// Splits the envelope into `(apiVersion, kind, raw)`.
fn open(body: &[u8]) -> Result<(String, String, &[u8]), ProtobufError> {
    let unknown = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| ProtobufError::Malformed("missing the k8s protobuf magic prefix".into()))?;
    let malformed = |e: wire::WireError| ProtobufError::Malformed(e.to_string());
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    let text =
        |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| ProtobufError::Malformed("typeMeta is not UTF-8".into()));
    for (n, w) in wire::fields(unknown).map_err(malformed)? {
        match (n, w) {
            (1, wire::Wire::Bytes(type_meta)) => {
                for (m, v) in wire::fields(type_meta).map_err(malformed)? {
                    match (m, v) {
                        (1, wire::Wire::Bytes(b)) => api_version = text(b)?,
                        (2, wire::Wire::Bytes(b)) => kind = text(b)?,
                        _ => {}
                    }
                }
            }
            (2, wire::Wire::Bytes(b)) => raw = b,
            _ => {}
        }
    }
    Ok((api_version, kind, raw))
}

fn decode_value(body: &[u8]) -> Result<Value, ProtobufError> {
    let (api_version, kind, raw) = open(body)?;
    let msg = message(&api_version, &kind).ok_or_else(|| ProtobufError::UnsupportedKind(format!("{kind:?}")))?;
    let mut obj = match msg {
        Message::Object(fields) => codec::decode(raw, fields, &kind)?,
        Message::List(item) => {
            let mut out = codec::decode(raw, schema::LIST, &kind)?;
            let mut items = Vec::new();
            for (n, w) in wire::fields(raw).map_err(|e| ProtobufError::Malformed(e.to_string()))? {
                if let (2, wire::Wire::Bytes(b)) = (n, w) {
                    items.push(Value::Object(codec::decode(b, item, &format!("{kind}.items"))?));
                }
            }
            out.insert("items".into(), Value::Array(items));
            out
        }
    };
    obj.insert("apiVersion".into(), Value::String(api_version));
    obj.insert("kind".into(), Value::String(kind));
    Ok(Value::Object(obj))
}

/// Decodes a protobuf request body into the JSON form of its object.
pub fn decode(body: &[u8]) -> Result<Value, Status> {
    decode_value(body).map_err(Status::from)
}

/// Decodes a protobuf `DeleteOptions` body (the body of a DELETE from a Go client).
pub fn decode_delete_options(body: &[u8]) -> Result<Value, Status> {
    let value = decode_value(body)?;
    match value.get("kind").and_then(Value::as_str) {
        Some("DeleteOptions") => Ok(value),
        other => Err(Status::bad_request(format!(
            "a DELETE body must be DeleteOptions, not {:?}",
            other.unwrap_or_default()
        ))),
    }
}

fn seal(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::new();
    wire::put_bytes_field(&mut type_meta, 1, api_version.as_bytes());
    wire::put_bytes_field(&mut type_meta, 2, kind.as_bytes());
    let mut out = MAGIC.to_vec();
    wire::put_bytes_field(&mut out, 1, &type_meta);
    wire::put_bytes_field(&mut out, 2, raw);
    out
}

/// Encodes an object, a list or a `Status` (named by its `apiVersion` and `kind`) as a protobuf
/// body. Fails, rather than dropping data, when a field has no protobuf form.
pub fn encode(value: &Value) -> Result<Vec<u8>, ProtobufError> {
    let obj = value
        .as_object()
        .ok_or_else(|| ProtobufError::NotEncodable("not an object".into()))?;
    let field = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (field("apiVersion"), field("kind"));
    let msg = message(api_version, kind).ok_or_else(|| ProtobufError::NotEncodable(format!("kind {kind:?}")))?;
    let raw = match msg {
        Message::Object(fields) => codec::encode(obj, fields, TYPE_KEYS, kind)?,
        Message::List(item) => {
            let head: Map<String, Value> = obj
                .iter()
                .filter(|(k, _)| k.as_str() != "items")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut raw = codec::encode(&head, schema::LIST, TYPE_KEYS, kind)?;
            let items = obj
                .get("items")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for it in items {
                let it = it
                    .as_object()
                    .ok_or_else(|| ProtobufError::NotEncodable(format!("{kind}.items: not an object")))?;
                let msg = codec::encode(it, item, TYPE_KEYS, &format!("{kind}.items"))?;
                wire::put_bytes_field(&mut raw, 2, &msg);
            }
            raw
        }
    };
    Ok(seal(api_version, kind, &raw))
}

/// The message of one item of a `<Kind>List` (`list_kind`): what [`encode`] writes per item, so a
/// list can be assembled by [`encode_list`] from item messages encoded (and kept) earlier.
pub fn encode_list_item(api_version: &str, list_kind: &str, item: &Value) -> Result<Vec<u8>, ProtobufError> {
    let Some(Message::List(fields)) = message(api_version, list_kind) else {
        return Err(ProtobufError::NotEncodable(format!("kind {list_kind:?}")));
    };
    let item = item
        .as_object()
        .ok_or_else(|| ProtobufError::NotEncodable(format!("{list_kind}.items: not an object")))?;
    codec::encode(item, fields, TYPE_KEYS, &format!("{list_kind}.items"))
}

/// A `<Kind>List` body from its `head` (`apiVersion`, `kind`, `metadata`: everything but `items`)
/// and messages of [`encode_list_item`]; the same bytes [`encode`] writes for the whole list (lists
/// are served streamed, from [`encode_list_head`] and [`put_list_item`]).
#[cfg(test)]
pub fn encode_list<'a>(
    head: &Map<String, Value>,
    items: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Vec<u8>, ProtobufError> {
    let items: Vec<&[u8]> = items.into_iter().collect();
    let mut out = encode_list_head(head, items.iter().map(|i| i.len()))?;
    for item in items {
        put_list_item(&mut out, item);
    }
    Ok(out)
}

/// What a `<Kind>List` body holds before its items (see [`encode_list`]), given the lengths of the
/// item messages that follow it, each written by [`put_list_item`]: a list can then be streamed.
pub fn encode_list_head(
    head: &Map<String, Value>,
    item_lens: impl IntoIterator<Item = usize>,
) -> Result<Vec<u8>, ProtobufError> {
    let field = |k: &str| head.get(k).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (field("apiVersion"), field("kind"));
    let Some(Message::List(_)) = message(api_version, kind) else {
        return Err(ProtobufError::NotEncodable(format!("kind {kind:?}")));
    };
    let list_meta = codec::encode(head, schema::LIST, TYPE_KEYS, kind)?;
    // Lists run to megabytes: the envelope's header is written before the items rather than
    // building the list and copying it into the envelope (what `seal` does).
    let raw_len = list_meta.len() + item_lens.into_iter().map(|len| bytes_field_len(2, len)).sum::<usize>();
    let mut type_meta = Vec::new();
    wire::put_bytes_field(&mut type_meta, 1, api_version.as_bytes());
    wire::put_bytes_field(&mut type_meta, 2, kind.as_bytes());
    // The head only: the items follow in chunks of their own (`read::list_body`).
    let raw_header_len = bytes_field_len(2, raw_len) - raw_len;
    let mut out =
        Vec::with_capacity(MAGIC.len() + bytes_field_len(1, type_meta.len()) + raw_header_len + list_meta.len());
    out.extend_from_slice(MAGIC);
    wire::put_bytes_field(&mut out, 1, &type_meta);
    wire::put_varint(&mut out, (2 << 3) | 2);
    wire::put_varint(&mut out, raw_len as u64);
    out.extend_from_slice(&list_meta);
    Ok(out)
}

/// Appends one item message of a list after [`encode_list_head`].
pub fn put_list_item(out: &mut Vec<u8>, item: &[u8]) {
    wire::put_bytes_field(out, 2, item);
}

/// The encoded size of a length-delimited field of `len` bytes.
fn bytes_field_len(field: u64, len: usize) -> usize {
    let varint_len = |v: u64| (64 - (v | 1).leading_zeros() as usize).div_ceil(7);
    varint_len((field << 3) | 2) + varint_len(len as u64) + len
}

/// One frame of a protobuf watch stream: `type` and the enveloped object, length-prefixed.
pub fn encode_watch_event(event_type: &str, object: &Value) -> Result<Vec<u8>, ProtobufError> {
    let mut raw_extension = Vec::new();
    wire::put_bytes_field(&mut raw_extension, 1, &encode(object)?);
    let mut event = Vec::new();
    wire::put_bytes_field(&mut event, 1, event_type.as_bytes());
    wire::put_bytes_field(&mut event, 2, &raw_extension);
    let len = u32::try_from(event.len()).map_err(|_| ProtobufError::NotEncodable("watch event over 4 GiB".into()))?;
    let mut out = len.to_be_bytes().to_vec();
    out.extend_from_slice(&event);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::schema::{KINDS, Shape};
    use super::*;
    use serde_json::json;

    /// An object with every field of `fields` set, negative integers and empty repeated items
    /// included.
    fn sample(fields: Fields) -> Value {
        let mut out = Map::new();
        for (n, name, shape) in fields {
            let v = match shape {
                Shape::Str => json!(format!("{name}-{n}")),
                Shape::Bool => json!(n % 2 == 0),
                Shape::Int => json!(if n % 2 == 0 { -7 } else { 1i64 << 40 }),
                Shape::RepeatedStr => json!(["a", ""]),
                Shape::Msg(inner) => sample(inner),
                Shape::RepeatedMsg(inner) => json!([sample(inner), sample(inner)]),
                Shape::MapStr => json!({"k": "v", "app.kubernetes.io/name": ""}),
                Shape::MapBytes => json!({"k": "AP8=", "empty": ""}),
                Shape::ExtraMap => json!({"scopes": ["x", "y"], "none": []}),
                Shape::Time => json!("2026-01-02T03:04:05Z"),
                Shape::MicroTime => json!("2026-01-02T03:04:05.123456Z"),
                Shape::FieldsV1 => json!({"f:data": {"f:a": {}}, ".": {}}),
            };
            out.insert((*name).into(), v);
        }
        Value::Object(out)
    }

    fn with_type(mut v: Value, api_version: &str, kind: &str) -> Value {
        v["apiVersion"] = json!(api_version);
        v["kind"] = json!(kind);
        v
    }

    #[test]
    fn every_field_of_every_built_in_kind_round_trips() {
        for (api_version, kind, fields) in KINDS {
            let obj = with_type(sample(fields), api_version, kind);
            let bytes = encode(&obj).unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert_eq!(decode(&bytes).unwrap(), obj, "{api_version} {kind}");
        }
    }

    #[test]
    fn lists_status_and_delete_options_round_trip() {
        let (_, _, secret) = KINDS.iter().find(|(_, k, _)| *k == "Secret").unwrap();
        let item = sample(secret);
        let list = json!({"apiVersion": "v1", "kind": "SecretList",
            "metadata": {"resourceVersion": "12", "continue": "abc", "remainingItemCount": 3},
            "items": [item.clone(), item]});
        let status = json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
            "message": "m", "reason": "Invalid", "code": 422,
            "details": {"name": "n", "kind": "configmaps", "causes": [{"reason": "FieldValueInvalid", "field": "data"}], "retryAfterSeconds": 1}});
        let opts = json!({"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground",
            "gracePeriodSeconds": 0, "preconditions": {"uid": "u", "resourceVersion": "5"}, "dryRun": ["All"], "orphanDependents": false});
        for v in [list, status, opts] {
            assert_eq!(decode(&encode(&v).unwrap()).unwrap(), v);
        }
    }

    #[test]
    fn lists_spliced_from_item_messages_equal_whole_lists() {
        let (_, _, secret) = KINDS.iter().find(|(_, k, _)| *k == "Secret").unwrap();
        let item = with_type(sample(secret), "v1", "Secret");
        for metadata in [
            json!({"resourceVersion": "12"}),
            json!({"resourceVersion": "12", "continue": "abc", "remainingItemCount": 3}),
        ] {
            for items in [vec![], vec![item.clone()], vec![item.clone(), sample(secret)]] {
                let head = json!({"apiVersion": "v1", "kind": "SecretList", "metadata": metadata});
                let mut whole = head.clone();
                whole["items"] = json!(items);
                let messages: Vec<Vec<u8>> = items
                    .iter()
                    .map(|i| encode_list_item("v1", "SecretList", i).unwrap())
                    .collect();
                let spliced = encode_list(head.as_object().unwrap(), messages.iter().map(Vec::as_slice)).unwrap();
                assert_eq!(spliced, encode(&whole).unwrap(), "{whole}");
            }
        }
        for len in [0, 1, 127, 128, 16_383, 16_384, 3_000_000] {
            let mut out = Vec::new();
            wire::put_bytes_field(&mut out, 2, &vec![0; len]);
            assert_eq!(bytes_field_len(2, len), out.len(), "{len}");
        }
        let not_a_list = json!({"apiVersion": "v1", "kind": "Secret"});
        assert!(encode_list(not_a_list.as_object().unwrap(), []).is_err());
        assert!(encode_list_item("v1", "Secret", &item).is_err());
        assert!(encode_list_item("faros.sh/v1alpha1", "ProviderList", &item).is_err());
    }

    /// Bytes kubectl 1.32 sends for `kubectl create configmap c2 -n demo --from-literal=a=b`:
    /// Go writes every non-pointer field, empty ones included.
    const KUBECTL_CONFIGMAP: &[u8] = &[
        0x6b, 0x38, 0x73, 0x00, 0x0a, 0x0f, 0x0a, 0x02, 0x76, 0x31, 0x12, 0x09, 0x43, 0x6f, 0x6e, 0x66, 0x69, 0x67,
        0x4d, 0x61, 0x70, 0x12, 0x20, 0x0a, 0x16, 0x0a, 0x02, 0x63, 0x32, 0x12, 0x00, 0x1a, 0x04, 0x64, 0x65, 0x6d,
        0x6f, 0x22, 0x00, 0x2a, 0x00, 0x32, 0x00, 0x38, 0x00, 0x42, 0x00, 0x12, 0x06, 0x0a, 0x01, 0x61, 0x12, 0x01,
        0x62, 0x1a, 0x00, 0x22, 0x00,
    ];

    #[test]
    fn decodes_what_go_clients_send() {
        assert_eq!(
            decode(KUBECTL_CONFIGMAP).unwrap(),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c2", "namespace": "demo", "generation": 0}, "data": {"a": "b"}})
        );
    }

    #[test]
    fn decodes_a_delete_options_body_and_only_that() {
        let opts = json!({"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"});
        assert_eq!(decode_delete_options(&encode(&opts).unwrap()).unwrap(), opts);
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
        assert_eq!(decode_delete_options(&encode(&cm).unwrap()).unwrap_err().code, 400);
    }

    #[test]
    fn times_keep_go_precision() {
        let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "l", "creationTimestamp": "2026-01-02T03:04:05.999Z"},
            "spec": {"renewTime": "2026-01-02T03:04:05.123456789Z", "acquireTime": "2026-01-02T03:04:05Z"}});
        let got = decode(&encode(&lease).unwrap()).unwrap();
        assert_eq!(got["metadata"]["creationTimestamp"], "2026-01-02T03:04:05Z");
        assert_eq!(got["spec"]["renewTime"], "2026-01-02T03:04:05.123456Z");
        assert_eq!(got["spec"]["acquireTime"], "2026-01-02T03:04:05.000000Z");
    }

    #[test]
    fn refuses_what_it_cannot_represent() {
        let cases: Vec<(Value, &str)> = vec![
            (
                json!({"apiVersion": "faros.sh/v1alpha1", "kind": "Provider"}),
                "kind \"Provider\"",
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "extra": 1}),
                "ConfigMap.extra: no protobuf field",
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": 1}}),
                "ConfigMap.data.a: expected a string",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Secret", "data": {"a": "!"}}),
                "Secret.data.a: not base64",
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMapList", "items": [{"bogus": true}]}),
                "ConfigMap",
            ),
        ];
        for (v, want) in cases {
            let err = encode(&v).unwrap_err();
            assert!(matches!(err, ProtobufError::NotEncodable(_)), "{v}");
            assert!(err.to_string().contains(want), "{v}: {err}");
        }
    }

    #[test]
    fn refuses_other_kinds_and_garbage() {
        assert_eq!(decode(&seal("apps/v1", "Deployment", &[])).unwrap_err().code, 415);
        assert_eq!(
            decode(&seal("faros.sh/v1alpha1", "Provider", &[])).unwrap_err().code,
            415
        );
        assert_eq!(decode(b"nope").unwrap_err().code, 400);
        assert_eq!(decode(&[MAGIC, &[0x0a, 0x7f]].concat()).unwrap_err().code, 400);
        assert_eq!(
            decode(&seal("v1", "ConfigMap", &[0x12, 0x01, 0xff])).unwrap_err().code,
            400
        );
    }

    /// Every truncation and every single-byte corruption of every kind's encoding decodes or fails
    /// with 400/415: bodies come from anyone, and a malformed one must never panic the server.
    #[test]
    fn corrupted_bodies_never_panic() {
        for (api_version, kind, fields) in KINDS {
            let bytes = encode(&with_type(sample(fields), api_version, kind)).unwrap();
            for end in 0..bytes.len() {
                if let Err(s) = decode(&bytes[..end]) {
                    assert!(matches!(s.code, 400 | 415), "{kind} cut at {end}: {s}");
                }
            }
            for at in 0..bytes.len() {
                for flip in [0x01u8, 0x80, 0xff] {
                    let mut bad = bytes.clone();
                    bad[at] ^= flip;
                    let _ = decode(&bad);
                    let _ = decode_delete_options(&bad);
                }
            }
        }
    }

    #[test]
    fn watch_frames_are_length_prefixed_events_around_an_enveloped_object() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
        let frame = encode_watch_event("ADDED", &cm).unwrap();
        let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(len, frame.len() - 4);
        let event = wire::fields(&frame[4..]).unwrap();
        assert_eq!(event[0], (1, wire::Wire::Bytes(b"ADDED")));
        let wire::Wire::Bytes(raw_ext) = event[1].1 else {
            panic!()
        };
        let wire::Wire::Bytes(object) = wire::fields(raw_ext).unwrap()[0].1 else {
            panic!()
        };
        assert_eq!(decode(object).unwrap(), cm);
    }
}
