//! kcp's APIResourceSchema admission: a schema's name is `<prefix>.<plural>.<group>` (`core` for the
//! core group) and its spec never changes after creation — exports pin schemas by name, so an
//! edited schema would change what bound workspaces serve behind their backs. kcp refuses both
//! with 403 Forbidden, listing the field errors in brackets.

use faros_core::status::{Status, StatusDetails};
use serde_json::Value;

use super::{Operation, Request};
use crate::objects::meta;

const GROUP: &str = "apis.kcp.io";
const RESOURCE: &str = "apiresourceschemas";

pub fn admit_schema(req: &Request<'_>, obj: &Value) -> Result<(), Status> {
    let name = meta::name(obj).unwrap_or_default();
    let problem = match (req.operation, req.old) {
        // The server's own copies of bound schemas (kcp keeps them as CRDs in system:bound-crds,
        // named by UID) follow no naming rule of user schemas.
        (Operation::Create, _) if req.cluster == crate::names::BOUND_CRDS_CLUSTER => None,
        (Operation::Create, _) => name_problem(name, obj),
        (Operation::Update, Some(old)) => spec_problem(old, obj),
        _ => None,
    };
    match problem {
        None => Ok(()),
        Some(field_error) => Err(Status::forbidden(format!(
            "{RESOURCE}.{GROUP} \"{name}\" is forbidden: [{field_error}]"
        ))
        .with_details(StatusDetails {
            name: name.into(),
            group: GROUP.into(),
            kind: RESOURCE.into(),
            ..Default::default()
        })),
    }
}

fn name_problem(name: &str, obj: &Value) -> Option<String> {
    let spec = |field: &str| obj.pointer(&format!("/spec/{field}")).and_then(Value::as_str);
    let plural = spec("names/plural").unwrap_or_default();
    let group = match spec("group").unwrap_or_default() {
        "" => "core",
        g => g,
    };
    let suffix = format!(".{plural}.{group}");
    (!name.ends_with(&suffix)).then(|| format!("metadata.name: Invalid value: \"{name}\": must end in {suffix}"))
}

fn spec_problem(old: &Value, new: &Value) -> Option<String> {
    let spec = new.get("spec").cloned().unwrap_or(Value::Null);
    (old.get("spec") != Some(&spec)).then(|| format!("spec: Invalid value: {}: is immutable", go_json(&spec)))
}

/// The spec as kcp's message prints it: Go's encoding of the typed spec, fields in the order of
/// its struct (unknown ones after), the raw OpenAPI schema with its keys sorted (it went through a
/// map), and `<`, `>`, `&` escaped as Go escapes them.
fn go_json(spec: &Value) -> String {
    const SPEC: &[&str] = &["group", "names", "scope", "versions", "nameValidation", "conversion"];
    const NAMES: &[&str] = &["plural", "singular", "shortNames", "kind", "listKind", "categories"];
    const VERSION: &[&str] = &[
        "name",
        "served",
        "storage",
        "deprecated",
        "deprecationWarning",
        "schema",
        "subresources",
        "additionalPrinterColumns",
    ];
    const COLUMN: &[&str] = &["name", "type", "format", "description", "priority", "jsonPath"];
    const SUBRESOURCES: &[&str] = &["status", "scale"];
    const SCALE: &[&str] = &["specReplicasPath", "statusReplicasPath", "labelSelectorPath"];
    let version = |v: &Value| {
        let mut v = v.clone();
        if let Some(map) = v.as_object_mut() {
            if let Some(schema) = map.get_mut("schema") {
                *schema = sorted(schema);
            }
            if let Some(sub) = map.get_mut("subresources") {
                if let Some(scale) = sub.get_mut("scale") {
                    *scale = ordered(scale, SCALE);
                }
                *sub = ordered(sub, SUBRESOURCES);
            }
            if let Some(Value::Array(columns)) = map.get_mut("additionalPrinterColumns") {
                for c in columns.iter_mut() {
                    *c = ordered(c, COLUMN);
                }
            }
        }
        ordered(&v, VERSION)
    };
    let mut spec = spec.clone();
    if let Some(map) = spec.as_object_mut() {
        if let Some(names) = map.get_mut("names") {
            *names = ordered(names, NAMES);
        }
        if let Some(Value::Array(versions)) = map.get_mut("versions") {
            for v in versions.iter_mut() {
                *v = version(v);
            }
        }
    }
    ordered(&spec, SPEC)
        .to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// `v`'s fields in the order `fields` names them, the others after in their own order.
fn ordered(v: &Value, fields: &[&str]) -> Value {
    let Some(map) = v.as_object() else {
        return v.clone();
    };
    let mut out = serde_json::Map::new();
    for f in fields {
        if let Some(x) = map.get(*f) {
            out.insert((*f).to_string(), x.clone());
        }
    }
    for (k, x) in map {
        if !out.contains_key(k) {
            out.insert(k.clone(), x.clone());
        }
    }
    Value::Object(out)
}

/// `v` with every object's keys sorted, as Go encodes a map.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&map[k]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(name: &str, group: &str, scope: &str) -> Value {
        json!({"metadata": {"name": name}, "spec": {"group": group, "names": {"plural": "widgets"}, "scope": scope}})
    }

    #[test]
    fn the_immutable_spec_is_printed_as_go_encodes_it() {
        let spec = json!({"versions": [{"subresources": {"status": {}}, "schema": {"type": "object", "properties": {"b": {"type": "string", "default": "<x>"}, "a": {"minimum": 1, "type": "integer"}}}, "storage": true, "served": true, "name": "v1"}],
            "scope": "Cluster", "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"}, "group": "example.io", "nameValidation": "DNS1123Subdomain"});
        assert_eq!(
            go_json(&spec),
            r#"{"group":"example.io","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"scope":"Cluster","versions":[{"name":"v1","served":true,"storage":true,"schema":{"properties":{"a":{"minimum":1,"type":"integer"},"b":{"default":"\u003cx\u003e","type":"string"}},"type":"object"},"subresources":{"status":{}}}],"nameValidation":"DNS1123Subdomain"}"#
        );
    }

    #[test]
    fn names_end_in_plural_and_group() {
        for (name, group, want) in [
            ("v1.widgets.example.io", "example.io", None),
            ("today.widgets.core", "", None),
            ("wrong", "example.io", Some("must end in .widgets.example.io")),
            ("v1.widgets.example.io", "", Some("must end in .widgets.core")),
        ] {
            let got = name_problem(name, &schema(name, group, "Namespaced"));
            match want {
                None => assert_eq!(got, None, "{name}"),
                Some(w) => {
                    assert!(got.is_some_and(|g| g.starts_with("metadata.name: Invalid value: ") && g.ends_with(w)))
                }
            }
        }
    }

    #[test]
    fn the_spec_is_immutable_and_metadata_is_not() {
        let old = schema("v1.widgets.example.io", "example.io", "Namespaced");
        let mut relabelled = old.clone();
        relabelled["metadata"]["labels"] = json!({"a": "b"});
        assert_eq!(spec_problem(&old, &relabelled), None);
        let changed = schema("v1.widgets.example.io", "example.io", "Cluster");
        assert!(
            spec_problem(&old, &changed)
                .is_some_and(|p| p.starts_with("spec: Invalid value: {") && p.ends_with("}: is immutable"))
        );
    }
}
