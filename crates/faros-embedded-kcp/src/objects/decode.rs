//! What kube-apiserver's decoding does to a request body before any registry rule sees it, IO-free:
//! metadata fields sent as `null` are absent (Go decodes them into nil maps and slices), and a
//! Secret's write-only `stringData` is merged into `data` (the v1 → internal conversion does that
//! on every create, update and patch, so `stringData` is never stored).
//!
//! Without the merge a manifest using `stringData` would silently yield a Secret with empty `data`
//! here while it works on kcp. A Secret's `data` values must be base64: Go decodes them into bytes,
//! so anything else is a 400 before any rule runs (kcp refuses it; storing it would be looser).

use base64::Engine;
use faros_core::status::Status;
use serde_json::Value;

use crate::registry::ResourceDef;

/// Normalizes a decoded request body of `def` in place; refuses what Go could not decode.
pub fn normalize(def: &ResourceDef, obj: &mut Value) -> Result<(), Status> {
    drop_null_metadata(obj);
    if def.group.is_empty() && def.resource == "secrets" {
        merge_string_data(obj);
        if let Some(offset) = first_bad_base64(obj) {
            return Err(Status::bad_request(format!(
                "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte {offset}"
            )));
        }
    }
    Ok(())
}

/// Where the first `data` value that is not standard base64 goes wrong, as Go's decoder reports it
/// (the offset of the offending byte; line breaks are skipped, as Go does).
fn first_bad_base64(obj: &Value) -> Option<usize> {
    let data = obj.get("data")?.as_object()?;
    data.values().filter_map(Value::as_str).find_map(|v| {
        let text: String = v.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
        match base64::engine::general_purpose::STANDARD.decode(&text) {
            Ok(_) => None,
            Err(base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _)) => Some(at),
            Err(_) => Some(text.len()),
        }
    })
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
    fn secret_data_must_be_base64() {
        let secret = def("", "secrets");
        for (data, want) in [
            (json!({"k": "aHVudGVyMg=="}), None),
            (json!({"k": "aHVu\ndGVy"}), None),
            (json!({"k": "not base64!"}), Some(3)),
            (json!({"k": 1}), None),
        ] {
            let mut obj = json!({"data": data});
            let got = normalize(&secret, &mut obj).err();
            let want = want.map(|at| {
                format!(
                    "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte {at}"
                )
            });
            assert_eq!(got.map(|s| (s.code, s.message)), want.map(|m| (400, m)), "{obj}");
        }
        let mut cm = json!({"data": {"k": "not base64!"}});
        assert!(
            normalize(&def("", "configmaps"), &mut cm).is_ok(),
            "only Secrets hold bytes"
        );
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
            normalize(&secret, &mut input).expect("valid base64");
            assert_eq!(input, want);
        }
    }

    #[test]
    fn string_data_is_only_a_secret_field() {
        let mut cm = json!({"stringData": {"a": "b"}});
        normalize(&def("", "configmaps"), &mut cm).expect("no Secret");
        assert_eq!(cm, json!({"stringData": {"a": "b"}}));
    }

    #[test]
    fn null_metadata_fields_are_absent() {
        let mut obj = json!({"metadata": {"name": "a", "labels": null, "annotations": null, "finalizers": null}});
        normalize(&def("", "configmaps"), &mut obj).expect("no Secret");
        assert_eq!(obj, json!({"metadata": {"name": "a"}}));
        let mut obj = json!({"metadata": null, "data": {}});
        normalize(&def("", "configmaps"), &mut obj).expect("no Secret");
        assert_eq!(obj, json!({"data": {}}));
    }
}
