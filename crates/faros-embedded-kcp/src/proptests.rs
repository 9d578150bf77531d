//! Property tests: [`crate::properties`] driven by proptest with generated input.
//!
//! Each property runs twice: once on arbitrary text or bytes (what a hostile client can send),
//! once on input shaped like the real thing (selector grammar, JSON documents, patch
//! operations), which reaches the deeper branches arbitrary bytes rarely get past.

use proptest::prelude::*;
use serde_json::{Map, Value};

use crate::properties;

/// Arbitrary JSON values, nested a few levels, with keys and strings drawn from a small alphabet
/// so patches and documents collide on the same paths.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-c]{0,3}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Object keys: the fields real objects have, plus a few that mean nothing.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("metadata".to_string()),
        Just("name".to_string()),
        Just("labels".to_string()),
        Just("data".to_string()),
        Just("rules".to_string()),
        Just("verbs".to_string()),
        Just("apiVersion".to_string()),
        Just("kind".to_string()),
        Just("$patch".to_string()),
        Just("$retainKeys".to_string()),
        "[a-c]{1,2}",
    ]
}

/// ConfigMap-shaped objects for server-side apply.
fn configmap() -> impl Strategy<Value = Value> {
    (
        "[a-c]{1,3}",
        prop::collection::btree_map("[a-c]{1,2}", "[a-c]{0,2}", 0..3),
        prop::collection::btree_map("[a-c]{1,2}", "[a-c]{0,2}", 0..3),
    )
        .prop_map(|(name, labels, data)| {
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "labels": labels},
                "data": data,
            })
        })
}

/// JSON patch operation lists with valid and invalid ops, pointers and values.
fn json_patch_ops() -> impl Strategy<Value = Value> {
    let pointer = prop_oneof![
        Just("".to_string()),
        Just("/-".to_string()),
        "(/([a-c]|[0-3]|-|~0|~1|~2)){1,3}",
    ];
    let op = prop_oneof![
        Just("add"),
        Just("remove"),
        Just("replace"),
        Just("move"),
        Just("copy"),
        Just("test"),
        Just("bogus"),
    ];
    let one = (op, pointer.clone(), pointer, json())
        .prop_map(|(op, path, from, value)| serde_json::json!({"op": op, "path": path, "from": from, "value": value}));
    prop::collection::vec(one, 0..5).prop_map(Value::Array)
}

/// Text shaped by the label selector grammar: keys, operators, values, sets, separators.
fn selector_text() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        "[a-z0-9]{1,4}",
        "[a-z]{1,3}\\.[a-z]{1,3}/[a-z]{1,3}",
        Just("=".to_string()),
        Just("==".to_string()),
        Just("!=".to_string()),
        Just("!".to_string()),
        Just(" in ".to_string()),
        Just(" notin ".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just(",".to_string()),
        Just(">".to_string()),
        Just("<".to_string()),
        Just(" ".to_string()),
        Just("-".to_string()),
        Just("_".to_string()),
    ];
    prop::collection::vec(token, 0..12).prop_map(|t| t.concat())
}

fn labels() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map("[a-z0-9]{1,3}", "[a-z0-9]{0,3}", 0..4)
        .prop_map(|m| m.into_iter().map(|(k, v)| (k, Value::from(v))).collect())
}

fn bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}

proptest! {

    #[test]
    fn label_selectors_from_arbitrary_text(input in ".{0,64}", labels in labels()) {
        properties::label_selector(&input, &labels);
    }

    #[test]
    fn label_selectors_from_grammar(input in selector_text(), labels in labels()) {
        properties::label_selector(&input, &labels);
    }

    #[test]
    fn label_selector_objects(value in json()) {
        properties::label_selector_object(&bytes(&value));
    }

    #[test]
    fn label_selector_objects_shaped(
        match_labels in prop::collection::btree_map("[a-z./]{1,6}", "[a-z._-]{0,4}", 0..3),
        key in "[a-z./]{1,6}",
        operator in prop_oneof![Just("In"), Just("NotIn"), Just("Exists"), Just("DoesNotExist"), Just("Gt")],
        values in prop::collection::vec("[a-z0-9._-]{0,4}", 0..3),
    ) {
        let object = serde_json::json!({
            "matchLabels": match_labels,
            "matchExpressions": [{"key": key, "operator": operator, "values": values}],
        });
        properties::label_selector_object(&bytes(&object));
    }

    #[test]
    fn field_selectors(input in "([a-z.]{0,8}(=|==|!=|\\\\,|\\\\\\\\|,| )?){0,5}", value in ".{0,8}") {
        properties::field_selector(&input, &value);
    }

    #[test]
    fn field_selectors_from_arbitrary_text(input in ".{0,64}", value in ".{0,8}") {
        properties::field_selector(&input, &value);
    }

    #[test]
    fn json_patches(document in json(), ops in json_patch_ops()) {
        properties::json_patch(&bytes(&document), &bytes(&ops));
    }

    #[test]
    fn json_patches_of_arbitrary_json(document in json(), ops in json()) {
        properties::json_patch(&bytes(&document), &bytes(&ops));
    }

    #[test]
    fn merge_patches(document in json(), patch in json()) {
        properties::merge_patch(&bytes(&document), &bytes(&patch));
    }

    #[test]
    fn strategic_merge_patches(document in json(), patch in json()) {
        properties::strategic_merge(&bytes(&document), &bytes(&patch));
    }

    #[test]
    fn server_side_apply_of_arbitrary_json(live in json(), applied in json()) {
        properties::server_side_apply_twice(&bytes(&live), &bytes(&applied));
    }

    #[test]
    fn server_side_apply_of_configmaps(live in configmap(), applied in configmap()) {
        properties::server_side_apply_twice(&bytes(&live), &bytes(&applied));
    }

    #[test]
    fn fields_v1_sets(value in json()) {
        properties::fields_v1(&bytes(&value));
    }

    #[test]
    fn fields_v1_shaped(keys in prop::collection::vec("(f|k|v|i):[a-c{}\":0-9]{0,6}|\\.", 0..6)) {
        let mut set = Map::new();
        for k in keys {
            set.insert(k, Value::Object(Map::new()));
        }
        properties::fields_v1(&bytes(&Value::Object(set)));
    }

    #[test]
    fn managed_fields_lists(value in json()) {
        properties::managed_fields(&bytes(&value));
    }

    #[test]
    fn protobuf_bodies_from_arbitrary_bytes(body in prop::collection::vec(any::<u8>(), 0..96)) {
        properties::protobuf_body(&body);
    }

    #[test]
    fn protobuf_bodies_with_the_magic_and_a_known_kind(
        kind in prop_oneof![Just("ConfigMap"), Just("Secret"), Just("DeleteOptions"), Just("Status"), Just("ConfigMapList"), Just("Namespace")],
        raw in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        // k8s\0, then runtime.Unknown{typeMeta{apiVersion, kind}, raw}: reaches the per-kind decoders.
        let api_version = "v1";
        let mut type_meta = vec![0x0a, api_version.len() as u8];
        type_meta.extend_from_slice(api_version.as_bytes());
        type_meta.extend_from_slice(&[0x12, kind.len() as u8]);
        type_meta.extend_from_slice(kind.as_bytes());
        let mut body = b"k8s\0".to_vec();
        body.extend_from_slice(&[0x0a, type_meta.len() as u8]);
        body.extend_from_slice(&type_meta);
        body.push(0x12);
        body.push(raw.len() as u8);
        body.extend_from_slice(&raw);
        properties::protobuf_body(&body);
    }

    #[test]
    fn request_paths(input in "(/(clusters|api|apis|v1|root|[a-c:*~]{0,4}|namespaces|status|watch|%2F|\\.\\.)){0,9}/?") {
        properties::request_path(&input);
    }

    #[test]
    fn request_paths_from_arbitrary_text(input in ".{0,64}") {
        properties::request_path(&input);
    }

    #[test]
    fn continue_tokens(input in "[A-Za-z0-9_=+/-]{0,24}", rv in any::<u64>(), key in prop::collection::vec(any::<u8>(), 1..32)) {
        // The server always issues a token after some key; an empty last key is never issued.
        properties::continue_token(&input, rv, &key);
    }
}

/// Inputs the fuzzers found, kept as regression tests.
#[test]
fn fuzzer_findings() {
    // A set member with a 57-digit number: parsed inexactly it printed as a different float, so
    // the fieldsV1 round trip (and managedFields ownership of such a value) changed. Fixed by
    // serde_json's exact float parsing (`float_roundtrip`).
    properties::fields_v1(br#"{"v:6":{"v:999999989999999999999999999999999999999999999999999999999":{}}}"#);
}
