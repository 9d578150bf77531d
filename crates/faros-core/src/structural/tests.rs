use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;

/// A CRD-style schema exercising every feature the server understands.
fn widget_schema_json() -> Value {
    json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["replicas"],
                "properties": {
                    "replicas": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 10, "default": 1},
                    "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast"},
                    "name": {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 5},
                    "tags": {
                        "type": "array", "items": {"type": "string"},
                        "x-kubernetes-list-type": "set", "maxItems": 2
                    },
                    "hosts": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name", "protocol"],
                        "items": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {
                                "name": {"type": "string"},
                                "protocol": {"type": "string", "default": "TCP"},
                                "port": {"type": "integer"}
                            }
                        }
                    },
                    "config": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {"level": {"type": "integer"}}
                    },
                    "labels": {
                        "type": "object",
                        "additionalProperties": {"type": "string"},
                        "maxProperties": 2,
                        "x-kubernetes-map-type": "atomic"
                    },
                    "selector": {"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1},
                    "template": {
                        "type": "object",
                        "x-kubernetes-embedded-resource": true,
                        "x-kubernetes-preserve-unknown-fields": true
                    },
                    "nested": {
                        "type": "object",
                        "default": {},
                        "properties": {
                            "inner": {
                                "type": "object",
                                "default": {},
                                "properties": {"value": {"type": "string", "default": "x"}}
                            }
                        }
                    },
                    "note": {"type": "string", "nullable": true},
                    "ratio": {"type": "number", "maximum": 1, "exclusiveMaximum": true, "multipleOf": 0.25},
                    "big": {"type": "integer", "minimum": 1000000}
                }
            },
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
        }
    })
}

fn widget() -> Schema {
    Schema::from_openapi_v3(&widget_schema_json()).expect("widget schema parses")
}

fn spec_of(s: &Schema) -> &Schema {
    &s.properties["spec"]
}

#[test]
fn parses_crd_extensions() {
    let s = widget();
    let spec = spec_of(&s);
    assert_eq!(s.type_.as_deref(), Some("object"));
    assert_eq!(spec.required, vec!["replicas".to_string()]);

    let replicas = &spec.properties["replicas"];
    assert_eq!(
        (
            replicas.type_.as_deref(),
            replicas.format.as_deref(),
            replicas.minimum,
            replicas.maximum
        ),
        (Some("integer"), Some("int32"), Some(1.0), Some(10.0))
    );
    assert_eq!(replicas.default, Some(json!(1)));

    let port = &spec.properties["port"];
    assert!(port.int_or_string);
    assert_eq!(port.type_, None);

    assert_eq!(spec.properties["mode"].enum_, vec![json!("fast"), json!("slow")]);
    let name = &spec.properties["name"];
    assert_eq!(
        (name.pattern.as_deref(), name.min_length, name.max_length),
        (Some("^[a-z]+$"), Some(2), Some(5))
    );
    assert_eq!(spec.properties["tags"].list_type, Some(ListType::Set));
    assert_eq!(spec.properties["tags"].max_items, Some(2));
    assert_eq!(spec.properties["hosts"].list_type(), ListType::Atomic);
    let ports = &spec.properties["ports"];
    assert_eq!(
        ports.list_type,
        Some(ListType::Map(vec!["name".into(), "protocol".into()]))
    );
    assert_eq!(
        ports.items.as_ref().map(|i| i.properties["protocol"].default.clone()),
        Some(Some(json!("TCP")))
    );
    assert!(spec.properties["config"].preserve_unknown_fields);
    let labels = &spec.properties["labels"];
    assert!(labels.map_atomic);
    assert_eq!(
        labels.additional_properties.as_ref().and_then(|a| a.type_.clone()),
        Some("string".to_string())
    );
    assert_eq!(
        labels.field("anything").and_then(|f| f.type_.as_deref()),
        Some("string")
    );
    let template = &spec.properties["template"];
    assert!(template.embedded_resource && template.preserve_unknown_fields);
    assert!(spec.properties["note"].nullable);
    let ratio = &spec.properties["ratio"];
    assert_eq!(
        (ratio.maximum, ratio.exclusive_maximum, ratio.multiple_of),
        (Some(1.0), true, Some(0.25))
    );
}

#[test]
fn parse_resolves_refs_all_of_and_nullable_type_arrays() {
    let v = json!({
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/Thing", "description": "overrides"},
            "b": {"allOf": [{"$ref": "#/definitions/Other"}], "description": "b"},
            "c": {"type": ["string", "null"]},
            "d": {"$ref": "#/components/schemas/Node"},
            "e": {"type": "integer", "exclusiveMinimum": 3}
        },
        "$defs": {"Thing": {"type": "object", "description": "thing", "properties": {"x": {"type": "string"}}}},
        "definitions": {"Other": {"type": "array", "items": {"type": "integer"}}},
        "components": {"schemas": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/components/schemas/Node"}}}}}
    });
    let s = Schema::from_openapi_v3(&v).expect("parses");
    let a = &s.properties["a"];
    assert_eq!(a.description.as_deref(), Some("overrides"));
    assert_eq!(a.properties["x"].type_.as_deref(), Some("string"));
    let b = &s.properties["b"];
    assert_eq!(
        (b.type_.as_deref(), b.description.as_deref()),
        (Some("array"), Some("b"))
    );
    assert_eq!(b.items.as_ref().and_then(|i| i.type_.clone()), Some("integer".into()));
    assert_eq!(
        (s.properties["c"].type_.as_deref(), s.properties["c"].nullable),
        (Some("string"), true)
    );
    // A recursive definition is expanded once, then accepted as is.
    let child = &s.properties["d"].properties["child"];
    assert!(child.preserve_unknown_fields && child.properties.is_empty());
    assert_eq!(
        (s.properties["e"].minimum, s.properties["e"].exclusive_minimum),
        (Some(3.0), true)
    );
}

#[test]
fn parse_errors() {
    let cases = [
        (json!({"type": 3}), "invalid value for type"),
        (
            json!({"type": "array", "x-kubernetes-list-type": "map"}),
            "x-kubernetes-list-map-keys",
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "bag"}),
            "must be one of",
        ),
        (
            json!({"properties": {"a": {"$ref": "#/$defs/Missing"}}}),
            "cannot resolve $ref",
        ),
        (json!({"type": "string", "pattern": "("}), "invalid value for pattern"),
        (json!({"properties": {"a": 7}}), "must be a JSON object"),
        (json!({"type": "array", "items": [{"type": "string"}]}), "tuple items"),
        (
            json!({"type": "object", "x-kubernetes-map-type": "weird"}),
            "\"atomic\" or \"granular\"",
        ),
    ];
    for (v, want) in cases {
        let err = Schema::from_openapi_v3(&v).expect_err(&v.to_string()).to_string();
        assert!(err.contains(want), "{v}: {err}");
    }
}

#[test]
fn openapi_round_trip_is_stable() {
    // Canonical input (no anyOf, which is accepted but not kept) prints back unchanged.
    let mut canonical = widget_schema_json();
    if let Some(port) = canonical
        .pointer_mut("/properties/spec/properties/port")
        .and_then(Value::as_object_mut)
    {
        port.remove("anyOf");
    }
    let parsed = Schema::from_openapi_v3(&canonical).expect("parses");
    assert_eq!(parsed.to_openapi_v3(), canonical);

    // And printing then parsing is the identity for every schema, built-ins included.
    let mut all = vec![widget(), object_meta_schema()];
    all.extend(BUILTIN_KINDS.iter().filter_map(|(g, k)| builtin_schema(g, k)));
    for s in all {
        let printed = s.to_openapi_v3();
        let reparsed = Schema::from_openapi_v3(&printed).expect("printed schema parses");
        assert_eq!(reparsed, s);
        assert_eq!(reparsed.to_openapi_v3(), printed);
    }
}

#[test]
fn unknown_fields_of_a_config_map() {
    let cm = builtin_schema("", "ConfigMap").expect("ConfigMap schema");
    let obj = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "foo", "namespace": "default", "labels": {"a": "b"}, "annotations": {"c": "d"},
            "finalizers": ["x/y"], "resourceVersion": "5", "uid": "u", "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u1", "controller": true}],
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:data": {"f:a": {}}}}],
            "bogus": 1
        },
        "data": {"a": "b"},
        "binaryData": {"b": "YQ=="},
        "immutable": false,
        "datax": {"a": "b"}
    });
    assert_eq!(
        cm.unknown_fields(&obj),
        vec![".metadata.bogus".to_string(), ".datax".to_string()]
    );
}

fn widget_object() -> Value {
    json!({
        "apiVersion": "example.io/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "labels": {"a": "b"}, "extra": true},
        "spec": {
            "replicas": 2,
            "unknownField": 1,
            "ports": [{"name": "http", "port": 80, "extra": "x"}],
            "config": {"anything": {"goes": [1, 2]}, "level": 3},
            "template": {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "foo": "bar"},
                "spec": {"containers": []}
            }
        },
        "status": {"phase": "Ready", "extra": 1},
        "top": 1
    })
}

#[test]
fn unknown_fields_of_a_custom_resource() {
    let want: Vec<String> = [
        ".metadata.extra",
        ".spec.unknownField",
        ".spec.ports[0].extra",
        ".spec.template.metadata.foo",
        ".status.extra",
        ".top",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(widget().unknown_fields(&widget_object()), want);
}

#[test]
fn prune_drops_what_unknown_fields_reports_and_keeps_preserved_subtrees() {
    let mut obj = widget_object();
    widget().prune(&mut obj);
    let want = json!({
        "apiVersion": "example.io/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "labels": {"a": "b"}},
        "spec": {
            "replicas": 2,
            "ports": [{"name": "http", "port": 80}],
            "config": {"anything": {"goes": [1, 2]}, "level": 3},
            "template": {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"containers": []}
            }
        },
        "status": {"phase": "Ready"}
    });
    assert_eq!(obj, want);
    assert_eq!(widget().unknown_fields(&obj), Vec::<String>::new());
}

#[test]
fn prune_without_item_schema_empties_objects() {
    let s = Schema::from_openapi_v3(&json!({
        "type": "object",
        "properties": {"list": {"type": "array"}, "kept": {"type": "array", "x-kubernetes-preserve-unknown-fields": true}}
    }))
    .expect("parses");
    let mut obj = json!({"list": [{"a": 1}, 2], "kept": [{"a": 1}]});
    assert_eq!(s.unknown_fields(&obj), vec![".list[0].a".to_string()]);
    s.prune(&mut obj);
    assert_eq!(obj, json!({"list": [{}, 2], "kept": [{"a": 1}]}));
}

#[test]
fn defaults_are_applied_nested_and_nulls_handled() {
    let cases = [
        (
            json!({"spec": {"replicas": 3}}),
            json!({"spec": {"replicas": 3, "mode": "fast", "nested": {"inner": {"value": "x"}}}}),
        ),
        (
            json!({"spec": {"ports": [{"name": "http"}], "nested": {"inner": {"value": "y"}}}}),
            json!({"spec": {"ports": [{"name": "http", "protocol": "TCP"}], "nested": {"inner": {"value": "y"}},
                            "replicas": 1, "mode": "fast"}}),
        ),
        (
            // null: defaulted when there is a default, kept when nullable, dropped otherwise.
            json!({"spec": {"replicas": 2, "mode": null, "note": null, "name": null}}),
            json!({"spec": {"replicas": 2, "mode": "fast", "note": null, "nested": {"inner": {"value": "x"}}}}),
        ),
        (
            json!({"metadata": {"name": "a", "creationTimestamp": null}}),
            json!({"metadata": {"name": "a"}}),
        ),
    ];
    for (mut obj, want) in cases {
        widget().apply_defaults(&mut obj);
        assert_eq!(obj, want);
    }
}

fn c(reason: &str, field: &str, message: &str) -> crate::status::StatusCause {
    crate::status::StatusCause {
        reason: reason.into(),
        message: message.into(),
        field: field.into(),
    }
}

#[test]
fn validation_messages_match_kube_apiserver() {
    let s = widget();
    let cases: Vec<(Value, Vec<crate::status::StatusCause>)> = vec![
        (
            json!({"replicas": 5, "mode": "slow", "name": "abc", "port": 80, "note": null, "ratio": 0.5}),
            vec![],
        ),
        (json!({"replicas": 5, "port": "http"}), vec![]),
        (
            json!({}),
            vec![c("FieldValueRequired", "spec.replicas", "Required value")],
        ),
        (
            json!({"replicas": "3"}),
            vec![c(
                "FieldValueTypeInvalid",
                "spec.replicas",
                r#"Invalid value: "string": spec.replicas in body must be of type integer: "string""#,
            )],
        ),
        (
            json!({"replicas": 0}),
            vec![c(
                "FieldValueInvalid",
                "spec.replicas",
                "Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
            )],
        ),
        (
            json!({"replicas": 11}),
            vec![c(
                "FieldValueInvalid",
                "spec.replicas",
                "Invalid value: 11: spec.replicas in body should be less than or equal to 10",
            )],
        ),
        (
            json!({"replicas": 1, "mode": "medium"}),
            vec![c(
                "FieldValueNotSupported",
                "spec.mode",
                r#"Unsupported value: "medium": supported values: "fast", "slow""#,
            )],
        ),
        (
            json!({"replicas": 1, "mode": null}),
            vec![c(
                "FieldValueTypeInvalid",
                "spec.mode",
                r#"Invalid value: "null": spec.mode in body must be of type string: "null""#,
            )],
        ),
        (
            json!({"replicas": 1, "name": "ABC"}),
            vec![c(
                "FieldValueInvalid",
                "spec.name",
                r#"Invalid value: "ABC": spec.name in body should match '^[a-z]+$'"#,
            )],
        ),
        (
            json!({"replicas": 1, "name": "a"}),
            vec![c(
                "FieldValueInvalid",
                "spec.name",
                r#"Invalid value: "a": spec.name in body should be at least 2 chars long"#,
            )],
        ),
        (
            json!({"replicas": 1, "name": "abcdef"}),
            vec![c(
                "FieldValueTooLong",
                "spec.name",
                "Too long: may not be more than 5 bytes",
            )],
        ),
        (
            json!({"replicas": 1, "tags": ["a", "b", "a"]}),
            vec![
                c(
                    "FieldValueTooMany",
                    "spec.tags",
                    "Too many: 3: must have at most 2 items",
                ),
                c("FieldValueDuplicate", "spec.tags[2]", r#"Duplicate value: "a""#),
            ],
        ),
        (
            json!({"replicas": 1, "hosts": []}),
            vec![c(
                "FieldValueInvalid",
                "spec.hosts",
                "Invalid value: 0: spec.hosts in body should have at least 1 items",
            )],
        ),
        (
            json!({"replicas": 1, "labels": {"a": "1", "b": "2", "c": "3"}}),
            vec![c(
                "FieldValueTooMany",
                "spec.labels",
                "Too many: 3: must have at most 2 items",
            )],
        ),
        (
            json!({"replicas": 1, "labels": {"a": 1}}),
            vec![c(
                "FieldValueTypeInvalid",
                "spec.labels.a",
                r#"Invalid value: "integer": spec.labels.a in body must be of type string: "integer""#,
            )],
        ),
        (
            json!({"replicas": 1, "selector": {}}),
            vec![c(
                "FieldValueInvalid",
                "spec.selector",
                "Invalid value: 0: spec.selector in body should have at least 1 properties",
            )],
        ),
        (
            json!({"replicas": 1, "port": true}),
            vec![c(
                "FieldValueTypeInvalid",
                "spec.port",
                r#"Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean""#,
            )],
        ),
        (
            json!({"replicas": 1, "ports": [{"port": "x"}]}),
            vec![
                c("FieldValueRequired", "spec.ports[0].name", "Required value"),
                c(
                    "FieldValueTypeInvalid",
                    "spec.ports[0].port",
                    r#"Invalid value: "string": spec.ports[0].port in body must be of type integer: "string""#,
                ),
            ],
        ),
        (
            json!({"replicas": 1, "ports": [{"name": "a", "protocol": "TCP"}, {"name": "a", "protocol": "TCP"}]}),
            vec![c(
                "FieldValueDuplicate",
                "spec.ports[1]",
                r#"Duplicate value: {"name":"a","protocol":"TCP"}"#,
            )],
        ),
        (
            json!({"replicas": 1, "ratio": 1}),
            vec![c(
                "FieldValueInvalid",
                "spec.ratio",
                "Invalid value: 1: spec.ratio in body should be less than 1",
            )],
        ),
        (
            json!({"replicas": 1, "ratio": 0.3}),
            vec![c(
                "FieldValueInvalid",
                "spec.ratio",
                "Invalid value: 0.3: spec.ratio in body should be a multiple of 0.25",
            )],
        ),
        (
            json!({"replicas": 1, "big": 5}),
            vec![c(
                "FieldValueInvalid",
                "spec.big",
                "Invalid value: 5: spec.big in body should be greater than or equal to 1e+06",
            )],
        ),
    ];
    for (spec, want) in cases {
        let obj = json!({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec});
        assert_eq!(s.validate(&obj), want, "spec {spec}");
    }
}

const BUILTIN_KINDS: [(&str, &str); 14] = [
    ("", "Namespace"),
    ("", "ConfigMap"),
    ("", "Secret"),
    ("", "ServiceAccount"),
    ("", "Event"),
    ("events.k8s.io", "Event"),
    ("coordination.k8s.io", "Lease"),
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("authentication.k8s.io", "TokenReview"),
    ("authorization.k8s.io", "SubjectAccessReview"),
    ("authorization.k8s.io", "SelfSubjectAccessReview"),
];

#[test]
fn every_builtin_kind_has_a_full_object_schema() {
    let distinctive = [
        "spec",
        "data",
        "stringData",
        "secrets",
        "involvedObject",
        "regarding",
        "spec",
        "rules",
        "aggregationRule",
        "roleRef",
        "roleRef",
        "spec",
        "spec",
        "spec",
    ];
    for ((group, kind), field) in BUILTIN_KINDS.iter().zip(distinctive) {
        let s = builtin_schema(group, kind).unwrap_or_else(|| panic!("{group}/{kind} has a schema"));
        assert_eq!(s.type_.as_deref(), Some("object"), "{kind}");
        for f in ["apiVersion", "kind", "metadata", field] {
            assert!(s.properties.contains_key(f), "{group}/{kind} lacks {f}");
        }
        assert!(
            !s.required.iter().any(|r| r == "metadata"),
            "{kind} must not require metadata"
        );
        let undescribed = |s: &Schema| Schema {
            description: None,
            ..s.clone()
        };
        assert_eq!(
            undescribed(&s.properties["metadata"]),
            undescribed(&object_meta_schema()),
            "{kind} metadata"
        );
        assert_structural(&s, &format!("{group}/{kind}"));
    }
    assert_eq!(builtin_schema("", "Pod"), None);
    assert_eq!(builtin_schema("apps", "ConfigMap"), None);
}

/// Every node says what it holds: a type, int-or-string, or preserve-unknown-fields.
fn assert_structural(s: &Schema, path: &str) {
    assert!(
        s.type_.is_some() || s.int_or_string || s.preserve_unknown_fields,
        "{path} has no type"
    );
    for (k, p) in &s.properties {
        assert_structural(p, &format!("{path}.{k}"));
    }
    if let Some(a) = &s.additional_properties {
        assert_structural(a, &format!("{path}.*"));
    }
    if let Some(i) = &s.items {
        assert_structural(i, &format!("{path}[]"));
    }
}

#[test]
fn object_meta_carries_kubernetes_annotations() {
    let m = object_meta_schema();
    let finalizers = &m.properties["finalizers"];
    assert_eq!(
        (
            finalizers.list_type.clone(),
            finalizers.patch_strategy.as_deref(),
            finalizers.patch_merge_key.as_deref()
        ),
        (Some(ListType::Set), Some("merge"), None)
    );
    let owners = &m.properties["ownerReferences"];
    assert_eq!(
        (
            owners.list_type.clone(),
            owners.patch_strategy.as_deref(),
            owners.patch_merge_key.as_deref()
        ),
        (Some(ListType::Map(vec!["uid".into()])), Some("merge"), Some("uid"))
    );
    assert_eq!(
        owners.items.as_ref().map(|i| i.required.clone()),
        Some(vec![
            "apiVersion".to_string(),
            "kind".into(),
            "name".into(),
            "uid".into()
        ])
    );
    assert_eq!(m.properties["managedFields"].list_type, Some(ListType::Atomic));
    let fields_v1 = m.properties["managedFields"]
        .items
        .as_ref()
        .map(|i| i.properties["fieldsV1"].clone());
    assert_eq!(fields_v1.map(|f| f.preserve_unknown_fields), Some(true));
    for map in ["labels", "annotations"] {
        let p = &m.properties[map];
        assert_eq!(p.type_.as_deref(), Some("object"));
        assert!(!p.map_atomic);
        assert_eq!(
            p.additional_properties.as_ref().and_then(|a| a.type_.clone()),
            Some("string".into())
        );
    }
    assert_eq!(m.properties["creationTimestamp"].format.as_deref(), Some("date-time"));
    assert_eq!(m.properties["generation"].type_.as_deref(), Some("integer"));
}

#[test]
fn builtin_kind_annotations() {
    let get = |g: &str, k: &str, path: &[&str]| -> Schema {
        let mut s = builtin_schema(g, k).expect("schema");
        for p in path {
            s = match *p {
                "[]" => *s.items.expect("items"),
                p => s.properties.remove(p).unwrap_or_else(|| panic!("{k}: no {p}")),
            };
        }
        s
    };
    assert_eq!(
        get("", "Namespace", &["spec", "finalizers"]).list_type,
        Some(ListType::Atomic)
    );
    let conditions = get("", "Namespace", &["status", "conditions"]);
    assert_eq!(
        (conditions.list_type, conditions.patch_merge_key.as_deref()),
        (Some(ListType::Map(vec!["type".into()])), Some("type"))
    );
    let secrets = get("", "ServiceAccount", &["secrets"]);
    assert_eq!(
        (secrets.patch_strategy.as_deref(), secrets.patch_merge_key.as_deref()),
        (Some("merge"), Some("name"))
    );
    assert!(get("", "Event", &["involvedObject"]).map_atomic);
    let selectors = get(
        "rbac.authorization.k8s.io",
        "ClusterRole",
        &["aggregationRule", "clusterRoleSelectors"],
    );
    assert_eq!(selectors.list_type, Some(ListType::Atomic));
    assert!(selectors.items.as_ref().is_some_and(|i| i.map_atomic));
    assert_eq!(
        get("rbac.authorization.k8s.io", "Role", &["rules", "[]", "verbs"]).list_type,
        Some(ListType::Atomic)
    );
    assert!(get("rbac.authorization.k8s.io", "RoleBinding", &["roleRef"]).map_atomic);
    assert!(get("rbac.authorization.k8s.io", "ClusterRoleBinding", &["subjects", "[]"]).map_atomic);
    assert_eq!(
        get("authentication.k8s.io", "TokenReview", &["spec", "audiences"]).list_type,
        Some(ListType::Atomic)
    );
    assert_eq!(
        get("authorization.k8s.io", "SubjectAccessReview", &["spec", "extra"])
            .additional_properties
            .and_then(|a| a.list_type),
        Some(ListType::Atomic)
    );
    assert_eq!(
        get("coordination.k8s.io", "Lease", &["spec", "renewTime"])
            .format
            .as_deref(),
        Some("date-time")
    );
}

#[test]
fn builtin_validation_uses_kubernetes_required_fields() {
    let rb = builtin_schema("rbac.authorization.k8s.io", "RoleBinding").expect("schema");
    let obj = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "x"},
                     "subjects": [{"kind": "User"}]});
    assert_eq!(
        rb.validate(&obj),
        vec![
            c("FieldValueRequired", "roleRef", "Required value"),
            c("FieldValueRequired", "subjects[0].name", "Required value"),
        ]
    );
    let cm = builtin_schema("", "ConfigMap").expect("schema");
    let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": 1}});
    assert_eq!(
        cm.validate(&obj),
        vec![c(
            "FieldValueTypeInvalid",
            "data.a",
            r#"Invalid value: "integer": data.a in body must be of type string: "integer""#
        )]
    );
    let review = builtin_schema("authentication.k8s.io", "TokenReview").expect("schema");
    let obj = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "t"}});
    assert_eq!(review.validate(&obj), vec![]);
}
