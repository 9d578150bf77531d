//! kcp's APIExport admission, on create and update: a claim on a resource that is neither built
//! in nor kcp's own needs the identity hash of the export serving it (the same group and resource
//! can be exported by anyone), and each exported resource names a schema `<prefix>.<name>.<group>`
//! (`core` for the core group), as schema names are.

use faros_core::status::{Status, StatusDetails};
use serde_json::Value;

use super::field::FieldError;
use super::{Operation, Request};
use crate::objects::meta;

/// The resources kcp lets an export claim without an identity (its built-in APIs).
const BUILT_IN: &[(&str, &str)] = &[
    ("", "namespaces"),
    ("", "configmaps"),
    ("", "events"),
    ("", "resourcequotas"),
    ("", "secrets"),
    ("", "serviceaccounts"),
    ("rbac.authorization.k8s.io", "clusterroles"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"),
    ("rbac.authorization.k8s.io", "roles"),
    ("rbac.authorization.k8s.io", "rolebindings"),
    ("certificates.k8s.io", "certificatesigningrequests"),
    ("coordination.k8s.io", "leases"),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    ("events.k8s.io", "events"),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("core.kcp.io", "logicalclusters"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
];

pub fn admit_export(req: &Request<'_>, obj: &Value) -> Result<(), Status> {
    if req.operation == Operation::Delete {
        return Ok(());
    }
    let Some(problem) = problem(obj) else {
        return Ok(());
    };
    let name = meta::name(obj).unwrap_or_default();
    Err(
        Status::forbidden(format!("apiexports.apis.kcp.io \"{name}\" is forbidden: {problem}")).with_details(
            StatusDetails {
                name: name.into(),
                group: "apis.kcp.io".into(),
                kind: "apiexports".into(),
                ..Default::default()
            },
        ),
    )
}

/// The first problem, in kcp's order: claims, then resources.
fn problem(obj: &Value) -> Option<FieldError> {
    let list = |field: &str| {
        obj.pointer(&format!("/spec/{field}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let text = |v: &Value, field: &str| v.get(field).and_then(Value::as_str).unwrap_or_default().to_string();
    for (i, claim) in list("permissionClaims").iter().enumerate() {
        let (group, resource) = (text(claim, "group"), text(claim, "resource"));
        let built_in = BUILT_IN.contains(&(group.as_str(), resource.as_str()));
        if text(claim, "identityHash").is_empty() && !built_in && group != "apis.kcp.io" {
            return Some(FieldError::invalid(
                format!("spec.permissionClaims[{i}].identityHash"),
                "",
                "identityHash is required for API types that are not built-in",
            ));
        }
    }
    for (i, resource) in list("resources").iter().enumerate() {
        let group = match text(resource, "group").as_str() {
            "" => "core".to_string(),
            g => g.to_string(),
        };
        let suffix = format!(".{}.{group}", text(resource, "name"));
        let schema = text(resource, "schema");
        if !schema.ends_with(&suffix) {
            return Some(FieldError::invalid(
                format!("spec.resources[{i}].schema"),
                &schema,
                format!("must end in {suffix}"),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn claims_and_resources() {
        let export = |spec: Value| json!({"metadata": {"name": "e"}, "spec": spec});
        for (spec, want) in [
            (json!({}), None),
            (
                json!({"permissionClaims": [{"group": "", "resource": "configmaps"}]}),
                None,
            ),
            (
                json!({"permissionClaims": [{"group": "apis.kcp.io", "resource": "apibindings"}]}),
                None,
            ),
            (
                json!({"permissionClaims": [{"group": "example.io", "resource": "widgets", "identityHash": "abc"}]}),
                None,
            ),
            (
                json!({"permissionClaims": [{"group": "", "resource": "secrets"}, {"group": "example.io", "resource": "widgets"}]}),
                Some(
                    "spec.permissionClaims[1].identityHash: Invalid value: \"\": identityHash is required for API types that are not built-in",
                ),
            ),
            (
                json!({"resources": [{"group": "example.io", "name": "widgets", "schema": "v1.widgets.example.io"}]}),
                None,
            ),
            (
                json!({"resources": [{"group": "", "name": "things", "schema": "v1.things.core"}]}),
                None,
            ),
            (
                json!({"resources": [{"group": "example.io", "name": "widgets", "schema": "v1.gadgets.example.io"}]}),
                Some(
                    "spec.resources[0].schema: Invalid value: \"v1.gadgets.example.io\": must end in .widgets.example.io",
                ),
            ),
        ] {
            assert_eq!(
                problem(&export(spec.clone())).map(|e| e.to_string()).as_deref(),
                want,
                "{spec}"
            );
        }
    }
}
