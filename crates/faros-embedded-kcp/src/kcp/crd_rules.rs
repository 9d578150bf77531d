//! The `x-kubernetes-validations` rules of kcp's own CRDs, written out (the embedded server runs no
//! CEL). They are checked with the CRD's schema, as kube's custom resource strategy does: after the
//! OpenAPI validation, skipped with a note when that found a blocking error (an unsupported,
//! required, too long, too many or mistyped value), their failures listed with its causes.

use faros_core::status::StatusCause;
use serde_json::Value;

/// The OpenAPI validation reasons after which kube checks no rule.
const BLOCKING: &[&str] = &[
    "FieldValueNotSupported",
    "FieldValueRequired",
    "FieldValueTooLong",
    "FieldValueTooMany",
    "FieldValueTypeInvalid",
];

/// The causes the rules of `group`/`resource` add to the schema's `causes` for `obj`.
pub fn rule_causes(group: &str, resource: &str, obj: &Value, causes: &[StatusCause]) -> Vec<StatusCause> {
    let rules: fn(&Value) -> Vec<StatusCause> = match (group, resource) {
        ("apis.kcp.io", "apiresourceschemas") => schema_rules,
        _ => return Vec::new(),
    };
    if causes.iter().any(|c| BLOCKING.contains(&c.reason.as_str())) {
        return vec![cause(
            "<nil>",
            "null: some validation rules were not checked because the object was invalid; correct the existing \
             errors to complete validation",
        )];
    }
    rules(obj)
}

fn cause(field: &str, message: &str) -> StatusCause {
    StatusCause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {message}"),
        field: field.into(),
    }
}

/// APIResourceSchema: more than one version needs a conversion; a webhook goes with the Webhook
/// strategy and only with it.
fn schema_rules(obj: &Value) -> Vec<StatusCause> {
    let Some(spec) = obj.get("spec") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let versions = spec.get("versions").and_then(Value::as_array).map_or(0, Vec::len);
    let conversion = spec.get("conversion").filter(|c| !c.is_null());
    if versions != 1 && !(versions > 1 && conversion.is_some()) {
        out.push(cause(
            "spec",
            "Conversion must be specified when multiple versions exist",
        ));
    }
    if let Some(conversion) = conversion {
        let strategy = conversion.get("strategy").and_then(Value::as_str).unwrap_or_default();
        let webhook = conversion.get("webhook").is_some_and(|w| !w.is_null());
        if !((strategy == "None" && !webhook) || (strategy == "Webhook" && webhook)) {
            out.push(cause(
                "spec.conversion",
                "Webhook must be specified if strategy=Webhook",
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(causes: Vec<StatusCause>) -> Vec<String> {
        causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    #[test]
    fn schema_rules_as_kcps_crd_states_them() {
        let versions = |n: usize| {
            json!(
                (0..n)
                    .map(|i| json!({"name": format!("v{}", i + 1)}))
                    .collect::<Vec<_>>()
            )
        };
        let conversion = "spec: Invalid value: Conversion must be specified when multiple versions exist";
        let webhook = "spec.conversion: Invalid value: Webhook must be specified if strategy=Webhook";
        for (versions, conversion_spec, want) in [
            (versions(1), None, vec![]),
            (versions(2), Some(json!({"strategy": "None"})), vec![]),
            (versions(2), Some(json!({"strategy": "Webhook", "webhook": {}})), vec![]),
            (versions(2), None, vec![conversion]),
            (versions(0), None, vec![conversion]),
            (versions(0), Some(json!({"strategy": "None"})), vec![conversion]),
            (versions(1), Some(json!({"strategy": "Webhook"})), vec![webhook]),
            (
                versions(1),
                Some(json!({"strategy": "None", "webhook": {}})),
                vec![webhook],
            ),
        ] {
            let mut obj = json!({"spec": {"versions": versions}});
            if let Some(c) = conversion_spec {
                obj["spec"]["conversion"] = c;
            }
            assert_eq!(
                messages(rule_causes("apis.kcp.io", "apiresourceschemas", &obj, &[])),
                want,
                "{obj}"
            );
        }
    }

    #[test]
    fn blocking_errors_skip_the_rules_with_a_note() {
        let obj = json!({"spec": {"versions": []}});
        let found = |reason: &str| {
            vec![StatusCause {
                reason: reason.into(),
                message: String::new(),
                field: "spec".into(),
            }]
        };
        assert_eq!(
            messages(rule_causes(
                "apis.kcp.io",
                "apiresourceschemas",
                &obj,
                &found("FieldValueNotSupported")
            )),
            [
                "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
            ]
        );
        // A too-short list does not block them.
        assert_eq!(
            rule_causes("apis.kcp.io", "apiresourceschemas", &obj, &found("FieldValueInvalid")).len(),
            1
        );
        assert!(rule_causes("", "configmaps", &obj, &[]).is_empty());
    }
}
