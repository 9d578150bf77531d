//! WorkspaceType admission.

use faros_core::status::Status;
use serde_json::Value;

use super::bind::{export_cluster, export_ref, may_bind};
use crate::auth::GROUP_MASTERS;
use crate::kcp::admission::{Operation, Request};
use crate::objects::meta;
use crate::state::ServerState;

/// What kcp refuses in a type itself, whoever writes it: a `root` type outside root, and type
/// references without a path (the default child type, the allowed children and parents).
fn form_problem(cluster: &str, obj: &Value) -> Option<String> {
    if meta::name(obj) == Some("root") && cluster != "root" {
        return Some("root workspace type can only be created in root cluster".into());
    }
    let no_path = |r: &Value| r.get("path").and_then(Value::as_str).unwrap_or_default().is_empty();
    if obj
        .pointer("/spec/defaultChildWorkspaceType")
        .is_some_and(|r| !r.is_null() && no_path(r))
    {
        return Some(".spec.defaultChildWorkspaceType.path must be set".into());
    }
    for field in ["limitAllowedChildren", "limitAllowedParents"] {
        let types = obj.pointer(&format!("/spec/{field}/types")).and_then(Value::as_array);
        if let Some(i) = types.into_iter().flatten().position(no_path) {
            return Some(format!(".spec.{field}.types[{i}].path must be set"));
        }
    }
    None
}

/// kcp's WorkspaceType admission: whoever adds a `defaultAPIBindings` entry (on create, or new on
/// update) needs `bind` on that export, or workspaces of the type would bind it on their behalf.
pub fn admit_workspace_type(state: &ServerState, req: &Request<'_>, obj: &mut Value) -> Result<(), Status> {
    if req.operation == Operation::Delete {
        return Ok(());
    }
    if let Some(problem) = form_problem(req.cluster, obj) {
        let name = meta::name(obj).unwrap_or_default();
        return Err(Status::forbidden(format!(
            "workspacetypes.tenancy.kcp.io \"{name}\" is forbidden: {problem}"
        ))
        .with_details(faros_core::status::StatusDetails {
            name: name.into(),
            group: "tenancy.kcp.io".into(),
            kind: "workspacetypes".into(),
            ..Default::default()
        }));
    }
    if req.user.in_group(GROUP_MASTERS) {
        return Ok(());
    }
    let refs = |o: &Value| -> Vec<(String, String)> {
        o.pointer("/spec/defaultAPIBindings")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|r| {
                        let s = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
                        (s("path"), s("export"))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let old = req.old.map(refs).unwrap_or_default();
    let type_name = meta::name(obj).unwrap_or_default().to_string();
    for (path, name) in refs(obj).into_iter().filter(|r| !old.contains(r)) {
        let target = export_ref(&path, &name);
        let forbidden = || {
            Status::forbidden(format!(
                "workspacetypes.tenancy.kcp.io \"{type_name}\" is forbidden: unable to create or update WorkspaceType: no permission to bind to export {target}"
            ))
        };
        let export_cluster = export_cluster(state, req, &path).ok_or_else(forbidden)?;
        if !may_bind(state, req, &export_cluster, &name) {
            return Err(forbidden());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn type_forms() {
        let t = |name: &str, spec: Value| json!({"metadata": {"name": name}, "spec": spec});
        for (cluster, obj, want) in [
            ("root", t("root", json!({})), None),
            (
                "abc",
                t("root", json!({})),
                Some("root workspace type can only be created in root cluster"),
            ),
            (
                "abc",
                t(
                    "custom",
                    json!({"defaultChildWorkspaceType": {"name": "universal", "path": "root"}}),
                ),
                None,
            ),
            (
                "abc",
                t("custom", json!({"defaultChildWorkspaceType": {"name": "universal"}})),
                Some(".spec.defaultChildWorkspaceType.path must be set"),
            ),
            (
                "abc",
                t(
                    "custom",
                    json!({"limitAllowedChildren": {"types": [{"name": "a", "path": "root"}, {"name": "b"}]}}),
                ),
                Some(".spec.limitAllowedChildren.types[1].path must be set"),
            ),
            (
                "abc",
                t("custom", json!({"limitAllowedParents": {"types": [{"name": "a"}]}})),
                Some(".spec.limitAllowedParents.types[0].path must be set"),
            ),
            ("abc", t("custom", json!({"limitAllowedParents": {"none": true}})), None),
        ] {
            assert_eq!(form_problem(cluster, &obj).as_deref(), want, "{obj}");
        }
    }
}
