//! An object's metadata, read and edited through one accessor per field, so the JSON paths into
//! `metadata` are spelled once in the crate. IO-free.
//!
//! Readers take any `&Value` and answer `None` (or nothing) when a field is missing or has another
//! JSON type: stored objects went through the write pipeline, but request bodies and watch events
//! are read with the same functions.

use serde_json::{Map, Value, json};

use crate::store::ObjectKey;

/// Annotation kcp sets on every object it returns: the logical cluster name the object lives in.
pub const CLUSTER_ANNOTATION: &str = "kcp.io/cluster";

fn metadata(obj: &Value) -> Option<&Value> {
    obj.get("metadata")
}

/// A string field of `metadata` (`name`, `uid`, `generateName`, …).
pub fn string<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    metadata(obj)?.get(field)?.as_str()
}

/// `metadata.name`.
pub fn name(obj: &Value) -> Option<&str> {
    string(obj, "name")
}

/// `metadata.namespace`.
pub fn namespace(obj: &Value) -> Option<&str> {
    string(obj, "namespace")
}

/// `metadata.uid`.
pub fn uid(obj: &Value) -> Option<&str> {
    string(obj, "uid")
}

/// `metadata.resourceVersion` as written.
pub fn resource_version(obj: &Value) -> Option<&str> {
    string(obj, "resourceVersion")
}

/// `metadata.resourceVersion` of a stored object, as the number the store counts with.
pub fn rv(obj: &Value) -> Option<u64> {
    resource_version(obj).and_then(|r| r.parse().ok())
}

/// `metadata.generation`.
pub fn generation(obj: &Value) -> Option<i64> {
    metadata(obj)?.get("generation")?.as_i64()
}

/// `metadata.creationTimestamp`.
pub fn creation_timestamp(obj: &Value) -> Option<&str> {
    string(obj, "creationTimestamp")
}

/// Whether deletion has begun: `metadata.deletionTimestamp` is present (whatever its value).
pub fn is_deleting(obj: &Value) -> bool {
    metadata(obj).and_then(|m| m.get("deletionTimestamp")).is_some()
}

/// `metadata.labels`.
pub fn labels(obj: &Value) -> Option<&Map<String, Value>> {
    metadata(obj)?.get("labels")?.as_object()
}

/// One label's value.
pub fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    metadata(obj)?.get("labels")?.get(key)?.as_str()
}

/// `metadata.annotations`.
pub fn annotations(obj: &Value) -> Option<&Map<String, Value>> {
    metadata(obj)?.get("annotations")?.as_object()
}

/// One annotation's value.
pub fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    metadata(obj)?.get("annotations")?.get(key)?.as_str()
}

/// The logical cluster a stored object lives in (annotation `kcp.io/cluster`); `""` when unset.
pub fn cluster(obj: &Value) -> &str {
    annotation(obj, CLUSTER_ANNOTATION).unwrap_or_default()
}

/// `metadata.finalizers` (the string entries).
pub fn finalizers(obj: &Value) -> Vec<String> {
    metadata(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

/// `metadata.ownerReferences`; empty when there are none.
pub fn owner_references(obj: &Value) -> &[Value] {
    metadata(obj)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The storage key of a stored object of the given resource.
pub fn key_of(group: &str, resource: &str, obj: &Value) -> ObjectKey {
    ObjectKey {
        group: group.into(),
        resource: resource.into(),
        cluster: cluster(obj).to_string(),
        namespace: namespace(obj).unwrap_or_default().to_string(),
        name: name(obj).unwrap_or_default().to_string(),
    }
}

/// The `metadata` map of an object (created if missing).
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = json!({});
    }
    let Value::Object(map) = obj else {
        unreachable!("replaced by an object above")
    };
    let meta = map.entry("metadata").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    let Value::Object(meta) = meta else {
        unreachable!("replaced by an object above")
    };
    meta
}

/// The map under `metadata.<field>` (`labels`, `annotations`), created empty if missing; `None`
/// when the field holds something other than an object, which is then left alone.
fn map_mut<'a>(obj: &'a mut Value, field: &str) -> Option<&'a mut Map<String, Value>> {
    meta_mut(obj).entry(field).or_insert_with(|| json!({})).as_object_mut()
}

/// `metadata.labels` for editing (see [`map_mut`]).
pub fn labels_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    map_mut(obj, "labels")
}

/// `metadata.annotations` for editing (see [`map_mut`]).
pub fn annotations_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    map_mut(obj, "annotations")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Value {
        json!({"metadata": {
            "name": "a", "namespace": "ns", "uid": "u-1", "resourceVersion": "42", "generation": 3,
            "creationTimestamp": "2026-01-01T00:00:00Z", "deletionTimestamp": "2026-01-02T00:00:00Z",
            "labels": {"app": "x"},
            "annotations": {"kcp.io/cluster": "c1", "note": "n"},
            "finalizers": ["f1", 7, "f2"],
            "ownerReferences": [{"uid": "o"}],
        }})
    }

    #[test]
    fn readers_answer_from_metadata() {
        let o = full();
        let strings: [(&str, Option<&str>); 9] = [
            ("name", name(&o)),
            ("namespace", namespace(&o)),
            ("uid", uid(&o)),
            ("resourceVersion", resource_version(&o)),
            ("creationTimestamp", creation_timestamp(&o)),
            ("label app", label(&o, "app")),
            ("annotation note", annotation(&o, "note")),
            ("cluster", Some(cluster(&o))),
            ("generateName", string(&o, "generateName")),
        ];
        let want = [
            Some("a"),
            Some("ns"),
            Some("u-1"),
            Some("42"),
            Some("2026-01-01T00:00:00Z"),
            Some("x"),
            Some("n"),
            Some("c1"),
            None,
        ];
        for ((field, got), want) in strings.into_iter().zip(want) {
            assert_eq!(got, want, "{field}");
        }
        assert_eq!(rv(&o), Some(42));
        assert_eq!(generation(&o), Some(3));
        assert!(is_deleting(&o));
        assert_eq!(labels(&o).map(Map::len), Some(1));
        assert_eq!(annotations(&o).map(Map::len), Some(2));
        assert_eq!(finalizers(&o), ["f1", "f2"]);
        assert_eq!(owner_references(&o), [json!({"uid": "o"})]);
        assert_eq!(key_of("g", "rs", &o), ObjectKey::new("g", "rs", "c1", "ns", "a"));
    }

    #[test]
    fn missing_or_mistyped_fields_read_as_absent() {
        for o in [
            json!({}),
            json!(null),
            json!({"metadata": null}),
            json!({"metadata": {"name": 1, "resourceVersion": "x", "labels": [], "annotations": "a",
                "finalizers": {}, "ownerReferences": {}}}),
        ] {
            assert_eq!(name(&o), None, "{o}");
            assert_eq!(rv(&o), None, "{o}");
            assert_eq!(labels(&o), None, "{o}");
            assert_eq!(label(&o, "app"), None, "{o}");
            assert_eq!(annotation(&o, "note"), None, "{o}");
            assert_eq!(cluster(&o), "", "{o}");
            assert!(finalizers(&o).is_empty(), "{o}");
            assert!(owner_references(&o).is_empty(), "{o}");
            assert!(!is_deleting(&o), "{o}");
            assert_eq!(key_of("", "rs", &o), ObjectKey::new("", "rs", "", "", ""), "{o}");
        }
        // A deletionTimestamp of any value counts, as kube's "is set" does for a present field.
        assert!(is_deleting(&json!({"metadata": {"deletionTimestamp": null}})));
    }

    #[test]
    fn editors_create_maps_and_leave_other_types_alone() {
        for (before, want_labels) in [
            (json!({}), Some(json!({"k": "v"}))),
            (
                json!({"metadata": {"labels": {"a": "b"}}}),
                Some(json!({"a": "b", "k": "v"})),
            ),
            (json!({"metadata": {"labels": "oops"}}), None),
        ] {
            let mut o = before.clone();
            if let Some(l) = labels_mut(&mut o) {
                l.insert("k".into(), json!("v"));
            }
            match want_labels {
                Some(w) => assert_eq!(o["metadata"]["labels"], w, "{before}"),
                None => assert_eq!(o, before, "{before}"),
            }
        }
        let mut o = json!("not an object");
        annotations_mut(&mut o).map(|a| a.insert("x".into(), json!("y")));
        assert_eq!(o, json!({"metadata": {"annotations": {"x": "y"}}}));
    }
}
