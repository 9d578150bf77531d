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
    (old.get("spec") != Some(&spec)).then(|| format!("spec: Invalid value: {spec}: is immutable"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(name: &str, group: &str, scope: &str) -> Value {
        json!({"metadata": {"name": name}, "spec": {"group": group, "names": {"plural": "widgets"}, "scope": scope}})
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
