//! The name and spec rules of kcp's APIResourceSchema validation, in kcp's order: the name is
//! `<prefix>.<plural>.<group>`; the versions have DNS-1035 names, unique, exactly one of them the
//! storage version, each with a schema, a valid deprecation warning, scale paths and printer
//! columns; the names are all set and of DNS-1035 form. The OpenAPI schema itself is not judged
//! here (kcp compiles it as a CRD's; see docs/embedded-kcp.md).

use std::collections::BTreeSet;

use serde_json::Value;

use super::go_json;
use crate::kcp::admission::field::FieldError;
use crate::objects::dns;

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// The group as the name spells it: `core` for the core group.
fn name_group(group: &str) -> &str {
    match group {
        "" => "core",
        g => g,
    }
}

/// The name's problem, if any (kcp stops at the first).
pub fn name_problem(name: &str, spec: &Value) -> Option<FieldError> {
    const FIELD: &str = "metadata.name";
    let plural = text(spec, "/names/plural");
    // Without a plural the names check says so; a suffix message would be `..group`.
    if plural.is_empty() {
        return None;
    }
    let group = name_group(text(spec, "/group"));
    let suffix = format!(".{plural}.{group}");
    let Some(prefix) = name.strip_suffix(&suffix) else {
        return Some(FieldError::invalid(FIELD, name, format!("must end in {suffix}")));
    };
    (!dns::matches_dns1035_label(prefix)).then(|| {
        FieldError::invalid(
            FIELD,
            name,
            format!("must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ in front of .{plural}.{group}"),
        )
    })
}

/// The problems of the versions and names of `spec`.
pub fn spec_problems(spec: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut seen = BTreeSet::new();
    let mut unique = true;
    for (i, version) in versions.iter().enumerate() {
        let name = text(version, "/name");
        unique &= seen.insert(name);
        let label_errors = dns::dns1035_label_errors(name);
        if !label_errors.is_empty() {
            errors.push(FieldError::invalid(
                format!("spec.versions[{i}].name"),
                name,
                label_errors.join(","),
            ));
        }
        errors.extend(version_problems(version, &format!("spec.versions[{i}]")));
    }
    if !unique {
        errors.push(FieldError::invalid_json(
            "spec.versions",
            go_json::versions(spec),
            "must contain unique version names",
        ));
    }
    let storage = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool).unwrap_or_default())
        .count();
    if storage != 1 {
        errors.push(FieldError::invalid_json(
            "spec.versions",
            go_json::versions(spec),
            "must have exactly one version marked as storage version",
        ));
    }
    let names = spec.get("names").cloned().unwrap_or(Value::Null);
    for field in ["plural", "singular", "kind", "listKind"] {
        if text(&names, &format!("/{field}")).is_empty() {
            errors.push(FieldError::required(format!("spec.names.{field}"), ""));
        }
    }
    errors.extend(names_problems(&names));
    errors
}

/// Kubernetes' CRD names rules.
fn names_problems(names: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let dns1035 = |field: String, value: &str, lower: bool, errors: &mut Vec<FieldError>| {
        let checked = if lower { value.to_lowercase() } else { value.to_string() };
        let found = dns::dns1035_label_errors(&checked);
        if !found.is_empty() {
            let prefix = if lower {
                "may have mixed case, but should otherwise match: "
            } else {
                ""
            };
            errors.push(FieldError::invalid(
                field,
                value,
                format!("{prefix}{}", found.join(",")),
            ));
        }
    };
    for (field, lower) in [
        ("plural", false),
        ("singular", false),
        ("kind", true),
        ("listKind", true),
    ] {
        let value = text(names, &format!("/{field}"));
        if !value.is_empty() {
            dns1035(format!("spec.names.{field}"), value, lower, &mut errors);
        }
    }
    let list = |field: &str| names.get(field).and_then(Value::as_array).cloned().unwrap_or_default();
    for (i, short) in list("shortNames").iter().enumerate() {
        dns1035(
            format!("spec.names.shortNames[{i}]"),
            short.as_str().unwrap_or_default(),
            false,
            &mut errors,
        );
    }
    let kind = text(names, "/kind");
    if !kind.is_empty() && kind == text(names, "/listKind") {
        errors.push(FieldError::invalid(
            "spec.names.listKind",
            kind,
            "kind and listKind may not be the same",
        ));
    }
    for (i, category) in list("categories").iter().enumerate() {
        dns1035(
            format!("spec.names.categories[{i}]"),
            category.as_str().unwrap_or_default(),
            false,
            &mut errors,
        );
    }
    errors
}

/// One version's own problems: deprecation warning, schema, scale subresource, printer columns.
fn version_problems(version: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let deprecated = version.get("deprecated").and_then(Value::as_bool).unwrap_or_default();
    if let Some(warning) = version.get("deprecationWarning").and_then(Value::as_str) {
        for problem in deprecation_warning_problems(deprecated, warning) {
            errors.push(FieldError::invalid_json(
                format!("{at}.deprecationWarning"),
                Value::from(warning).to_string(),
                problem,
            ));
        }
    }
    if version.get("schema").is_none_or(Value::is_null) {
        errors.push(FieldError::required(format!("{at}.schema"), ""));
    }
    if let Some(scale) = version.pointer("/subresources/scale").filter(|s| !s.is_null()) {
        errors.extend(scale_problems(scale, &format!("{at}.subresources")));
    }
    let columns = version.get("additionalPrinterColumns").and_then(Value::as_array);
    for (i, column) in columns.into_iter().flatten().enumerate() {
        errors.extend(column_problems(column, &format!("{at}.additionalPrinterColumns[{i}]")));
    }
    errors
}

/// Kubernetes' `ValidateDeprecationWarning` for a warning that is set.
fn deprecation_warning_problems(deprecated: bool, warning: &str) -> Vec<String> {
    if !deprecated {
        return vec!["can only be set for deprecated versions".into()];
    }
    let mut problems = Vec::new();
    if warning.len() > 256 {
        problems.push("must be <= 256 characters long".into());
    }
    if warning.is_empty() {
        problems.push("must not be an empty string".into());
    }
    // Go's `unicode.IsPrint`: of the spaces, only U+0020 is printable.
    if let Some((i, _)) = warning
        .char_indices()
        .find(|&(_, c)| c.is_control() || (c.is_whitespace() && c != ' '))
    {
        problems.push(format!(
            "must only contain printable UTF-8 characters; non-printable character found at index {i}"
        ));
    }
    problems
}

/// A simple JSON path (`.a.b`): the problem, if any.
fn simple_json_path_problem(path: &str, field: &str) -> Option<FieldError> {
    if path.is_empty() {
        Some(FieldError::invalid(field, path, "must not be empty"))
    } else if !path.starts_with('.') {
        Some(FieldError::invalid(
            field,
            path,
            "must be a simple json path starting with .",
        ))
    } else {
        None
    }
}

fn scale_problems(scale: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (key, under) in [("specReplicasPath", ".spec."), ("statusReplicasPath", ".status.")] {
        let field = format!("{at}.scale.{key}");
        let path = text(scale, &format!("/{key}"));
        if path.is_empty() {
            errors.push(FieldError::required(field, ""));
        } else if let Some(problem) = simple_json_path_problem(path, &field) {
            errors.push(problem);
        } else if !path.starts_with(under) {
            let detail = format!("should be a json path under {}", under.trim_end_matches('.'));
            errors.push(FieldError::invalid(field, path, detail));
        }
    }
    let selector = text(scale, "/labelSelectorPath");
    if !selector.is_empty() {
        let field = format!("{at}.scale.labelSelectorPath");
        if let Some(problem) = simple_json_path_problem(selector, &field) {
            errors.push(problem);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            // Go prints the pointer it holds as JSON.
            errors.push(FieldError::invalid_json(
                field,
                Value::from(selector).to_string(),
                "should be a json path under either .spec or .status",
            ));
        }
    }
    errors
}

fn column_problems(column: &Value, at: &str) -> Vec<FieldError> {
    const TYPES: &str = "boolean,date,integer,number,string";
    const FORMATS: &[&str] = &[
        "byte",
        "date",
        "date-time",
        "double",
        "float",
        "int32",
        "int64",
        "password",
    ];
    let mut errors = Vec::new();
    if text(column, "/name").is_empty() {
        errors.push(FieldError::required(format!("{at}.name"), ""));
    }
    let kind = text(column, "/type");
    if kind.is_empty() {
        errors.push(FieldError::required(
            format!("{at}.type"),
            format!("must be one of {TYPES}"),
        ));
    } else if !TYPES.split(',').any(|t| t == kind) {
        errors.push(FieldError::invalid(
            format!("{at}.type"),
            kind,
            format!("must be one of {TYPES}"),
        ));
    }
    let format = text(column, "/format");
    if !format.is_empty() && !FORMATS.contains(&format) {
        errors.push(FieldError::invalid(
            format!("{at}.format"),
            format,
            format!("must be one of {}", FORMATS.join(",")),
        ));
    }
    let path = text(column, "/jsonPath");
    let field = format!("{at}.JSONPath");
    if path.is_empty() {
        errors.push(FieldError::required(field, ""));
    } else if let Some(problem) = simple_json_path_problem(path, &field) {
        errors.push(problem);
    }
    errors
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(group: &str, versions: Value) -> Value {
        json!({"group": group, "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "scope": "Namespaced", "versions": versions})
    }

    fn v1() -> Value {
        json!({"name": "v1", "served": true, "storage": true, "schema": {"type": "object"}})
    }

    fn strings(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn names_are_prefix_plural_and_group() {
        for (name, group, want) in [
            ("v1.widgets.example.io", "example.io", None),
            ("today.widgets.core", "", None),
            ("a-1.widgets.example.io", "example.io", None),
            (
                "wrong",
                "example.io",
                Some("metadata.name: Invalid value: \"wrong\": must end in .widgets.example.io"),
            ),
            (
                "v1.widgets.example.io",
                "",
                Some("metadata.name: Invalid value: \"v1.widgets.example.io\": must end in .widgets.core"),
            ),
            (
                "1v.widgets.example.io",
                "example.io",
                Some(
                    "metadata.name: Invalid value: \"1v.widgets.example.io\": must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ in front of .widgets.example.io",
                ),
            ),
            (
                ".widgets.example.io",
                "example.io",
                Some(
                    "metadata.name: Invalid value: \".widgets.example.io\": must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ in front of .widgets.example.io",
                ),
            ),
            (
                "a.b.widgets.example.io",
                "example.io",
                Some(
                    "metadata.name: Invalid value: \"a.b.widgets.example.io\": must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ in front of .widgets.example.io",
                ),
            ),
        ] {
            let got = name_problem(name, &spec(group, json!([v1()]))).map(|e| e.to_string());
            assert_eq!(got.as_deref(), want, "{name}");
        }
        assert_eq!(
            name_problem("anything", &json!({"names": {}})),
            None,
            "no plural, no suffix rule"
        );
    }

    #[test]
    fn versions_rules() {
        let v = |name: &str, storage: bool| json!({"name": name, "served": true, "storage": storage, "schema": {"type": "object"}});
        for (versions, want) in [
            (json!([v1()]), vec![]),
            (json!([v("v1", true), v("v2", false)]), vec![]),
            (
                json!([v("v1", false)]),
                vec![
                    r#"spec.versions: Invalid value: [{"name":"v1","served":true,"storage":false,"schema":{"type":"object"},"subresources":{}}]: must have exactly one version marked as storage version"#,
                ],
            ),
            (
                json!([v("v1", true), v("v2", true)]),
                vec![
                    r#"spec.versions: Invalid value: [{"name":"v1","served":true,"storage":true,"schema":{"type":"object"},"subresources":{}},{"name":"v2","served":true,"storage":true,"schema":{"type":"object"},"subresources":{}}]: must have exactly one version marked as storage version"#,
                ],
            ),
            (
                json!([v("v1", true), v("v1", false)]),
                vec![
                    r#"spec.versions: Invalid value: [{"name":"v1","served":true,"storage":true,"schema":{"type":"object"},"subresources":{}},{"name":"v1","served":true,"storage":false,"schema":{"type":"object"},"subresources":{}}]: must contain unique version names"#,
                ],
            ),
            (
                json!([]),
                vec!["spec.versions: Invalid value: []: must have exactly one version marked as storage version"],
            ),
            (
                json!([v("V1", true)]),
                vec![
                    "spec.versions[0].name: Invalid value: \"V1\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                ],
            ),
            (
                json!([{"name": "v1", "served": true, "storage": true}]),
                vec!["spec.versions[0].schema: Required value"],
            ),
            (
                json!([{"name": "v1", "served": true, "storage": true, "schema": {}, "deprecationWarning": "old"}]),
                vec![
                    "spec.versions[0].deprecationWarning: Invalid value: \"old\": can only be set for deprecated versions",
                ],
            ),
            (
                json!([{"name": "v1", "served": true, "storage": true, "schema": {}, "deprecated": true, "deprecationWarning": ""}]),
                vec!["spec.versions[0].deprecationWarning: Invalid value: \"\": must not be an empty string"],
            ),
            (
                json!([{"name": "v1", "served": true, "storage": true, "schema": {}, "subresources": {"scale": {"specReplicasPath": ".status.r", "statusReplicasPath": "", "labelSelectorPath": ".x"}}}]),
                vec![
                    "spec.versions[0].subresources.scale.specReplicasPath: Invalid value: \".status.r\": should be a json path under .spec",
                    "spec.versions[0].subresources.scale.statusReplicasPath: Required value",
                    "spec.versions[0].subresources.scale.labelSelectorPath: Invalid value: \".x\": should be a json path under either .spec or .status",
                ],
            ),
            (
                json!([{"name": "v1", "served": true, "storage": true, "schema": {}, "additionalPrinterColumns": [{"name": "A", "type": "text", "format": "uuid", "jsonPath": "spec.a"}, {"jsonPath": ".b"}]}]),
                vec![
                    "spec.versions[0].additionalPrinterColumns[0].type: Invalid value: \"text\": must be one of boolean,date,integer,number,string",
                    "spec.versions[0].additionalPrinterColumns[0].format: Invalid value: \"uuid\": must be one of byte,date,date-time,double,float,int32,int64,password",
                    "spec.versions[0].additionalPrinterColumns[0].JSONPath: Invalid value: \"spec.a\": must be a simple json path starting with .",
                    "spec.versions[0].additionalPrinterColumns[1].name: Required value",
                    "spec.versions[0].additionalPrinterColumns[1].type: Required value: must be one of boolean,date,integer,number,string",
                ],
            ),
        ] {
            assert_eq!(
                strings(spec_problems(&spec("example.io", versions.clone()))),
                want,
                "{versions}"
            );
        }
    }

    #[test]
    fn names_rules() {
        let with = |names: Value| json!({"names": names, "versions": [v1()]});
        for (names, want) in [
            (
                json!({"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList", "shortNames": ["wd"], "categories": ["all"]}),
                vec![],
            ),
            (
                json!({"plural": "widgets", "kind": "Widget"}),
                vec![
                    "spec.names.singular: Required value",
                    "spec.names.listKind: Required value",
                ],
            ),
            (
                json!({"plural": "Widgets", "singular": "widget", "kind": "Wid_get", "listKind": "Wid_get", "shortNames": ["W"], "categories": ["a b"]}),
                vec![
                    "spec.names.plural: Invalid value: \"Widgets\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                    "spec.names.kind: Invalid value: \"Wid_get\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                    "spec.names.listKind: Invalid value: \"Wid_get\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                    "spec.names.shortNames[0]: Invalid value: \"W\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                    "spec.names.listKind: Invalid value: \"Wid_get\": kind and listKind may not be the same",
                    "spec.names.categories[0]: Invalid value: \"a b\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                ],
            ),
        ] {
            assert_eq!(strings(spec_problems(&with(names.clone()))), want, "{names}");
        }
    }
}
