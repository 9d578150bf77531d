//! Object metadata rules (the "registry strategy" of the Kubernetes API server), IO-free.
//!
//! Create and update requests pass through here before storage: server-owned metadata is set or
//! preserved, names are validated, status and spec are kept apart for kinds with a status
//! subresource, and generation is bumped when the desired state changes.

use faros_core::status::{Status, StatusCause};
use rand::Rng;
use serde_json::{Map, Value, json};

use crate::registry::ResourceDef;

pub(crate) mod decode;
pub(crate) mod dns;
pub(crate) mod meta;

/// Metadata fields only the server may set.
const SERVER_OWNED: &[&str] = &[
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
];

/// Characters Kubernetes uses for generated name suffixes (no vowels, no look-alikes).
const NAME_CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Current time in the RFC 3339 second-precision form Kubernetes uses.
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn invalid(def: &ResourceDef, name: &str, field: &str, reason: &str, message: impl Into<String>) -> Status {
    Status::invalid(
        &def.group,
        &def.kind,
        name,
        vec![StatusCause {
            reason: reason.into(),
            message: message.into(),
            field: field.into(),
        }],
    )
}

/// Validates a DNS-1123 subdomain (most object names), returning the Kubernetes message on failure.
pub fn validate_dns_subdomain(name: &str) -> Option<String> {
    let re_ok = name.len() <= 253 && dns::matches_dns1123_subdomain(name);
    if re_ok {
        None
    } else if name.len() > 253 {
        Some("must be no more than 253 characters".into())
    } else {
        Some(format!(
            "Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ))
    }
}

/// Validates a DNS-1123 label (namespace names).
pub fn validate_dns_label(name: &str) -> Option<String> {
    let ok = name.len() <= 63 && dns::matches_dns1123_label(name);
    if ok {
        None
    } else {
        Some(format!(
            "Invalid value: \"{name}\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        ))
    }
}

/// Path-segment names (RBAC objects may contain ':' e.g. `system:masters`).
pub fn validate_path_segment(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("name or generateName is required".into());
    }
    if name == "." || name == ".." {
        return Some(format!("Invalid value: \"{name}\": may not be '{name}'"));
    }
    if name.contains('/') || name.contains('%') {
        return Some(format!("Invalid value: \"{name}\": may not contain '/' or '%'"));
    }
    None
}

fn validate_name(def: &ResourceDef, name: &str) -> Result<(), Status> {
    let problem = if def.resource == "namespaces" {
        validate_dns_label(name)
    } else if def.group == "rbac.authorization.k8s.io" {
        validate_path_segment(name)
    } else {
        validate_dns_subdomain(name)
    };
    let mut causes: Vec<StatusCause> = problem
        .into_iter()
        .map(|message| StatusCause {
            reason: "FieldValueInvalid".into(),
            message,
            field: "metadata.name".into(),
        })
        .collect();
    // kcp's Workspace CRD also patterns the name as one path segment, and the schema's refusal
    // is listed after ObjectMeta's.
    if (def.group.as_str(), def.resource.as_str()) == ("tenancy.kcp.io", "workspaces")
        && validate_dns_label(name).is_some()
    {
        causes.push(StatusCause {
            reason: "FieldValueInvalid".into(),
            message: format!(
                "Invalid value: \"{name}\": metadata.name in body should match '^[a-z0-9]([a-z0-9-]{{0,61}}[a-z0-9])?$'"
            ),
            field: "metadata.name".into(),
        });
    }
    match causes.is_empty() {
        true => Ok(()),
        false => Err(Status::invalid(&def.group, &def.kind, name, causes)),
    }
}

/// The prefix the server names `obj` from on create: its `generateName`, when it has no name.
pub fn generate_name(obj: &Value) -> Option<&str> {
    let meta = |field| obj.pointer(field).and_then(Value::as_str).unwrap_or_default();
    let prefix = meta("/metadata/generateName");
    (meta("/metadata/name").is_empty() && !prefix.is_empty()).then_some(prefix)
}

fn generated_suffix() -> String {
    let mut rng = rand::rng();
    (0..5)
        .map(|_| NAME_CHARS[rng.random_range(0..NAME_CHARS.len())] as char)
        .collect()
}

/// Checks apiVersion/kind of a request body against the resource, filling them when absent.
pub fn check_type(def: &ResourceDef, obj: &mut Value) -> Result<(), Status> {
    if let Some(refusal) = decode::typed_refusal(def, obj) {
        return Err(refusal);
    }
    if !obj.is_object() {
        return Err(Status::bad_request("the request body must be a JSON object"));
    }
    decode::normalize(def, obj)?;
    let Some(map) = obj.as_object_mut() else {
        return Err(Status::bad_request("the request body must be a JSON object"));
    };
    let api_version = def.api_version();
    match map.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("apiVersion".into(), Value::String(api_version));
        }
        Some(v) if v == api_version => {}
        // Kubernetes converts between served versions; with one served version any other is an error.
        Some(v) => {
            return Err(Status::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({api_version})"
            )));
        }
    }
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("kind".into(), Value::String(def.kind.clone()));
        }
        Some(k) if k == def.kind => {}
        Some(k) => {
            return Err(Status::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                def.kind
            )));
        }
    }
    Ok(())
}

/// Prepares an object for creation: type, name, namespace, server-owned metadata.
pub fn prepare_create(
    def: &ResourceDef,
    url_namespace: Option<&str>,
    obj: &mut Value,
    now: &str,
) -> Result<(), Status> {
    check_type(def, obj)?;
    // Kubernetes truncates the prefix so the generated name stays a valid length.
    let generated = generate_name(obj).map(|prefix| {
        let prefix: String = prefix.chars().take(58).collect();
        format!("{prefix}{}", generated_suffix())
    });
    let meta = meta::meta_mut(obj);
    if meta
        .get("resourceVersion")
        .and_then(Value::as_str)
        .is_some_and(|rv| !rv.is_empty())
    {
        return Err(Status::bad_request(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let mut name = meta.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
    if name.is_empty() {
        match generated {
            Some(generated) => {
                name = generated;
                meta.insert("name".into(), Value::String(name.clone()));
            }
            None => {
                return Err(invalid(
                    def,
                    "",
                    "metadata.name",
                    "FieldValueRequired",
                    "Required value: name or generateName is required",
                ));
            }
        }
    }
    // Namespace: required and consistent for namespaced kinds, cleared for cluster-scoped ones.
    if def.namespaced {
        let body_ns = meta
            .get("namespace")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(String::from);
        match (url_namespace, body_ns) {
            (Some(u), Some(b)) if u != b => {
                return Err(Status::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request".to_string(),
                ));
            }
            (Some(u), _) => {
                meta.insert("namespace".into(), Value::String(u.into()));
            }
            (None, _) => {
                return Err(Status::bad_request(
                    "the namespace of the object must be given in the request path",
                ));
            }
        }
    } else {
        meta.remove("namespace");
    }
    for field in SERVER_OWNED {
        meta.remove(*field);
    }
    meta.remove("resourceVersion");
    meta.remove("managedFields");
    meta.insert("uid".into(), Value::String(uuid::Uuid::new_v4().to_string()));
    meta.insert("creationTimestamp".into(), Value::String(now.into()));
    if def.generation {
        meta.insert("generation".into(), json!(1));
    }
    strip_cluster_annotation(meta);
    validate_name(def, &name)?;
    validate_metadata(def, obj)?;
    if def.status_subresource && def.generation {
        // CR strategy: status cannot be set on create when a status subresource exists.
        if let Some(map) = obj.as_object_mut() {
            map.remove("status");
        }
    }
    // Decoding defaults a Secret's type (so its creator owns it, as it does in kube).
    if def.group.is_empty()
        && def.resource == "secrets"
        && obj.get("type").and_then(Value::as_str).is_none_or(str::is_empty)
    {
        obj["type"] = json!("Opaque");
    }
    if def.group.is_empty() && def.resource == "namespaces" {
        obj["spec"]["finalizers"] = json!(["kubernetes"]);
        obj["status"] = json!({"phase": "Active"});
        label_namespace_name(obj, &name);
    }
    Ok(())
}

/// What kube-apiserver's field manager compares a created object with, so that the creator owns
/// what it sent (and what decoding defaulted) and nothing else: the typed zero value of a built-in
/// kind, whose `spec` and `status` structs are always present (so the creator owns fields inside
/// them, not the structs themselves), plus what the create strategy sets after the field manager
/// ran, which no manager owns (a Namespace's finalizers and phase). A custom resource's zero value
/// is empty. IO-free.
pub fn create_baseline(def: &ResourceDef) -> Value {
    if !def.typed_builtin() {
        return json!({});
    }
    if def.group.is_empty() && def.resource == "namespaces" {
        return json!({"spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
    }
    json!({"spec": {}, "status": {}})
}

/// Kubernetes' namespace strategy labels every namespace with its own name on create and update
/// (`kubernetes.io/metadata.name`), so namespace selectors can pick one by name; a client cannot
/// remove or change it.
const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

fn label_namespace_name(obj: &mut Value, name: &str) {
    if let Some(labels) = meta::labels_mut(obj) {
        labels.insert(NAMESPACE_NAME_LABEL.into(), Value::String(name.into()));
    }
}

fn strip_cluster_annotation(meta: &mut Map<String, Value>) {
    // kcp derives the cluster annotation from the storage key; a client-supplied value is ignored.
    if let Some(Value::Object(ann)) = meta.get_mut("annotations") {
        ann.remove(meta::CLUSTER_ANNOTATION);
        if ann.is_empty() {
            meta.remove("annotations");
        }
    }
}

/// Label and annotation syntax checks shared by create and update.
fn validate_metadata(def: &ResourceDef, obj: &Value) -> Result<(), Status> {
    let name = meta::name(obj).unwrap_or_default();
    for (field, max_value) in [("labels", Some(63usize)), ("annotations", None)] {
        let Some(map) = obj.pointer(&format!("/metadata/{field}")) else {
            continue;
        };
        let Some(map) = map.as_object() else {
            return Err(invalid(
                def,
                name,
                &format!("metadata.{field}"),
                "FieldValueInvalid",
                "must be a map of strings",
            ));
        };
        for (k, v) in map {
            if let Some(msg) = qualified_name_problem(k) {
                return Err(invalid(
                    def,
                    name,
                    &format!("metadata.{field}"),
                    "FieldValueInvalid",
                    format!("Invalid value: \"{k}\": {msg}"),
                ));
            }
            let Some(v) = v.as_str() else {
                return Err(invalid(
                    def,
                    name,
                    &format!("metadata.{field}.{k}"),
                    "FieldValueInvalid",
                    "must be a string",
                ));
            };
            if let Some(max) = max_value {
                let ok = v.len() <= max
                    && v.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
                    && (v.is_empty()
                        || (v.as_bytes()[0].is_ascii_alphanumeric()
                            && v.as_bytes()[v.len() - 1].is_ascii_alphanumeric()));
                if !ok {
                    return Err(invalid(
                        def,
                        name,
                        "metadata.labels",
                        "FieldValueInvalid",
                        format!(
                            "Invalid value: \"{v}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Problems with a qualified name (`prefix/name` label or annotation key), Kubernetes' rules.
pub fn qualified_name_problem(key: &str) -> Option<String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && (p.is_empty() || validate_dns_subdomain(p).is_some())
    {
        return Some("prefix part must be a lowercase RFC 1123 subdomain".into());
    }
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name.as_bytes()[name.len() - 1].is_ascii_alphanumeric();
    if ok {
        None
    } else {
        Some("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character".into())
    }
}

/// Which part of an object a write may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WritePart {
    /// The main resource: everything but status (when a status subresource exists).
    Main,
    /// `/status`: only status.
    Status,
    /// `/finalize` on namespaces: only spec.finalizers.
    Finalize,
}

/// Prepares an update of `old` into `new`: preserves server-owned metadata, separates status, bumps
/// generation, enforces finalizer rules. Returns true when `new` should be deleted instead (deletion
/// pending and no finalizers left).
pub fn prepare_update(
    def: &ResourceDef,
    old: &Value,
    new: &mut Value,
    part: WritePart,
    require_rv: bool,
) -> Result<bool, Status> {
    check_type(def, new)?;
    let name = meta::name(old).unwrap_or_default().to_string();
    {
        let new_name = meta::name(new).unwrap_or_default();
        if !new_name.is_empty() && new_name != name {
            return Err(Status::bad_request(format!(
                "the name of the object ({new_name}) does not match the name on the URL ({name})"
            )));
        }
    }
    if require_rv && meta::resource_version(new).is_none_or(str::is_empty) {
        return Err(invalid(
            def,
            &name,
            "metadata.resourceVersion",
            "FieldValueInvalid",
            "Invalid value: 0x0: must be specified for an update",
        ));
    }
    match part {
        WritePart::Status => {
            // ResetObjectMetaForStatus: everything but status comes from the old object.
            let status = new.get("status").cloned();
            let rv = meta::resource_version(new).map(String::from);
            *new = old.clone();
            match status {
                Some(s) => new["status"] = s,
                None => {
                    if let Some(m) = new.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
            set_rv(new, rv);
            return Ok(false);
        }
        WritePart::Finalize => {
            let finalizers = new.pointer("/spec/finalizers").cloned();
            let rv = meta::resource_version(new).map(String::from);
            *new = old.clone();
            new["spec"]["finalizers"] = finalizers.unwrap_or_else(|| json!([]));
            set_rv(new, rv);
            return Ok(namespace_gone(new));
        }
        WritePart::Main => {}
    }
    // Server-owned metadata always comes from the stored object.
    let old_meta = old
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    {
        let meta = meta::meta_mut(new);
        for field in SERVER_OWNED.iter().chain(["namespace", "name"].iter()) {
            match old_meta.get(*field) {
                Some(v) => {
                    meta.insert(field.to_string(), v.clone());
                }
                None => {
                    meta.remove(*field);
                }
            }
        }
        strip_cluster_annotation(meta);
    }
    if def.status_subresource {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    }
    if def.group.is_empty() && def.resource == "namespaces" {
        // spec.finalizers changes only through /finalize.
        if let Some(f) = old.pointer("/spec/finalizers") {
            new["spec"]["finalizers"] = f.clone();
        }
        label_namespace_name(new, &name);
    }
    validate_metadata(def, new)?;
    let deleting = old_meta.contains_key("deletionTimestamp");
    if deleting {
        let before: std::collections::BTreeSet<String> = meta::finalizers(old).into_iter().collect();
        let added: std::collections::BTreeSet<String> = meta::finalizers(new)
            .into_iter()
            .filter(|f| !before.contains(f))
            .collect();
        if !added.is_empty() {
            // Go's %#v of the sorted new finalizers. kube validates object metadata twice on
            // update (the registry's generic check and the kind's own), so the cause is listed
            // twice and the message, which drops repeats, once.
            let listed = added.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>().join(", ");
            let cause = StatusCause {
                reason: "FieldValueForbidden".into(),
                message: format!(
                    "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{listed}}}"
                ),
                field: "metadata.finalizers".into(),
            };
            return Err(Status::invalid(
                &def.group,
                &def.kind,
                &name,
                vec![cause.clone(), cause],
            ));
        }
    }
    if def.generation && desired_state_changed(def, old, new) {
        let g = meta::generation(old).unwrap_or(0);
        meta::meta_mut(new).insert("generation".into(), json!(g + 1));
    }
    Ok(deleting && meta::finalizers(new).is_empty() && namespace_gone(new))
}

fn set_rv(obj: &mut Value, rv: Option<String>) {
    let meta = meta::meta_mut(obj);
    match rv {
        Some(rv) => meta.insert("resourceVersion".into(), Value::String(rv)),
        None => meta.remove("resourceVersion"),
    };
}

/// Namespaces additionally wait for `spec.finalizers` to drain; other objects have none.
fn namespace_gone(obj: &Value) -> bool {
    obj.pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_none_or(|a| a.is_empty())
        && meta::is_deleting(obj)
        && meta::finalizers(obj).is_empty()
}

/// Whether anything outside metadata (and outside status, for kinds with a status subresource) changed.
fn desired_state_changed(def: &ResourceDef, old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| -> Value {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("metadata");
            if def.status_subresource {
                m.remove("status");
            }
        }
        v
    };
    strip(old) != strip(new)
}

/// How a delete request proceeds.
#[derive(Debug, PartialEq)]
pub enum DeleteOutcome {
    /// Remove the object now.
    Remove,
    /// Keep it, updated to carry deletionTimestamp (and propagation finalizers).
    Mark(Value),
    /// Already being deleted: nothing to change.
    AlreadyDeleting,
}

/// Decides what DELETE does to `obj` given the propagation policy.
pub fn prepare_delete(def: &ResourceDef, obj: &Value, propagation: Option<&str>, now: &str) -> DeleteOutcome {
    if meta::is_deleting(obj) {
        return DeleteOutcome::AlreadyDeleting;
    }
    let is_namespace = def.group.is_empty() && def.resource == "namespaces";
    let mut fins = meta::finalizers(obj);
    match propagation {
        Some("Foreground") if !fins.iter().any(|f| f == "foregroundDeletion") => fins.push("foregroundDeletion".into()),
        Some("Orphan") if !fins.iter().any(|f| f == "orphan") => fins.push("orphan".into()),
        _ => {}
    }
    if fins.is_empty() && !is_namespace {
        return DeleteOutcome::Remove;
    }
    let mut marked = obj.clone();
    let meta = meta::meta_mut(&mut marked);
    meta.insert("deletionTimestamp".into(), Value::String(now.into()));
    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
    if !fins.is_empty() {
        meta.insert("finalizers".into(), json!(fins));
    }
    if let Some(g) = meta.get("generation").and_then(Value::as_i64).filter(|g| *g > 0) {
        meta.insert("generation".into(), json!(g + 1));
    }
    if is_namespace {
        marked["status"]["phase"] = json!("Terminating");
    }
    DeleteOutcome::Mark(marked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Schema;
    use std::sync::Arc;

    fn def(group: &str, resource: &str, kind: &str, namespaced: bool, cr: bool) -> ResourceDef {
        ResourceDef {
            group: group.into(),
            version: "v1".into(),
            resource: resource.into(),
            singular: kind.to_lowercase(),
            kind: kind.into(),
            list_kind: format!("{kind}List"),
            namespaced,
            short_names: vec![],
            categories: vec![],
            status_subresource: cr,
            generation: cr,
            strategic_merge: !cr,
            create_only: false,
            selectable_fields: vec![],
            printer_columns: vec![],
            schema: Arc::new(Schema::default()),
            conversion: None,
            terminating: false,
            storage_version_hash: None,
            schema_versions: None,
        }
    }

    #[test]
    fn create_sets_server_metadata() {
        let d = def("example.io", "widgets", "Widget", true, true);
        let mut o = json!({"metadata": {"generateName": "w-", "uid": "client", "annotations": {"kcp.io/cluster": "x"}}, "spec": {"a": 1}, "status": {"s": 1}});
        prepare_create(&d, Some("default"), &mut o, "2026-01-01T00:00:00Z").unwrap();
        let name = meta::name(&o).unwrap();
        assert!(name.starts_with("w-") && name.len() == 7, "{name}");
        assert_ne!(meta::uid(&o).unwrap(), "client");
        assert_eq!(o["metadata"]["generation"], 1);
        assert_eq!(o["metadata"]["namespace"], "default");
        assert_eq!(o["apiVersion"], "example.io/v1");
        assert_eq!(o["kind"], "Widget");
        assert!(o.get("status").is_none());
        assert!(o["metadata"].get("annotations").is_none());
    }

    #[test]
    fn create_rejections() {
        let cm = def("", "configmaps", "ConfigMap", true, false);
        let cases: Vec<(Value, Option<&str>, u16, &str)> = vec![
            (
                json!({"metadata": {}}),
                Some("d"),
                422,
                "name or generateName is required",
            ),
            (
                json!({"metadata": {"name": "Bad_Name"}}),
                Some("d"),
                422,
                "RFC 1123 subdomain",
            ),
            (
                json!({"metadata": {"name": "a", "resourceVersion": "5"}}),
                Some("d"),
                400,
                "resourceVersion should not be set",
            ),
            (
                json!({"metadata": {"name": "a", "namespace": "other"}}),
                Some("d"),
                400,
                "does not match the namespace",
            ),
            (
                json!({"kind": "Secret", "metadata": {"name": "a"}}),
                Some("d"),
                400,
                "converting (v1.Secret) to (core.ConfigMap): unknown conversion",
            ),
            (
                json!({"metadata": {"name": "a", "labels": {"k": "bad value"}}}),
                Some("d"),
                422,
                "valid label",
            ),
        ];
        for (mut obj, ns, code, text) in cases {
            let err = prepare_create(&cm, ns, &mut obj, "t").unwrap_err();
            assert_eq!(err.code, code, "{obj}");
            assert!(err.message.contains(text), "{} does not contain {text}", err.message);
        }
    }

    #[test]
    fn update_keeps_status_and_bumps_generation() {
        let d = def("example.io", "widgets", "Widget", false, true);
        let old = json!({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w", "uid": "u", "generation": 3, "resourceVersion": "7"}, "spec": {"a": 1}, "status": {"s": 1}});
        let mut new = json!({"metadata": {"name": "w", "uid": "x", "resourceVersion": "7"}, "spec": {"a": 2}, "status": {"s": 2}});
        assert!(!prepare_update(&d, &old, &mut new, WritePart::Main, true).unwrap());
        assert_eq!(new["status"], json!({"s": 1}));
        assert_eq!(new["metadata"]["uid"], "u");
        assert_eq!(new["metadata"]["generation"], 4);
        // A status write changes only status and never generation.
        let mut st = json!({"metadata": {"name": "w", "labels": {"x": "y"}, "resourceVersion": "7"}, "spec": {"a": 9}, "status": {"s": 5}});
        prepare_update(&d, &old, &mut st, WritePart::Status, true).unwrap();
        assert_eq!(st["spec"], json!({"a": 1}));
        assert_eq!(st["status"], json!({"s": 5}));
        assert!(st["metadata"].get("labels").is_none());
        assert_eq!(st["metadata"]["generation"], 3);
        // CRs need a resourceVersion on PUT.
        let mut no_rv = json!({"metadata": {"name": "w"}, "spec": {}});
        assert_eq!(
            prepare_update(&d, &old, &mut no_rv, WritePart::Main, true)
                .unwrap_err()
                .code,
            422
        );
    }

    #[test]
    fn finalizer_flow() {
        let d = def("", "configmaps", "ConfigMap", true, false);
        let obj = json!({"metadata": {"name": "c", "finalizers": ["a/b"]}});
        let DeleteOutcome::Mark(marked) = prepare_delete(&d, &obj, None, "t") else {
            panic!("expected mark")
        };
        assert_eq!(marked["metadata"]["deletionTimestamp"], "t");
        assert_eq!(prepare_delete(&d, &marked, None, "t"), DeleteOutcome::AlreadyDeleting);
        let mut add = marked.clone();
        add["metadata"]["finalizers"] = json!(["a/b", "c/d"]);
        assert_eq!(
            prepare_update(&d, &marked, &mut add, WritePart::Main, false)
                .unwrap_err()
                .code,
            422
        );
        let mut remove = marked.clone();
        remove["metadata"]["finalizers"] = json!([]);
        assert!(prepare_update(&d, &marked, &mut remove, WritePart::Main, false).unwrap());
        assert_eq!(
            prepare_delete(&d, &json!({"metadata": {"name": "x"}}), None, "t"),
            DeleteOutcome::Remove
        );
    }

    #[test]
    fn namespace_lifecycle() {
        let d = def("", "namespaces", "Namespace", false, false);
        let mut ns = json!({"metadata": {"name": "team-a"}});
        prepare_create(&d, None, &mut ns, "t").unwrap();
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(ns["status"]["phase"], "Active");
        assert_eq!(
            ns["metadata"]["labels"],
            json!({"kubernetes.io/metadata.name": "team-a"})
        );
        // The label is the server's: an update cannot drop or change it.
        for labels in [json!({}), json!({"kubernetes.io/metadata.name": "other", "x": "y"})] {
            let mut edited = ns.clone();
            edited["metadata"]["labels"] = labels;
            prepare_update(&d, &ns, &mut edited, WritePart::Main, false).unwrap();
            assert_eq!(edited["metadata"]["labels"]["kubernetes.io/metadata.name"], "team-a");
        }
        let DeleteOutcome::Mark(term) = prepare_delete(&d, &ns, None, "t") else {
            panic!("expected mark")
        };
        assert_eq!(term["status"]["phase"], "Terminating");
        let mut fin = json!({"metadata": {"name": "team-a"}, "spec": {"finalizers": []}});
        assert!(prepare_update(&d, &term, &mut fin, WritePart::Finalize, false).unwrap());
        let mut bad = json!({"metadata": {"name": "Team"}});
        assert_eq!(prepare_create(&d, None, &mut bad, "t").unwrap_err().code, 422);
    }
}
