//! Table tests per rule, and the gate's properties.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

/// A one-version schema for `greetings.q.io` with `spec` as given.
fn schema(spec: Value) -> APIResourceSchemaSpec {
    schema_with(spec, json!({}))
}

fn schema_with(spec: Value, overrides: Value) -> APIResourceSchemaSpec {
    let mut s = json!({
        "group": "q.io",
        "names": {"kind": "Greeting", "plural": "greetings", "singular": "greeting", "listKind": "GreetingList"},
        "scope": "Namespaced",
        "versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"type": "object", "properties": {"spec": spec}}, "subresources": {"status": {}}}],
    });
    merge(&mut s, overrides);
    serde_json::from_value(s).unwrap()
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

fn obj(spec: Value) -> Value {
    json!({"apiVersion": "q.io/v1", "kind": "Greeting", "metadata": {"name": "a", "namespace": "default"}, "spec": spec})
}

fn rules(findings: &[Finding]) -> Vec<(Rule, Verdict, String)> {
    findings.iter().map(|f| (f.rule, f.verdict, f.field.clone())).collect()
}

fn props(p: Value) -> Value {
    json!({"type": "object", "properties": p})
}

#[test]
fn schema_rules() {
    use Rule::*;
    use Verdict::*;
    let base = props(json!({"name": {"type": "string", "maxLength": 10}, "count": {"type": "integer", "minimum": 0}}));
    type Case = (&'static str, Value, Vec<(Rule, Verdict, &'static str)>);
    let cases: Vec<Case> = vec![
        ("unchanged", base.clone(), vec![]),
        (
            "optional field",
            props(
                json!({"name": {"type": "string", "maxLength": 10}, "count": {"type": "integer", "minimum": 0},
                "color": {"type": "string"}}),
            ),
            vec![(FieldAdded, Compatible, ".spec.color")],
        ),
        (
            "description",
            props(
                json!({"name": {"type": "string", "maxLength": 10, "description": "who"},
                "count": {"type": "integer", "minimum": 0}}),
            ),
            vec![],
        ),
        (
            "bounds widened",
            props(json!({"name": {"type": "string", "maxLength": 20}, "count": {"type": "integer"}})),
            vec![],
        ),
        (
            "field removed",
            props(json!({"count": {"type": "integer", "minimum": 0}})),
            vec![(FieldRemoved, NeedsLiveCheck, ".spec.name")],
        ),
        (
            "type changed",
            props(json!({"name": {"type": "integer"}, "count": {"type": "integer", "minimum": 0}})),
            vec![(TypeChanged, NeedsLiveCheck, ".spec.name")],
        ),
        (
            "enum",
            props(json!({"name": {"type": "string", "maxLength": 10, "enum": ["a"]},
                "count": {"type": "integer", "minimum": 0}})),
            vec![(EnumNarrowed, NeedsLiveCheck, ".spec.name")],
        ),
        (
            "pattern",
            props(json!({"name": {"type": "string", "maxLength": 10, "pattern": "^a"},
                "count": {"type": "integer", "minimum": 0}})),
            vec![(PatternChanged, NeedsLiveCheck, ".spec.name")],
        ),
        (
            "bounds narrowed",
            props(json!({"name": {"type": "string", "maxLength": 5}, "count": {"type": "integer", "minimum": 1}})),
            vec![
                (BoundsNarrowed, NeedsLiveCheck, ".spec.count"),
                (BoundsNarrowed, NeedsLiveCheck, ".spec.name"),
            ],
        ),
        (
            "required without default",
            json!({"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "maxLength": 10},
                "count": {"type": "integer", "minimum": 0}}}),
            vec![(RequiredAdded, NeedsLiveCheck, ".spec.name")],
        ),
        (
            "new required field with default",
            json!({"type": "object", "required": ["color"], "properties": {"name": {"type": "string", "maxLength": 10},
                "count": {"type": "integer", "minimum": 0}, "color": {"type": "string", "default": "red"}}}),
            vec![(RequiredAdded, Compatible, ".spec.color")],
        ),
    ];
    for (name, new_spec, want) in cases {
        let got = compare(&[schema(base.clone())], &[schema(new_spec)]);
        let want: Vec<(Rule, Verdict, String)> = want.into_iter().map(|(r, v, f)| (r, v, f.to_string())).collect();
        assert_eq!(rules(&got), want, "{name}");
        for f in &got {
            assert_eq!(f.resource, "greetings.q.io", "{name}");
            assert_eq!(f.version.as_deref(), Some("v1"), "{name}");
        }
    }
}

#[test]
fn resource_rules() {
    use Rule::*;
    use Verdict::*;
    let spec = props(json!({"name": {"type": "string"}}));
    let base = schema(spec.clone());
    let v2 = json!({"name": "v2", "served": true, "storage": false, "schema": {"type": "object"}});
    type Case = (&'static str, Vec<APIResourceSchemaSpec>, Vec<(Rule, Verdict)>);
    let cases: Vec<Case> = vec![
        ("removed", vec![], vec![(ResourceRemoved, Incompatible)]),
        (
            "added",
            vec![
                base.clone(),
                schema_with(
                    spec.clone(),
                    json!({"names": {"plural": "farewells", "kind": "Farewell"}}),
                ),
            ],
            vec![(ResourceAdded, Compatible)],
        ),
        (
            "kind",
            vec![schema_with(spec.clone(), json!({"names": {"kind": "Hello"}}))],
            vec![(NamesChanged, Incompatible)],
        ),
        (
            "scope",
            vec![schema_with(spec.clone(), json!({"scope": "Cluster"}))],
            vec![(ScopeChanged, Incompatible)],
        ),
        (
            "printer columns",
            vec![schema_with(
                spec.clone(),
                json!({"versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"type": "object", "properties": {"spec": spec.clone()}}, "subresources": {"status": {}},
                    "additionalPrinterColumns": [{"name": "Name", "type": "string", "jsonPath": ".spec.name"}]}]}),
            )],
            vec![(PrinterColumnsChanged, Compatible)],
        ),
        (
            "served version removed",
            vec![schema_with(
                spec.clone(),
                json!({"versions": [{"name": "v1", "served": false, "storage": true,
                    "schema": {"type": "object", "properties": {"spec": spec.clone()}}, "subresources": {"status": {}}}]}),
            )],
            vec![(ServedVersionRemoved, Incompatible)],
        ),
        (
            "storage version changed",
            vec![{
                let mut s = base.clone();
                s.versions[0].storage = false;
                s.versions.push(
                    serde_json::from_value(json!({"name": "v2", "served": true, "storage": true,
                    "schema": {"type": "object", "properties": {"spec": spec.clone()}}}))
                    .unwrap(),
                );
                s
            }],
            vec![(StorageVersionChanged, NeedsMigration), (VersionAdded, Compatible)],
        ),
        (
            "version added",
            vec![{
                let mut s = base.clone();
                s.versions.push(serde_json::from_value(v2.clone()).unwrap());
                s
            }],
            vec![(VersionAdded, Compatible)],
        ),
        (
            "status subresource removed",
            vec![{
                let mut s = base.clone();
                s.versions[0].subresources = None;
                s
            }],
            vec![(SubresourceRemoved, Incompatible)],
        ),
    ];
    for (name, new, want) in cases {
        let got: Vec<(Rule, Verdict)> = compare(std::slice::from_ref(&base), &new)
            .iter()
            .map(|f| (f.rule, f.verdict))
            .collect();
        assert_eq!(got, want, "{name}");
    }
    assert_eq!(overall(&[]), Compatible);
}

#[test]
fn claim_rules() {
    let claim = |resource: &str, verbs: &[&str]| PermissionClaim {
        resource: resource.into(),
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        ..Default::default()
    };
    let old = vec![claim("configmaps", &["get", "list"]), claim("secrets", &["*"])];
    let new = vec![
        claim("configmaps", &["get", "list", "watch"]),
        claim("secrets", &["get", "delete"]),
        claim("events", &["create"]),
    ];
    let got: Vec<(Rule, Verdict, String)> = compare_claims(&old, &new)
        .iter()
        .map(|f| (f.rule, f.verdict, f.resource.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (Rule::VerbsWidened, Verdict::NeedsConsent, "configmaps.core".into()),
            (Rule::ClaimAdded, Verdict::NeedsConsent, "events.core".into()),
        ]
    );
    let dropped = compare_claims(&new, &old[..1]);
    assert!(dropped.iter().all(|f| f.verdict == Verdict::Compatible));
    assert_eq!(overall(&compare_claims(&old, &new)), Verdict::NeedsConsent);
}

#[test]
fn live_check_names_workspaces_and_counts() {
    let new = schema(props(json!({"count": {"type": "integer", "maximum": 5}})));
    let objects = [
        ("tenant-a", obj(json!({"name": "x", "count": 1}))),
        ("tenant-a", obj(json!({"name": "y"}))),
        ("tenant-b", obj(json!({"name": "z", "count": 9}))),
        ("tenant-c", obj(json!({"count": 2}))),
    ];
    let found = live_check(&new, objects.iter().map(|(c, o)| (*c, o))).unwrap();
    let summary: Vec<(String, Vec<(String, u64)>)> = found
        .iter()
        .map(|f| (f.field.clone(), f.workspaces.clone().into_iter().collect()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (".spec.count".into(), vec![("tenant-b".into(), 1)]),
            (
                ".spec.name".into(),
                vec![("tenant-a".into(), 2), ("tenant-b".into(), 1)]
            ),
        ]
    );
    assert!(found.iter().all(|f| f.rule == Rule::LiveObjectsRefused));
    assert!(found[1].to_string().contains("tenant-a: 2"), "{}", found[1]);
    let clean = [("tenant-c", obj(json!({"count": 2})))];
    assert!(live_check(&new, clean.iter().map(|(c, o)| (*c, o))).unwrap().is_empty());
    assert_eq!(generalize(".spec.items[12].name[0]"), ".spec.items[*].name[*]");
}

#[test]
fn findings_display_names_resource_field_and_rule() {
    let got = compare(
        &[schema(props(json!({"name": {"type": "string"}})))],
        &[schema(props(json!({})))],
    );
    assert_eq!(
        got[0].to_string(),
        "greetings.q.io v1 .spec.name: FieldRemoved (incompatible unless every live object validates under the new \
         schema): field removed; stored values would be pruned"
    );
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

/// A leaf field's schema.
fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        (
            proptest::option::of(0u64..6),
            proptest::option::of(prop::collection::vec("[ab]{0,2}", 1..3))
        )
            .prop_map(|(max, en)| {
                let mut s = json!({"type": "string"});
                if let Some(m) = max {
                    s["maxLength"] = json!(m);
                }
                if let Some(e) = en {
                    s["enum"] = json!(e);
                }
                s
            }),
        (proptest::option::of(-3i64..3), proptest::option::of(-3i64..3)).prop_map(|(min, max)| {
            let mut s = json!({"type": "integer"});
            if let Some(m) = min {
                s["minimum"] = json!(m);
            }
            if let Some(m) = max {
                s["maximum"] = json!(m);
            }
            s
        }),
        Just(json!({"type": "boolean"})),
        Just(json!({"type": "array", "items": {"type": "string"}})),
    ]
}

/// An object schema of up to four fields named a..d, one level of nesting, some required.
fn object_schema() -> impl Strategy<Value = Value> {
    let inner = prop::collection::btree_map("[a-d]", leaf(), 0..4);
    let field = prop_oneof![3 => leaf(), 1 => inner.prop_map(|p| json!({"type": "object", "properties": p}))];
    (
        prop::collection::btree_map("[a-d]", field, 0..4),
        prop::collection::vec("[a-d]", 0..2),
    )
        .prop_map(|(p, req)| {
            let req: Vec<String> = req.into_iter().filter(|r| p.contains_key(r)).collect();
            json!({"type": "object", "properties": p, "required": req})
        })
}

/// A change an author might make to a spec schema.
#[derive(Clone, Debug)]
enum Change {
    AddField(String, Value),
    RemoveField(String),
    ReplaceField(String, Value),
    Require(String),
    Describe(String),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        ("[a-f]", leaf()).prop_map(|(k, s)| Change::AddField(k, s)),
        "[a-d]".prop_map(Change::RemoveField),
        ("[a-d]", leaf()).prop_map(|(k, s)| Change::ReplaceField(k, s)),
        "[a-f]".prop_map(Change::Require),
        "[a-d]".prop_map(Change::Describe),
    ]
}

fn apply(spec: &Value, changes: &[Change]) -> Value {
    let mut s = spec.clone();
    for c in changes {
        let p = s["properties"].as_object_mut().unwrap();
        match c {
            Change::AddField(k, v) => {
                p.entry(k.clone()).or_insert(v.clone());
            }
            Change::RemoveField(k) => {
                p.remove(k);
            }
            Change::ReplaceField(k, v) => {
                if p.contains_key(k) {
                    p.insert(k.clone(), v.clone());
                }
            }
            Change::Describe(k) => {
                if let Some(f) = p.get_mut(k) {
                    f["description"] = json!("changed");
                }
            }
            Change::Require(k) => {
                if let Some(r) = s["required"].as_array_mut()
                    && !r.contains(&json!(k))
                {
                    r.push(json!(k));
                }
            }
        }
    }
    s
}

/// Arbitrary JSON shaped like a spec: known and unknown keys, values of every leaf type.
fn value() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        "[ab]{0,7}".prop_map(Value::from),
        (-5i64..5).prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        prop::collection::vec("[ab]{0,2}".prop_map(Value::from), 0..3).prop_map(Value::Array),
    ];
    scalar.prop_recursive(2, 16, 4, |inner| {
        prop::collection::btree_map("[a-f]", inner, 0..5).prop_map(|m| Value::Object(m.into_iter().collect()))
    })
}

/// The object as a server would store it under `spec_schema`: pruned, defaulted; `None` when refused.
fn admitted(spec_schema: &Value, spec: &Value) -> Option<Value> {
    let s = Schema::from_openapi_v3(&json!({"type": "object", "properties": {"spec": spec_schema}})).unwrap();
    let mut o = obj(spec.clone());
    s.prune(&mut o);
    s.apply_defaults(&mut o);
    s.validate(&o).is_empty().then_some(o)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// compatible ⇒ every object valid under the old schema stays valid under the new one, and
    /// pruning under the new schema keeps everything pruning under the old one kept.
    #[test]
    fn compatible_keeps_every_valid_object(
        old in object_schema(),
        changes in prop::collection::vec(change(), 0..4),
        specs in prop::collection::vec(value(), 1..8),
    ) {
        let new = apply(&old, &changes);
        let findings = compare(&[schema(old.clone())], &[schema(new.clone())]);
        if overall(&findings) == Verdict::Compatible {
            for spec in &specs {
                let Some(stored) = admitted(&old, spec) else { continue };
                let under_new = admitted(&new, &stored["spec"]);
                prop_assert!(under_new.is_some(), "refused by {new} after {changes:?}: {stored}");
                let s = Schema::from_openapi_v3(&json!({"type": "object", "properties": {"spec": &new}})).unwrap();
                let mut pruned = stored.clone();
                s.prune(&mut pruned);
                prop_assert_eq!(&pruned, &stored, "pruning under {} dropped data after {:?}", new, changes);
            }
        }
    }

    /// The live check agrees with the server: an object it passes is admitted by the new schema
    /// unchanged, and one it flags is refused or loses data.
    #[test]
    fn live_check_agrees_with_admission(
        old in object_schema(),
        changes in prop::collection::vec(change(), 0..4),
        spec in value(),
    ) {
        let new = apply(&old, &changes);
        let Some(stored) = admitted(&old, &spec) else { return Ok(()) };
        let found = live_check(&schema(new.clone()), [("c", &stored)]).unwrap();
        let under_new = admitted(&new, &stored["spec"]).map(|mut o| {
            o["spec"] = o["spec"].clone();
            o
        });
        let intact = under_new.as_ref().is_some_and(|o| o == &stored);
        prop_assert_eq!(found.is_empty(), intact, "{} {} {:?}", new, stored, found);
    }
}
