//! Byte encoding of object keys and stored values.
//!
//! A key is `group \0 resource \0 cluster \0 namespace \0 name \0`. Every component is terminated by
//! `\0`, which no Kubernetes name, namespace, group or kcp cluster name can contain, so byte order of the
//! encoding equals the derived `Ord` of [`ObjectKey`], and each of "one resource in all clusters", "one
//! resource in one cluster" and "one resource in one namespace of one cluster" is a contiguous range.
//!
//! A stored value is the object's resourceVersion (8 bytes, big endian) followed by the object JSON. The
//! prefix lets the writer check preconditions and the list path skip nothing it needs without parsing.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::Value;

use super::StoreError;

const SEP: u8 = 0;

/// The identity of one stored object.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// API group; `""` is the core group.
    pub group: String,
    /// Plural resource name, e.g. `configmaps`.
    pub resource: String,
    /// Logical cluster name (not a workspace path).
    pub cluster: String,
    /// Namespace; `""` for cluster-scoped objects.
    pub namespace: String,
    /// Object name.
    pub name: String,
}

impl ObjectKey {
    /// Convenience constructor.
    pub fn new(
        group: impl Into<String>,
        resource: impl Into<String>,
        cluster: impl Into<String>,
        namespace: impl Into<String>,
        name: impl Into<String>,
    ) -> Self {
        Self {
            group: group.into(),
            resource: resource.into(),
            cluster: cluster.into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// Order-preserving byte encoding; fails for empty required parts or parts containing NUL.
    pub(crate) fn encode(&self) -> Result<Vec<u8>, StoreError> {
        let invalid = |why: &str| StoreError::InvalidKey(format!("{self:?}: {why}"));
        if self.resource.is_empty() || self.cluster.is_empty() || self.name.is_empty() {
            return Err(invalid("resource, cluster and name must not be empty"));
        }
        let parts = [&self.group, &self.resource, &self.cluster, &self.namespace, &self.name];
        if parts.iter().any(|p| p.as_bytes().contains(&SEP)) {
            return Err(invalid("parts must not contain NUL"));
        }
        let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 1).sum());
        for part in parts {
            push_part(&mut out, part);
        }
        Ok(out)
    }

    /// Inverse of [`ObjectKey::encode`].
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, StoreError> {
        let corrupt = || StoreError::Corrupt(format!("malformed key {:?}", String::from_utf8_lossy(bytes)));
        let body = bytes.strip_suffix(&[SEP]).ok_or_else(corrupt)?;
        let parts = body
            .split(|b| *b == SEP)
            .map(|p| String::from_utf8(p.to_vec()).map_err(|_| corrupt()))
            .collect::<Result<Vec<_>, _>>()?;
        let [group, resource, cluster, namespace, name]: [String; 5] = parts.try_into().map_err(|_| corrupt())?;
        Ok(Self {
            group,
            resource,
            cluster,
            namespace,
            name,
        })
    }
}

fn push_part(out: &mut Vec<u8>, part: &str) {
    out.extend_from_slice(part.as_bytes());
    out.push(SEP);
}

/// The key range `[start, end)` holding exactly the keys under the given prefix parts.
///
/// `parts` are leading key components (group, resource, then optionally cluster and namespace).
pub(crate) fn prefix_range(parts: &[&str]) -> Result<(Vec<u8>, Vec<u8>), StoreError> {
    if parts.iter().any(|p| p.as_bytes().contains(&SEP)) {
        return Err(StoreError::InvalidKey(format!("{parts:?}: parts must not contain NUL")));
    }
    let mut start = Vec::new();
    for part in parts {
        push_part(&mut start, part);
    }
    let mut end = start.clone();
    // Every prefix ends with the separator 0x00; bumping it to 0x01 gives the smallest byte string that
    // sorts after every key starting with the prefix. An empty prefix has no upper bound but is never used.
    match end.last_mut() {
        Some(last) => *last = SEP + 1,
        None => end.push(u8::MAX),
    }
    Ok((start, end))
}

/// The namespace component of an encoded key, without allocating.
pub(crate) fn namespace_of(bytes: &[u8]) -> Option<&[u8]> {
    bytes.split(|b| *b == SEP).nth(3)
}

/// The members a stored object's JSON opens with, in this order, when it has them.
const TYPE_META: [&str; 2] = ["apiVersion", "kind"];

/// Serializes a stored value: resourceVersion prefix + JSON, opening with `apiVersion` and `kind`
/// wherever the object held them (the API fills them in last). Kube writes typed objects that way,
/// and a list of a built-in kind cuts them from each item's opening instead of parsing the item.
pub(crate) fn encode_value(rv: u64, object: &Value) -> Result<Vec<u8>, StoreError> {
    let mut out = Vec::with_capacity(2048);
    encode_value_into(&mut out, rv, object)?;
    Ok(out)
}

/// [`encode_value`] into `out` (cleared first), for a caller that encodes values one after another
/// and copies each out: one buffer for all of them instead of one to allocate and free per value.
pub(crate) fn encode_value_into(out: &mut Vec<u8>, rv: u64, object: &Value) -> Result<(), StoreError> {
    let invalid = |e: serde_json::Error| StoreError::InvalidObject(e.to_string());
    out.clear();
    out.extend_from_slice(&rv.to_be_bytes());
    let Value::Object(map) = object else {
        serde_json::to_writer(&mut *out, object).map_err(invalid)?;
        return Ok(());
    };
    let leading = TYPE_META.iter().filter_map(|k| map.get_key_value(*k));
    let rest = map.iter().filter(|(k, _)| !TYPE_META.contains(&k.as_str()));
    out.push(b'{');
    for (i, (k, v)) in leading.chain(rest).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, k).map_err(invalid)?;
        out.push(b':');
        serde_json::to_writer(&mut *out, v).map_err(invalid)?;
    }
    out.push(b'}');
    Ok(())
}

/// Bytes of a stored value before its JSON: the resourceVersion, big-endian.
pub(crate) const RV_PREFIX: usize = 8;

/// The resourceVersion prefix of a stored value.
pub(crate) fn value_rv(bytes: &[u8]) -> Result<u64, StoreError> {
    let prefix: [u8; RV_PREFIX] = bytes
        .get(..RV_PREFIX)
        .and_then(|p| p.try_into().ok())
        .ok_or_else(|| StoreError::Corrupt("stored value shorter than its resourceVersion prefix".into()))?;
    Ok(u64::from_be_bytes(prefix))
}

/// The JSON text of a stored value (empty when the value is shorter than its prefix).
pub(crate) fn value_json(bytes: &[u8]) -> &[u8] {
    bytes.get(RV_PREFIX..).unwrap_or_default()
}

/// Reads the JSON of a stored value into `T` (which takes only the fields it names).
pub(crate) fn decode_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, StoreError> {
    value_rv(bytes)?;
    serde_json::from_slice(value_json(bytes)).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// Parses a stored value into its resourceVersion and object.
pub(crate) fn decode_value(bytes: &[u8]) -> Result<(u64, Value), StoreError> {
    Ok((value_rv(bytes)?, decode_json(bytes)?))
}

/// Sets `metadata.resourceVersion` to `rv` (decimal string), creating `metadata` when absent.
pub(crate) fn set_resource_version(object: &mut Value, rv: u64) -> Result<(), StoreError> {
    let Value::Object(map) = object else {
        return Err(StoreError::InvalidObject("object must be a JSON object".into()));
    };
    let metadata = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    let Value::Object(metadata) = metadata else {
        return Err(StoreError::InvalidObject("metadata must be a JSON object".into()));
    };
    match metadata.get_mut("resourceVersion") {
        // In place, into the room [`reserve_resource_version`] made: no allocation on the writer
        // thread.
        Some(Value::String(text)) => {
            text.clear();
            let _ = write!(text, "{rv}");
        }
        _ => {
            metadata.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
    }
    Ok(())
}

/// Makes room in `object` for the resourceVersion the writer thread will set: the key (where
/// inserting it would put it, at the end of `metadata`, or where it already is) and a string long
/// enough for any RV. The writer thread is the store's serial step; growing a map that a request
/// thread allocated was 4 % of the server's CPU under 64 concurrent creates (glibc takes the other
/// thread's arena lock). An object without a `metadata` map is left for the writer to refuse.
pub(crate) fn reserve_resource_version(object: &mut Value) {
    if let Some(Value::Object(metadata)) = object.get_mut("metadata") {
        metadata.insert(
            "resourceVersion".into(),
            Value::String(String::with_capacity(MAX_RV_DIGITS)),
        );
    }
}

/// Decimal digits of the largest RV (`u64::MAX`).
const MAX_RV_DIGITS: usize = 20;

/// A copy of `object` with its resourceVersion replaced.
pub(crate) fn with_resource_version(object: &Arc<Value>, rv: u64) -> Result<Arc<Value>, StoreError> {
    let mut copy = Value::clone(object);
    set_resource_version(&mut copy, rv)?;
    Ok(Arc::new(copy))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn key(g: &str, r: &str, c: &str, ns: &str, n: &str) -> ObjectKey {
        ObjectKey::new(g, r, c, ns, n)
    }

    #[test]
    fn encoding_round_trips() {
        for k in [
            key("", "configmaps", "root", "default", "a"),
            key("apis.kcp.io", "apibindings", "2xk9", "", "tenancy.kcp.io"),
            key("x.io", "widgets", "c", "ns-1", "name.with.dots"),
        ] {
            let bytes = k.encode().unwrap();
            assert_eq!(ObjectKey::decode(&bytes).unwrap(), k);
        }
    }

    #[test]
    fn byte_order_equals_key_order() {
        // Pairs where a naive concatenation without terminators would sort differently.
        let keys = [
            key("", "a", "c", "", "x"),
            key("", "a", "c", "ns", "x"),
            key("", "a", "c", "ns", "xy"),
            key("", "a", "c", "ns-b", "a"),
            key("", "a", "c1", "", "a"),
            key("", "ab", "c", "", "a"),
            key("a", "a", "c", "", "a"),
        ];
        let mut sorted = keys.to_vec();
        sorted.sort();
        assert_eq!(sorted, keys.to_vec());
        let mut by_bytes = keys.to_vec();
        by_bytes.sort_by_key(|k| k.encode().unwrap());
        assert_eq!(by_bytes, keys.to_vec());
    }

    #[test]
    fn invalid_keys_are_rejected() {
        for k in [
            key("", "", "c", "", "n"),
            key("", "r", "", "", "n"),
            key("", "r", "c", "", ""),
            key("", "r", "c\0", "", "n"),
            key("g\0", "r", "c", "", "n"),
        ] {
            assert!(matches!(k.encode(), Err(StoreError::InvalidKey(_))), "{k:?}");
        }
    }

    #[test]
    fn prefix_ranges_hold_exactly_their_keys() {
        let inside_cluster = key("g", "r", "c", "ns", "n").encode().unwrap();
        let other_cluster = key("g", "r", "c2", "ns", "n").encode().unwrap();
        let other_resource = key("g", "rr", "c", "ns", "n").encode().unwrap();
        let other_ns = key("g", "r", "c", "ns2", "n").encode().unwrap();
        let cases: [(&[&str], [bool; 4]); 3] = [
            (&["g", "r"], [true, true, false, true]),
            (&["g", "r", "c"], [true, false, false, true]),
            (&["g", "r", "c", "ns"], [true, false, false, false]),
        ];
        for (parts, expected) in cases {
            let (start, end) = prefix_range(parts).unwrap();
            let got = [&inside_cluster, &other_cluster, &other_resource, &other_ns]
                .map(|k| start.as_slice() <= k.as_slice() && k.as_slice() < end.as_slice());
            assert_eq!(got, expected, "{parts:?}");
        }
    }

    #[test]
    fn namespace_is_read_from_the_key() {
        let k = key("g", "r", "c", "team", "n").encode().unwrap();
        assert_eq!(namespace_of(&k), Some(&b"team"[..]));
        let k = key("g", "r", "c", "", "n").encode().unwrap();
        assert_eq!(namespace_of(&k), Some(&b""[..]));
    }

    #[test]
    fn a_reserved_resource_version_is_written_in_place() {
        // (object as the request thread hands it over, as stored with RV u64::MAX); None: refused
        let cases = [
            (
                json!({"metadata": {"name": "a"}, "data": {}}),
                Some(r#"{"metadata":{"name":"a","resourceVersion":"18446744073709551615"},"data":{}}"#),
            ),
            // An update carries the RV it read: the new one takes its place.
            (
                json!({"metadata": {"resourceVersion": "7", "name": "a"}}),
                Some(r#"{"metadata":{"resourceVersion":"18446744073709551615","name":"a"}}"#),
            ),
            // No metadata: nothing to reserve; the writer makes it.
            (
                json!({"kind": "X"}),
                Some(r#"{"kind":"X","metadata":{"resourceVersion":"18446744073709551615"}}"#),
            ),
            (json!({"metadata": 1}), None),
        ];
        for (mut obj, want) in cases {
            let sent = obj.to_string();
            reserve_resource_version(&mut obj);
            let room = obj
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .map(str::as_ptr);
            let set = set_resource_version(&mut obj, u64::MAX);
            assert_eq!(set.is_ok(), want.is_some(), "{sent}");
            if let Some(want) = want {
                assert_eq!(obj.to_string(), want, "{sent}");
            }
            if let Some(room) = room {
                let written = obj.pointer("/metadata/resourceVersion").and_then(Value::as_str);
                assert_eq!(written.map(str::as_ptr), Some(room), "{sent}: not written in place");
            }
        }
    }

    #[test]
    fn values_round_trip_with_resource_version() {
        let mut obj = json!({"kind": "ConfigMap"});
        set_resource_version(&mut obj, 42).unwrap();
        assert_eq!(obj, json!({"kind": "ConfigMap", "metadata": {"resourceVersion": "42"}}));
        let bytes = encode_value(42, &obj).unwrap();
        assert_eq!(value_rv(&bytes).unwrap(), 42);
        assert_eq!(decode_value(&bytes).unwrap(), (42, obj));
        assert!(matches!(
            set_resource_version(&mut json!([]), 1),
            Err(StoreError::InvalidObject(_))
        ));
        assert!(matches!(
            set_resource_version(&mut json!({"metadata": 1}), 1),
            Err(StoreError::InvalidObject(_))
        ));
        assert!(matches!(value_rv(&[0, 1]), Err(StoreError::Corrupt(_))));
    }

    #[test]
    fn stored_json_opens_with_type_meta() {
        let cases = [
            (
                json!({"metadata": {"name": "a"}, "data": {"k": "v"}, "apiVersion": "v1", "kind": "ConfigMap"}),
                r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}"#,
            ),
            (
                json!({"kind": "Widget", "spec": {"apiVersion": "x"}, "apiVersion": "x.io/v1"}),
                r#"{"apiVersion":"x.io/v1","kind":"Widget","spec":{"apiVersion":"x"}}"#,
            ),
            (json!({"kind": "K", "a": 1}), r#"{"kind":"K","a":1}"#),
            (json!({"a": [1, "two"]}), r#"{"a":[1,"two"]}"#),
            (json!({}), "{}"),
            (json!([1]), "[1]"),
        ];
        for (object, want) in cases {
            let bytes = encode_value(7, &object).unwrap();
            assert_eq!(std::str::from_utf8(&bytes[8..]).unwrap(), want);
            assert_eq!(decode_value(&bytes).unwrap(), (7, object));
        }
    }
}
