//! The properties every parser of tenant and provider input must keep, as plain functions that
//! panic when one is broken.
//!
//! Two drivers call them: the crate's property tests (`proptests.rs`, with generated input, run
//! by `cargo test`) and the `cargo fuzz` targets in `fuzz/` (coverage-guided input, run by
//! `cargo xtask fuzz`). Keeping the properties here means both check the same thing and a
//! fuzzer finding becomes a one-line regression test.
//!
//! Every function takes raw input exactly as it arrives over HTTP (strings, bytes that may not
//! be JSON) and must never panic on it; where an encoding has an inverse, the round trip must
//! give back what was parsed.

use serde_json::{Map, Value};

use crate::patch::apply::{ApplyOptions, server_side_apply};
use crate::patch::fieldpath::FieldSet;
use crate::patch::managed_fields::{decode_managed_fields, encode_managed_fields};
use crate::patch::{json_patch as apply_json_patch, merge_patch as apply_merge_patch, strategic_merge_patch};
use crate::schema::builtin_schema_ref;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::ContinueToken;

/// `?labelSelector=`: parsing never panics, a parsed selector prints canonically (printing and
/// parsing again gives the same selector), and matching arbitrary labels never panics.
pub fn label_selector(input: &str, labels: &Map<String, Value>) {
    let Ok(selector) = LabelSelector::parse(input) else {
        return;
    };
    let printed = selector.to_string();
    let reparsed = LabelSelector::parse(&printed)
        .unwrap_or_else(|e| panic!("{input:?} parsed, but its canonical form {printed:?} does not: {e}"));
    assert_eq!(reparsed, selector, "{input:?} -> {printed:?} changed meaning");
    let _ = selector.matches(Some(labels));
    let _ = selector.matches(None);
}

/// A `metav1.LabelSelector` object (claims, bindings): converting arbitrary JSON never panics,
/// and what converts prints as a query selector with the same meaning.
pub fn label_selector_object(input: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(input) else {
        return;
    };
    let Ok(selector) = LabelSelector::from_label_selector(&value) else {
        return;
    };
    let printed = selector.to_string();
    let reparsed = LabelSelector::parse(&printed)
        .unwrap_or_else(|e| panic!("selector object {value} printed as {printed:?}, which does not parse: {e}"));
    assert_eq!(
        reparsed, selector,
        "selector object {value} -> {printed:?} changed meaning"
    );
}

/// `?fieldSelector=`: parsing and matching never panic.
pub fn field_selector(input: &str, value: &str) {
    let Ok(selector) = FieldSelector::parse(input) else {
        return;
    };
    let fields: Vec<String> = selector.fields().map(str::to_string).collect();
    let _ = selector.matches(|f| fields.iter().any(|x| x == f).then(|| value.to_string()));
}

/// RFC 6902 JSON patch: never panics, and a failed patch leaves the document unchanged.
pub fn json_patch(document: &[u8], ops: &[u8]) {
    let (Ok(original), Ok(ops)) = (
        serde_json::from_slice::<Value>(document),
        serde_json::from_slice::<Value>(ops),
    ) else {
        return;
    };
    let mut target = original.clone();
    if apply_json_patch(&mut target, &ops).is_err() {
        assert_eq!(target, original, "a failed JSON patch changed the document");
    }
}

/// RFC 7386 merge patch: never panics and is idempotent (applying the same patch twice gives
/// what applying it once gave).
pub fn merge_patch(document: &[u8], patch: &[u8]) {
    let (Ok(mut once), Ok(patch)) = (
        serde_json::from_slice::<Value>(document),
        serde_json::from_slice::<Value>(patch),
    ) else {
        return;
    };
    apply_merge_patch(&mut once, &patch);
    let mut twice = once.clone();
    apply_merge_patch(&mut twice, &patch);
    assert_eq!(twice, once, "merge patch {patch} is not idempotent");
}

/// Strategic merge patch against the schema of a built-in kind with list merge keys (RBAC
/// Roles: `rules` is atomic, ConfigMaps: maps, Secrets): never panics, and the empty patch
/// changes nothing.
pub fn strategic_merge(document: &[u8], patch: &[u8]) {
    let (Ok(original), Ok(patch)) = (
        serde_json::from_slice::<Value>(document),
        serde_json::from_slice::<Value>(patch),
    ) else {
        return;
    };
    for (group, kind) in SCHEMAS {
        let Some(schema) = builtin_schema_ref(group, kind) else {
            panic!("no built-in schema for {group}/{kind}");
        };
        let _ = strategic_merge_patch(&original, &patch, schema);
        if original.is_object()
            && let Ok(same) = strategic_merge_patch(&original, &Value::Object(Map::new()), schema)
        {
            assert_eq!(same, original, "the empty strategic patch changed a {kind}");
        }
    }
}

/// Server-side apply of an arbitrary configuration onto an arbitrary live object: never panics,
/// and applying the same configuration again as the same manager is a no-op on the object.
pub fn server_side_apply_twice(live: &[u8], applied: &[u8]) {
    let Ok(applied) = serde_json::from_slice::<Value>(applied) else {
        return;
    };
    let live = serde_json::from_slice::<Value>(live).ok();
    let Some(schema) = builtin_schema_ref("", "ConfigMap") else {
        panic!("no built-in schema for ConfigMap");
    };
    let opts = ApplyOptions {
        manager: "fuzz",
        force: false,
        schema,
        subresource: None,
        api_version: "v1",
        now: "2026-01-01T00:00:00Z",
    };
    let Ok(first) = server_side_apply(live.as_ref(), &applied, &opts) else {
        return;
    };
    let second = server_side_apply(Some(&first), &applied, &opts)
        .unwrap_or_else(|e| panic!("re-applying an accepted configuration failed: {e:?}"));
    assert_eq!(second, first, "re-applying the same configuration changed the object");
}

/// `managedFields[].fieldsV1`: decoding arbitrary JSON never panics, and an accepted set
/// encodes to JSON that decodes to the same set.
pub fn fields_v1(input: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(input) else {
        return;
    };
    let Ok(set) = FieldSet::from_fields_v1(&value) else {
        return;
    };
    let encoded = set.to_fields_v1();
    let decoded = FieldSet::from_fields_v1(&encoded)
        .unwrap_or_else(|e| panic!("fieldsV1 {value} decoded, but its encoding {encoded} does not: {e}"));
    assert_eq!(decoded, set, "fieldsV1 round trip changed {value}");
}

/// `metadata.managedFields` as a client sends it: decoding never panics, and what decodes
/// survives an encode/decode round trip.
pub fn managed_fields(input: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(input) else {
        return;
    };
    let Ok(entries) = decode_managed_fields(&value) else {
        return;
    };
    let encoded = encode_managed_fields(&entries);
    let decoded = decode_managed_fields(&encoded)
        .unwrap_or_else(|e| panic!("managedFields {value} decoded, but its encoding {encoded} does not: {e}"));
    assert_eq!(decoded, entries, "managedFields round trip changed {value}");
}

/// Protobuf request bodies from Go clients: decoding arbitrary bytes never panics, and what
/// decodes encodes back to a body that decodes to the same object (nothing silently dropped).
pub fn protobuf_body(body: &[u8]) {
    let _ = crate::api::protobuf::decode_delete_options(body);
    let Ok(decoded) = crate::api::protobuf::decode(body) else {
        return;
    };
    let encoded = crate::api::protobuf::encode(&decoded)
        .unwrap_or_else(|e| panic!("{decoded} decoded from protobuf but does not encode: {e:?}"));
    let again = crate::api::protobuf::decode(&encoded)
        .unwrap_or_else(|e| panic!("{decoded} encoded to protobuf that does not decode: {e:?}"));
    assert_eq!(again, decoded, "protobuf round trip changed the object");
}

/// Request paths, `/clusters/<path>/...` included: parsing never panics.
pub fn request_path(input: &str) {
    let _ = crate::api::request::parse(input);
}

/// `?continue=` tokens: decoding never panics, and every token the server issues decodes to
/// what it encoded.
pub fn continue_token(input: &str, rv: u64, last_key: &[u8]) {
    let _ = ContinueToken::decode(input);
    let issued = ContinueToken {
        rv,
        last_key: last_key.to_vec(),
    };
    let decoded = ContinueToken::decode(&issued.encode())
        .unwrap_or_else(|e| panic!("a token the server issued does not decode: {e}"));
    assert_eq!(decoded, issued);
}

/// Built-in kinds whose schemas the patch properties run against.
const SCHEMAS: [(&str, &str); 3] = [("", "ConfigMap"), ("", "Secret"), ("rbac.authorization.k8s.io", "Role")];
