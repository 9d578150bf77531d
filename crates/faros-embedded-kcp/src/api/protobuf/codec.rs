//! One message between its protobuf bytes and its JSON form, driven by the tables in `schema`.
//!
//! Decoding follows Go's JSON view of the decoded struct: an empty singular string or an empty
//! `Time` is what a Go client sends for an unset field and becomes no field (repeated strings keep
//! their empty items: `apiGroups: [""]` means the core group); unknown field numbers are skipped,
//! as protobuf does. Encoding refuses a JSON field the table does not know instead of dropping it,
//! so an encoded answer never loses data.

use base64::Engine;
use serde_json::{Map, Value};

use super::ProtobufError;
use super::schema::{Fields, Shape};
use super::wire::{self, Wire};

fn malformed(path: &str, what: &str) -> ProtobufError {
    ProtobufError::Malformed(format!("{path}: {what}"))
}

fn bytes_of<'a>(w: Wire<'a>, path: &str) -> Result<&'a [u8], ProtobufError> {
    match w {
        Wire::Bytes(b) => Ok(b),
        Wire::Varint(_) => Err(malformed(path, "expected a length-delimited field")),
    }
}

fn text(b: &[u8], path: &str) -> Result<String, ProtobufError> {
    String::from_utf8(b.to_vec()).map_err(|_| malformed(path, "string is not UTF-8"))
}

fn parse<'a>(buf: &'a [u8], path: &str) -> Result<Vec<(u64, Wire<'a>)>, ProtobufError> {
    wire::fields(buf).map_err(|e| malformed(path, &e.to_string()))
}

/// A map entry message: key = 1, value = 2.
fn map_entry<'a>(b: &'a [u8], path: &str) -> Result<(String, &'a [u8]), ProtobufError> {
    let (mut key, mut value) = (String::new(), &[][..]);
    for (n, w) in parse(b, path)? {
        match n {
            1 => key = text(bytes_of(w, path)?, path)?,
            2 => value = bytes_of(w, path)?,
            _ => {}
        }
    }
    Ok((key, value))
}

fn time(b: &[u8], micro: bool, path: &str) -> Result<Option<Value>, ProtobufError> {
    if b.is_empty() {
        return Ok(None);
    }
    let (mut seconds, mut nanos) = (0i64, 0i64);
    for (n, w) in parse(b, path)? {
        match (n, w) {
            (1, Wire::Varint(v)) => seconds = v as i64,
            (2, Wire::Varint(v)) => nanos = v as i64,
            _ => {}
        }
    }
    // Go keeps seconds for Time and microseconds for MicroTime, whatever the wire carried.
    let nanos = if micro { nanos - nanos % 1000 } else { 0 };
    let nanos = i32::try_from(nanos).map_err(|_| malformed(path, "nanos out of range"))?;
    let ts = jiff::Timestamp::new(seconds, nanos).map_err(|e| malformed(path, &e.to_string()))?;
    let format = if micro {
        "%Y-%m-%dT%H:%M:%S.%6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Ok(Some(Value::String(ts.strftime(format).to_string())))
}

fn push(out: &mut Map<String, Value>, name: &str, item: Value) {
    if let Value::Array(a) = out.entry(name).or_insert_with(|| Value::Array(Vec::new())) {
        a.push(item);
    }
}

fn insert_entry(out: &mut Map<String, Value>, name: &str, key: String, value: Value) {
    if let Value::Object(m) = out.entry(name).or_insert_with(|| Value::Object(Map::new())) {
        m.insert(key, value);
    }
}

/// Decodes one message into its JSON object.
pub fn decode(buf: &[u8], shape: Fields, path: &str) -> Result<Map<String, Value>, ProtobufError> {
    let b64 = &base64::engine::general_purpose::STANDARD;
    let mut out = Map::new();
    for (number, w) in parse(buf, path)? {
        let Some((_, name, kind)) = shape.iter().find(|(n, _, _)| *n == number) else {
            continue;
        };
        let here = format!("{path}.{name}");
        match (kind, w) {
            (Shape::Bool, Wire::Varint(v)) => {
                out.insert((*name).into(), Value::Bool(v != 0));
            }
            (Shape::Int, Wire::Varint(v)) => {
                out.insert((*name).into(), Value::from(v as i64));
            }
            (Shape::Bool | Shape::Int, Wire::Bytes(_)) => return Err(malformed(&here, "expected a varint")),
            (_, Wire::Varint(_)) => return Err(malformed(&here, "expected a length-delimited field")),
            (Shape::Str, Wire::Bytes(b)) => {
                if !b.is_empty() {
                    out.insert((*name).into(), Value::String(text(b, &here)?));
                }
            }
            (Shape::Time | Shape::MicroTime, Wire::Bytes(b)) => {
                if let Some(t) = time(b, matches!(kind, Shape::MicroTime), &here)? {
                    out.insert((*name).into(), t);
                }
            }
            (Shape::FieldsV1, Wire::Bytes(b)) => {
                let mut raw = Value::Object(Map::new());
                for (n, w) in parse(b, &here)? {
                    if n == 1 {
                        raw = serde_json::from_slice(bytes_of(w, &here)?)
                            .map_err(|e| malformed(&here, &format!("fieldsV1 is not JSON: {e}")))?;
                    }
                }
                out.insert((*name).into(), raw);
            }
            (Shape::RepeatedStr, Wire::Bytes(b)) => push(&mut out, name, Value::String(text(b, &here)?)),
            (Shape::Msg(inner), Wire::Bytes(b)) => {
                out.insert((*name).into(), Value::Object(decode(b, inner, &here)?));
            }
            (Shape::RepeatedMsg(inner), Wire::Bytes(b)) => {
                push(&mut out, name, Value::Object(decode(b, inner, &here)?));
            }
            (Shape::MapStr, Wire::Bytes(b)) => {
                let (k, v) = map_entry(b, &here)?;
                insert_entry(&mut out, name, k, Value::String(text(v, &here)?));
            }
            (Shape::MapBytes, Wire::Bytes(b)) => {
                let (k, v) = map_entry(b, &here)?;
                insert_entry(&mut out, name, k, Value::String(b64.encode(v)));
            }
            (Shape::ExtraMap, Wire::Bytes(b)) => {
                let (k, v) = map_entry(b, &here)?;
                let mut items = Vec::new();
                for (m, item) in parse(v, &here)? {
                    if m == 1 {
                        items.push(Value::String(text(bytes_of(item, &here)?, &here)?));
                    }
                }
                insert_entry(&mut out, name, k, Value::Array(items));
            }
        }
    }
    Ok(out)
}

fn refuse(path: &str, what: &str) -> ProtobufError {
    ProtobufError::NotEncodable(format!("{path}: {what}"))
}

fn str_of<'a>(v: &'a Value, path: &str) -> Result<&'a str, ProtobufError> {
    v.as_str().ok_or_else(|| refuse(path, "expected a string"))
}

fn object_of<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>, ProtobufError> {
    v.as_object().ok_or_else(|| refuse(path, "expected an object"))
}

fn array_of<'a>(v: &'a Value, path: &str) -> Result<&'a Vec<Value>, ProtobufError> {
    v.as_array().ok_or_else(|| refuse(path, "expected an array"))
}

fn encode_time(s: &str, micro: bool, path: &str) -> Result<Vec<u8>, ProtobufError> {
    let ts: jiff::Timestamp = s.parse().map_err(|_| refuse(path, "not an RFC 3339 time"))?;
    let nanos = if micro {
        let n = i64::from(ts.subsec_nanosecond());
        n - n % 1000
    } else {
        0
    };
    let mut out = Vec::new();
    wire::put_varint_field(&mut out, 1, ts.as_second() as u64);
    if nanos != 0 {
        wire::put_varint_field(&mut out, 2, nanos as u64);
    }
    Ok(out)
}

/// Encodes a JSON object as one message. `skip` names keys that are not fields of the message
/// (`apiVersion` and `kind` of an object, carried by the envelope instead).
pub fn encode(obj: &Map<String, Value>, shape: Fields, skip: &[&str], path: &str) -> Result<Vec<u8>, ProtobufError> {
    if let Some(unknown) = obj
        .keys()
        .find(|k| !skip.contains(&k.as_str()) && !shape.iter().any(|(_, name, _)| name == k))
    {
        return Err(refuse(&format!("{path}.{unknown}"), "no protobuf field"));
    }
    let b64 = &base64::engine::general_purpose::STANDARD;
    let mut out = Vec::new();
    for (number, name, kind) in shape {
        let Some(v) = obj.get(*name).filter(|v| !v.is_null()) else {
            continue;
        };
        let n = *number;
        let here = format!("{path}.{name}");
        match kind {
            Shape::Str => wire::put_bytes_field(&mut out, n, str_of(v, &here)?.as_bytes()),
            Shape::Bool => {
                let b = v.as_bool().ok_or_else(|| refuse(&here, "expected a boolean"))?;
                wire::put_varint_field(&mut out, n, u64::from(b));
            }
            Shape::Int => {
                let i = v.as_i64().ok_or_else(|| refuse(&here, "expected an integer"))?;
                wire::put_varint_field(&mut out, n, i as u64);
            }
            Shape::Time | Shape::MicroTime => {
                let t = encode_time(str_of(v, &here)?, matches!(kind, Shape::MicroTime), &here)?;
                wire::put_bytes_field(&mut out, n, &t);
            }
            Shape::FieldsV1 => {
                let raw = serde_json::to_vec(v).map_err(|e| refuse(&here, &e.to_string()))?;
                let mut msg = Vec::new();
                wire::put_bytes_field(&mut msg, 1, &raw);
                wire::put_bytes_field(&mut out, n, &msg);
            }
            Shape::RepeatedStr => {
                for item in array_of(v, &here)? {
                    wire::put_bytes_field(&mut out, n, str_of(item, &here)?.as_bytes());
                }
            }
            Shape::Msg(inner) => {
                let msg = encode(object_of(v, &here)?, inner, &[], &here)?;
                wire::put_bytes_field(&mut out, n, &msg);
            }
            Shape::RepeatedMsg(inner) => {
                for item in array_of(v, &here)? {
                    let msg = encode(object_of(item, &here)?, inner, &[], &here)?;
                    wire::put_bytes_field(&mut out, n, &msg);
                }
            }
            Shape::MapStr | Shape::MapBytes | Shape::ExtraMap => {
                for (key, value) in object_of(v, &here)? {
                    let here = format!("{here}.{key}");
                    let value = match kind {
                        Shape::MapStr => str_of(value, &here)?.as_bytes().to_vec(),
                        Shape::MapBytes => b64
                            .decode(str_of(value, &here)?)
                            .map_err(|_| refuse(&here, "not base64"))?,
                        _ => {
                            let mut items = Vec::new();
                            for item in array_of(value, &here)? {
                                wire::put_bytes_field(&mut items, 1, str_of(item, &here)?.as_bytes());
                            }
                            items
                        }
                    };
                    let mut entry = Vec::new();
                    wire::put_bytes_field(&mut entry, 1, key.as_bytes());
                    wire::put_bytes_field(&mut entry, 2, &value);
                    wire::put_bytes_field(&mut out, n, &entry);
                }
            }
        }
    }
    Ok(out)
}
