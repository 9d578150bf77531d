//! What kube-apiserver's decoding does to a request body before any registry rule sees it, IO-free:
//! metadata fields sent as `null` are absent (Go decodes them into nil maps and slices), and a
//! Secret's write-only `stringData` is merged into `data` (the v1 → internal conversion does that
//! on every create, update and patch, so `stringData` is never stored).
//!
//! Without the merge a manifest using `stringData` would silently yield a Secret with empty `data`
//! here while it works on kcp.

use base64::Engine;
use serde_json::Value;

use crate::registry::ResourceDef;

/// Normalizes a decoded request body of `def` in place.
pub fn normalize(def: &ResourceDef, obj: &mut Value) {
    drop_null_metadata(obj);
    if def.group.is_empty() && def.resource == "secrets" {
        merge_string_data(obj);
    }
}

/// `metadata.labels: null` (and any other null metadata field) means the field is not set.
fn drop_null_metadata(obj: &mut Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.retain(|_, v| !v.is_null());
    }
    if obj.get("metadata").is_some_and(Value::is_null)
        && let Some(map) = obj.as_object_mut()
    {
        map.remove("metadata");
    }
}

/// Every `stringData` entry overwrites the `data` entry of the same key, base64-encoded; then
/// `stringData` is dropped. Non-string values are left for schema validation to refuse.
fn merge_string_data(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let Some(string_data) = map.get("stringData") else {
        return;
    };
    let Some(entries) = string_data.as_object() else {
        if string_data.is_null() {
            map.remove("stringData");
        }
        return;
    };
    if entries.values().any(|v| !v.is_string()) {
        return;
    }
    let encoded: Vec<(String, Value)> = entries
        .iter()
        .filter_map(|(k, v)| {
            let s = v.as_str()?;
            Some((
                k.clone(),
                Value::String(base64::engine::general_purpose::STANDARD.encode(s)),
            ))
        })
        .collect();
    map.remove("stringData");
    if encoded.is_empty() {
        return;
    }
    let data = map.entry("data").or_insert_with(|| Value::Object(Default::default()));
    if !data.is_object() {
        *data = Value::Object(Default::default());
    }
    if let Some(data) = data.as_object_mut() {
        data.extend(encoded);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn def(group: &str, resource: &str) -> ResourceDef {
        crate::builtin::builtin_resources()
            .into_iter()
            .find(|d| d.group == group && d.resource == resource)
            .expect("built-in resource")
    }

    #[test]
    fn string_data_merges_into_data() {
        let secret = def("", "secrets");
        let cases = [
            (
                json!({"metadata": {"name": "s"}, "stringData": {"password": "hunter2"}}),
                json!({"metadata": {"name": "s"}, "data": {"password": "aHVudGVyMg=="}}),
            ),
            // stringData wins over data for the same key; other data keys stay.
            (
                json!({"data": {"a": "eA==", "b": "eQ=="}, "stringData": {"a": "z"}}),
                json!({"data": {"a": "eg==", "b": "eQ=="}}),
            ),
            (json!({"stringData": {}}), json!({})),
            (json!({"stringData": null}), json!({})),
            // Invalid stringData is left for validation to refuse with a 422.
            (json!({"stringData": {"a": 1}}), json!({"stringData": {"a": 1}})),
        ];
        for (mut input, want) in cases {
            normalize(&secret, &mut input);
            assert_eq!(input, want);
        }
    }

    #[test]
    fn string_data_is_only_a_secret_field() {
        let mut cm = json!({"stringData": {"a": "b"}});
        normalize(&def("", "configmaps"), &mut cm);
        assert_eq!(cm, json!({"stringData": {"a": "b"}}));
    }

    #[test]
    fn null_metadata_fields_are_absent() {
        let mut obj = json!({"metadata": {"name": "a", "labels": null, "annotations": null, "finalizers": null}});
        normalize(&def("", "configmaps"), &mut obj);
        assert_eq!(obj, json!({"metadata": {"name": "a"}}));
        let mut obj = json!({"metadata": null, "data": {}});
        normalize(&def("", "configmaps"), &mut obj);
        assert_eq!(obj, json!({"data": {}}));
    }
}
