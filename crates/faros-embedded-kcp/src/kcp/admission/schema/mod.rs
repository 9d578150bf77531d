//! kcp's APIResourceSchema admission, on create and update: the name is `<prefix>.<plural>.<group>`
//! (`core` for the core group), a Kubernetes community group needs the API approval annotation, the
//! group, versions and names are well formed ([`group`], [`spec`]), and the spec never changes
//! after creation — exports pin schemas by name, so an edited schema would change what bound
//! workspaces serve behind their backs. kcp refuses with 403 Forbidden, every field error of the
//! request in brackets, as Go prints its ErrorList.

mod go_json;
mod group;
mod spec;

use faros_core::status::{Status, StatusDetails};
use serde_json::Value;

use super::field::{self, FieldError};
use super::{Operation, Request};
use crate::objects::meta;

const GROUP: &str = "apis.kcp.io";
const RESOURCE: &str = "apiresourceschemas";

pub fn admit_schema(req: &Request<'_>, obj: &Value) -> Result<(), Status> {
    // The server's own copies of bound schemas (kcp keeps them as CRDs in system:bound-crds,
    // named by UID) follow no rule of user schemas.
    if req.cluster == crate::names::BOUND_CRDS_CLUSTER {
        return Ok(());
    }
    let errors = match (req.operation, req.old) {
        (Operation::Create, _) => problems(obj),
        (Operation::Update, Some(old)) => update_problems(old, obj),
        _ => Vec::new(),
    };
    if errors.is_empty() {
        return Ok(());
    }
    let name = meta::name(obj).unwrap_or_default();
    Err(Status::forbidden(format!(
        "{RESOURCE}.{GROUP} \"{name}\" is forbidden: {}",
        field::list(&errors)
    ))
    .with_details(StatusDetails {
        name: name.into(),
        group: GROUP.into(),
        kind: RESOURCE.into(),
        ..Default::default()
    }))
}

/// Every problem of a schema, in kcp's order: name, approval, group form, versions and names.
fn problems(obj: &Value) -> Vec<FieldError> {
    let name = meta::name(obj).unwrap_or_default();
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let group_name = spec.get("group").and_then(Value::as_str).unwrap_or_default();
    let mut errors: Vec<FieldError> = spec::name_problem(name, &spec).into_iter().collect();
    errors.extend(group::approval_problem(
        group_name,
        obj.pointer("/metadata/annotations"),
    ));
    errors.extend(group::form_problem(group_name));
    errors.extend(spec::spec_problems(&spec));
    errors
}

/// An update's problems: the schema's own, then a changed spec.
fn update_problems(old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errors = problems(new);
    let spec = new.get("spec").cloned().unwrap_or(Value::Null);
    if old.get("spec").unwrap_or(&Value::Null) != &spec {
        errors.push(FieldError::invalid_json("spec", go_json::spec(&spec), "is immutable"));
    }
    errors
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(name: &str, group: &str, scope: &str) -> Value {
        json!({"metadata": {"name": name}, "spec": {"group": group, "scope": scope,
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"type": "object"}}]}})
    }

    fn strings(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_schema_is_checked_in_kcps_order() {
        let mut protected = schema("v1.widgets.apps.k8s.io", "apps.k8s.io", "Namespaced");
        assert_eq!(
            strings(problems(&protected)),
            [
                "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
            ]
        );
        protected["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "unapproved, testing"});
        assert!(problems(&protected).is_empty());
        assert!(problems(&schema("v1.widgets.example.io", "example.io", "Namespaced")).is_empty());
        let mut bad = schema("X.widgets.core", "core", "Namespaced");
        bad["spec"]["versions"][0]["storage"] = json!(false);
        bad["spec"]["names"]["singular"] = json!("");
        assert_eq!(
            strings(problems(&bad)),
            [
                "metadata.name: Invalid value: \"X.widgets.core\": must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ in front of .widgets.core".to_string(),
                "spec.group: Invalid value: \"core\": must be empty string for the core group".into(),
                r#"spec.versions: Invalid value: [{"name":"v1","served":true,"storage":false,"schema":{"type":"object"},"subresources":{}}]: must have exactly one version marked as storage version"#.into(),
                "spec.names.singular: Required value".into(),
            ]
        );
    }

    #[test]
    fn updates_keep_the_spec_and_the_rules() {
        let old = schema("v1.widgets.example.io", "example.io", "Namespaced");
        let mut relabelled = old.clone();
        relabelled["metadata"]["labels"] = json!({"a": "b"});
        assert!(update_problems(&old, &relabelled).is_empty());
        let changed = schema("v1.widgets.example.io", "example.io", "Cluster");
        assert_eq!(
            strings(update_problems(&old, &changed)),
            [
                r#"spec: Invalid value: {"group":"example.io","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"scope":"Cluster","versions":[{"name":"v1","served":true,"storage":true,"schema":{"type":"object"},"subresources":{}}]}: is immutable"#
            ]
        );
        // Dropping the approval of a protected schema is refused though the spec stays.
        let mut approved = schema("v1.widgets.x.k8s.io", "x.k8s.io", "Namespaced");
        approved["metadata"]["annotations"] =
            json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1111"});
        let mut unapproved = approved.clone();
        unapproved["metadata"]["annotations"] = json!({});
        assert!(update_problems(&approved, &approved).is_empty());
        assert_eq!(update_problems(&approved, &unapproved).len(), 1);
    }

    #[test]
    fn the_schemas_root_exports_pass() {
        for schema in crate::kcp::root_apis::schemas() {
            assert_eq!(
                strings(problems(&schema)),
                Vec::<String>::new(),
                "{}",
                schema["metadata"]["name"]
            );
        }
    }
}
