//! Reading an object's metadata: one accessor for each field the server looks at, so the JSON
//! pointers into `metadata` are spelled once. IO-free.

use serde_json::Value;

use crate::store::ObjectKey;

/// The storage key of a stored object of the given resource.
pub fn key_of(group: &str, resource: &str, obj: &Value) -> ObjectKey {
    let s = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
    ObjectKey {
        group: group.into(),
        resource: resource.into(),
        cluster: s("/metadata/annotations/kcp.io~1cluster"),
        namespace: s("/metadata/namespace"),
        name: s("/metadata/name"),
    }
}

/// The resourceVersion of a stored object.
pub fn rv(obj: &Value) -> Option<u64> {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|r| r.parse().ok())
}
