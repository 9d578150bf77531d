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

/// kube-apiserver's refusal of a body its typed decoder cannot read as a built-in `def`: a JSON
/// value that is not an object, or another kind or version than the URL's (what the body omits is
/// taken from the URL, as kube's codec defaults it). `None` when it decodes, and for custom
/// resources, whose unstructured decoder words its errors differently. kube answers a kind it
/// knows with a failed conversion and anything else as unregistered; "knows" is approximated by
/// the built-ins served here.
pub fn typed_refusal(def: &ResourceDef, obj: &Value) -> Option<Status> {
    if !def.typed_builtin() {
        return None;
    }
    let Some(map) = obj.as_object() else {
        let json_type = match obj {
            Value::String(_) => "string",
            Value::Number(_) => "number",
            Value::Array(_) => "array",
            Value::Bool(_) => "bool",
            // Go reads `null` into the type probe without complaint; it fails later, elsewhere.
            Value::Null | Value::Object(_) => return None,
        };
        // The body as clients send it (compact JSON); kube shows up to 30 bytes of it in hex.
        let body = serde_json::to_vec(obj).unwrap_or_default();
        return Some(Status::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): couldn't get version/kind; json parse error: json: cannot unmarshal {json_type} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }} ({})",
            def.kind,
            summary(&body)
        )));
    };
    let field = |name: &str| map.get(name).and_then(Value::as_str).filter(|v| !v.is_empty());
    let own = def.api_version();
    let api_version = field("apiVersion").unwrap_or(&own);
    let kind = field("kind").unwrap_or(&def.kind);
    if api_version == own && kind == def.kind {
        return None;
    }
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let known = crate::builtin::builtin_resources()
        .iter()
        .any(|d| d.group == group && d.version == version && d.kind == kind);
    let cause = match known {
        true => format!(
            "converting ({version}.{kind}) to ({}.{}): unknown conversion",
            internal_package(&def.group),
            def.kind
        ),
        false => format!(
            "no kind {kind:?} is registered for version {api_version:?} in scheme \"pkg/runtime/scheme.go:111\""
        ),
    };
    Some(Status::bad_request(format!(
        "{kind} in version {version:?} cannot be handled as a {}: {cause}",
        def.kind
    )))
}

/// The Go package of a built-in group's internal types, which kube's conversion errors name.
fn internal_package(group: &str) -> &str {
    match group {
        "" => "core",
        g => g.split('.').next().unwrap_or(g),
    }
}

/// kube's summary of an undecodable body: up to 30 bytes, as text when it opens an object, else
/// in hex, `...` marking a cut.
fn summary(body: &[u8]) -> String {
    const MAX: usize = 30;
    let (shown, cut) = match body.len() > MAX {
        true => (&body[..MAX], " ..."),
        false => (body, ""),
    };
    match body.first() {
        None => "<empty>".into(),
        Some(b'{') => format!("{}{cut}", String::from_utf8_lossy(shown)),
        Some(_) => format!("{}{cut}", shown.iter().map(|b| format!("{b:02x}")).collect::<String>()),
    }
}

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
    fn typed_bodies_of_another_type_kind_or_version_are_refused_as_kube_words_it() {
        let ns = def("", "namespaces");
        let struct_type =
            r#"struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }"#;
        let cases = [
            (json!({"metadata": {"name": "a"}}), None),
            (json!({"apiVersion": "v1", "kind": "Namespace"}), None),
            (
                json!("this is not json"),
                Some(format!(
                    "the object provided is unrecognized (must be of type Namespace): couldn't get version/kind; json parse error: json: cannot unmarshal string into Go value of type {struct_type} (2274686973206973206e6f74206a736f6e22)"
                )),
            ),
            (
                json!([1, 2]),
                Some(format!(
                    "the object provided is unrecognized (must be of type Namespace): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type {struct_type} (5b312c325d)"
                )),
            ),
            (
                json!("a string longer than thirty bytes"),
                Some(format!(
                    "the object provided is unrecognized (must be of type Namespace): couldn't get version/kind; json parse error: json: cannot unmarshal string into Go value of type {struct_type} (226120737472696e67206c6f6e676572207468616e207468697274792062 ...)"
                )),
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap"}),
                Some("ConfigMap in version \"v1\" cannot be handled as a Namespace: converting (v1.ConfigMap) to (core.Namespace): unknown conversion".to_string()),
            ),
            (
                json!({"kind": "Secret"}),
                Some("Secret in version \"v1\" cannot be handled as a Namespace: converting (v1.Secret) to (core.Namespace): unknown conversion".to_string()),
            ),
            (
                json!({"apiVersion": "v2", "kind": "Namespace"}),
                Some("Namespace in version \"v2\" cannot be handled as a Namespace: no kind \"Namespace\" is registered for version \"v2\" in scheme \"pkg/runtime/scheme.go:111\"".to_string()),
            ),
            (
                json!({"apiVersion": "example.io/v1"}),
                Some("Namespace in version \"v1\" cannot be handled as a Namespace: no kind \"Namespace\" is registered for version \"example.io/v1\" in scheme \"pkg/runtime/scheme.go:111\"".to_string()),
            ),
        ];
        for (body, want) in cases {
            let got = typed_refusal(&ns, &body).map(|s| (s.code, s.message));
            assert_eq!(got, want.map(|m| (400, m)), "{body}");
        }
        let binding = def("rbac.authorization.k8s.io", "clusterrolebindings");
        let got = typed_refusal(
            &binding,
            &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole"}),
        );
        assert_eq!(
            got.map(|s| s.message).as_deref(),
            Some(
                "ClusterRole in version \"v1\" cannot be handled as a ClusterRoleBinding: converting (v1.ClusterRole) to (rbac.ClusterRoleBinding): unknown conversion"
            )
        );
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
