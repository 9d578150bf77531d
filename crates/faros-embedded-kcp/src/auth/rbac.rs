//! RBAC rule semantics and kube-apiserver's 403 texts.
//!
//! Matching follows `k8s.io/component-helpers/auth/rbac/validation` exactly: `*` for verbs, groups
//! and resources; `*/<sub>` for one subresource of any resource; `resourceNames` only narrow when
//! non-empty; `nonResourceURLs` match exactly or by a trailing `*` prefix.

use faros_core::status::{Status, StatusDetails, qualified};
use serde::{Deserialize, Serialize};

use super::UserInfo;

/// `rbac.authorization.k8s.io/v1` PolicyRule.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    #[serde(default, deserialize_with = "null_as_empty")]
    pub verbs: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
    #[serde(
        default,
        rename = "nonResourceURLs",
        deserialize_with = "null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub non_resource_urls: Vec<String>,
}

/// Go clients write `null` for empty lists; treat it like an absent field.
pub(crate) fn null_as_empty<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
}

/// What a request wants to do (kube's `authorizer.Attributes`). For non-resource requests only
/// `user`, `verb` and `path` matter.
#[derive(Clone, Copy, Debug)]
pub struct Attributes<'a> {
    pub user: &'a UserInfo,
    pub verb: &'a str,
    pub api_group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub name: &'a str,
    pub namespace: &'a str,
    pub path: &'a str,
    pub resource_request: bool,
}

impl<'a> Attributes<'a> {
    /// A resource request; add `name`, `namespace`, `subresource` with struct update syntax.
    pub fn resource(user: &'a UserInfo, verb: &'a str, api_group: &'a str, resource: &'a str) -> Self {
        Self {
            user,
            verb,
            api_group,
            resource,
            subresource: "",
            name: "",
            namespace: "",
            path: "",
            resource_request: true,
        }
    }

    /// A non-resource request such as `get /healthz`.
    pub fn non_resource(user: &'a UserInfo, verb: &'a str, path: &'a str) -> Self {
        Self {
            path,
            resource_request: false,
            ..Self::resource(user, verb, "", "")
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// `reason` is appended to the 403 message after `: ` when non-empty.
    Deny {
        reason: String,
    },
}

impl Decision {
    #[cfg(test)]
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow)
    }
}

impl PolicyRule {
    /// Whether this rule grants the request.
    pub fn allows(&self, attrs: &Attributes<'_>) -> bool {
        if !has_or_star(&self.verbs, attrs.verb) {
            return false;
        }
        if attrs.resource_request {
            has_or_star(&self.api_groups, attrs.api_group)
                && self.resource_matches(attrs.resource, attrs.subresource)
                && (self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == attrs.name))
        } else {
            self.non_resource_urls
                .iter()
                .any(|url| non_resource_url_matches(url, attrs.path))
        }
    }

    fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        self.resources.iter().any(|rule| {
            if rule == "*" {
                return true;
            }
            if subresource.is_empty() {
                return rule == resource;
            }
            match rule.split_once('/') {
                Some((r, s)) => s == subresource && (r == "*" || r == resource),
                None => false,
            }
        })
    }
}

fn has_or_star(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == "*" || v == value)
}

fn non_resource_url_matches(rule: &str, path: &str) -> bool {
    if rule == "*" || rule == path {
        return true;
    }
    rule.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix))
}

/// kube-apiserver's `forbiddenMessage` + `NewForbidden`, e.g.
/// `pods "p" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "ns"`.
pub fn forbidden_message(attrs: &Attributes<'_>, reason: &str) -> String {
    let user = go_quote(&attrs.user.username);
    let verb = attrs.verb;
    let what = if !attrs.resource_request {
        format!("User {user} cannot {verb} path {}", go_quote(attrs.path))
    } else {
        let resource = if attrs.subresource.is_empty() {
            attrs.resource.to_string()
        } else {
            format!("{}/{}", attrs.resource, attrs.subresource)
        };
        let scope = if attrs.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {}", go_quote(attrs.namespace))
        };
        format!(
            "User {user} cannot {verb} resource {} in API group {} {scope}",
            go_quote(&resource),
            go_quote(attrs.api_group)
        )
    };
    let err = if reason.is_empty() {
        what
    } else {
        format!("{what}: {reason}")
    };
    // Non-resource requests have neither group nor resource, so `NewForbidden` drops the prefix.
    let (group, resource) = request_group_resource(attrs);
    if group.is_empty() && resource.is_empty() {
        format!("forbidden: {err}")
    } else if attrs.name.is_empty() {
        format!("{} is forbidden: {err}", qualified(group, resource))
    } else {
        format!(
            "{} {} is forbidden: {err}",
            qualified(group, resource),
            go_quote(attrs.name)
        )
    }
}

fn request_group_resource<'a>(attrs: &Attributes<'a>) -> (&'a str, &'a str) {
    if attrs.resource_request {
        (attrs.api_group, attrs.resource)
    } else {
        ("", "")
    }
}

/// The full 403 `Status` kube-apiserver returns for a denied request.
pub fn forbidden_status(attrs: &Attributes<'_>, reason: &str) -> Status {
    let (group, resource) = request_group_resource(attrs);
    Status::forbidden(forbidden_message(attrs, reason)).with_details(StatusDetails {
        name: attrs.name.to_string(),
        group: group.to_string(),
        kind: resource.to_string(),
        ..Default::default()
    })
}

/// Go's `%q` for the strings that appear in these messages.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect();
        PolicyRule {
            verbs: v(verbs),
            api_groups: v(groups),
            resources: v(resources),
            resource_names: v(names),
            non_resource_urls: vec![],
        }
    }

    fn url_rule(verbs: &[&str], urls: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: verbs.iter().map(|s| s.to_string()).collect(),
            non_resource_urls: urls.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn resource_rule_matching() {
        let user = UserInfo::default();
        let req = |verb, group, resource, sub, name| Attributes {
            subresource: sub,
            name,
            namespace: "ns",
            ..Attributes::resource(&user, verb, group, resource)
        };
        let cases: Vec<(PolicyRule, Attributes<'_>, bool)> = vec![
            (
                rule(&["get"], &[""], &["pods"], &[]),
                req("get", "", "pods", "", "p"),
                true,
            ),
            (
                rule(&["get"], &[""], &["pods"], &[]),
                req("list", "", "pods", "", ""),
                false,
            ),
            (
                rule(&["*"], &[""], &["pods"], &[]),
                req("delete", "", "pods", "", "p"),
                true,
            ),
            (
                rule(&["get"], &["apps"], &["pods"], &[]),
                req("get", "", "pods", "", "p"),
                false,
            ),
            (
                rule(&["get"], &["*"], &["pods"], &[]),
                req("get", "example.io", "pods", "", "p"),
                true,
            ),
            (
                rule(&["get"], &[], &["pods"], &[]),
                req("get", "", "pods", "", "p"),
                false,
            ),
            (
                rule(&["get"], &[""], &["*"], &[]),
                req("get", "", "secrets", "", "s"),
                true,
            ),
            (
                rule(&["get"], &[""], &["*"], &[]),
                req("get", "", "pods", "log", "p"),
                true,
            ),
            (
                rule(&["get"], &[""], &["pods"], &[]),
                req("get", "", "pods", "log", "p"),
                false,
            ),
            (
                rule(&["get"], &[""], &["pods/log"], &[]),
                req("get", "", "pods", "log", "p"),
                true,
            ),
            (
                rule(&["get"], &[""], &["pods/log"], &[]),
                req("get", "", "pods", "", "p"),
                false,
            ),
            (
                rule(&["get"], &[""], &["pods/log"], &[]),
                req("get", "", "pods", "exec", "p"),
                false,
            ),
            (
                rule(&["get"], &[""], &["*/status"], &[]),
                req("get", "", "widgets", "status", "w"),
                true,
            ),
            (
                rule(&["get"], &[""], &["*/status"], &[]),
                req("get", "", "widgets", "", "w"),
                false,
            ),
            (
                rule(&["get"], &[""], &["pods/*"], &[]),
                req("get", "", "pods", "log", "p"),
                false,
            ),
            (
                rule(&["get"], &[""], &["pods"], &["a", "b"]),
                req("get", "", "pods", "", "b"),
                true,
            ),
            (
                rule(&["get"], &[""], &["pods"], &["a"]),
                req("get", "", "pods", "", "c"),
                false,
            ),
            (
                rule(&["list"], &[""], &["pods"], &["a"]),
                req("list", "", "pods", "", ""),
                false,
            ),
            (
                url_rule(&["get"], &["/healthz"]),
                req("get", "", "healthz", "", ""),
                false,
            ),
        ];
        for (i, (r, attrs, want)) in cases.iter().enumerate() {
            assert_eq!(r.allows(attrs), *want, "case {i}: {r:?} vs {attrs:?}");
        }
    }

    #[test]
    fn non_resource_rule_matching() {
        let user = UserInfo::default();
        let cases = [
            (url_rule(&["get"], &["/healthz"]), "get", "/healthz", true),
            (url_rule(&["get"], &["/healthz"]), "get", "/healthz/etcd", false),
            (url_rule(&["get"], &["/healthz*"]), "get", "/healthz/etcd", true),
            (url_rule(&["get"], &["/apis/*"]), "get", "/apis/apps/v1", true),
            (url_rule(&["get"], &["/apis/*"]), "get", "/apis", false),
            (url_rule(&["get"], &["*"]), "get", "/anything", true),
            (url_rule(&["get"], &["*"]), "post", "/anything", false),
            (rule(&["get"], &["*"], &["*"], &[]), "get", "/version", false),
        ];
        for (r, verb, path, want) in cases {
            assert_eq!(
                r.allows(&Attributes::non_resource(&user, verb, path)),
                want,
                "{verb} {path} vs {r:?}"
            );
        }
    }

    #[test]
    fn policy_rule_json_uses_kubernetes_field_names() {
        let r: PolicyRule = serde_json::from_value(serde_json::json!({
            "verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["p"],
            "nonResourceURLs": ["/x"]
        }))
        .unwrap();
        assert_eq!(r.api_groups, vec![""]);
        assert_eq!(r.resource_names, vec!["p"]);
        assert_eq!(r.non_resource_urls, vec!["/x"]);
        assert_eq!(
            serde_json::to_value(url_rule(&["get"], &["/x"])).unwrap(),
            serde_json::json!({"verbs":["get"],"nonResourceURLs":["/x"]})
        );
    }

    #[test]
    fn forbidden_messages_match_kube_apiserver() {
        let bob = UserInfo {
            username: "bob".into(),
            ..Default::default()
        };
        let sa = UserInfo {
            username: "system:serviceaccount:default:provider".into(),
            ..Default::default()
        };
        let cases: Vec<(Attributes<'_>, &str, &str)> = vec![
            (
                Attributes {
                    namespace: "default",
                    ..Attributes::resource(&bob, "list", "", "pods")
                },
                "",
                r#"pods is forbidden: User "bob" cannot list resource "pods" in API group "" in the namespace "default""#,
            ),
            (
                Attributes {
                    namespace: "default",
                    name: "cm1",
                    ..Attributes::resource(&bob, "get", "", "configmaps")
                },
                "",
                r#"configmaps "cm1" is forbidden: User "bob" cannot get resource "configmaps" in API group "" in the namespace "default""#,
            ),
            (
                Attributes {
                    name: "ws1",
                    ..Attributes::resource(&sa, "delete", "tenancy.kcp.io", "workspaces")
                },
                "",
                r#"workspaces.tenancy.kcp.io "ws1" is forbidden: User "system:serviceaccount:default:provider" cannot delete resource "workspaces" in API group "tenancy.kcp.io" at the cluster scope"#,
            ),
            (
                Attributes {
                    name: "w",
                    namespace: "ns",
                    subresource: "status",
                    ..Attributes::resource(&bob, "patch", "example.io", "widgets")
                },
                "",
                r#"widgets.example.io "w" is forbidden: User "bob" cannot patch resource "widgets/status" in API group "example.io" in the namespace "ns""#,
            ),
            (
                Attributes::resource(&bob, "list", "apis.kcp.io", "apiexports"),
                r#"RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found"#,
                r#"apiexports.apis.kcp.io is forbidden: User "bob" cannot list resource "apiexports" in API group "apis.kcp.io" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found"#,
            ),
            (
                Attributes::non_resource(&bob, "get", "/foo"),
                "",
                r#"forbidden: User "bob" cannot get path "/foo""#,
            ),
            (
                Attributes::non_resource(&bob, "post", "/metrics"),
                "access denied",
                r#"forbidden: User "bob" cannot post path "/metrics": access denied"#,
            ),
        ];
        for (attrs, reason, want) in cases {
            assert_eq!(forbidden_message(&attrs, reason), want);
        }
    }

    #[test]
    fn forbidden_status_has_kube_details() {
        let bob = UserInfo {
            username: "bob".into(),
            ..Default::default()
        };
        let attrs = Attributes {
            name: "e1",
            ..Attributes::resource(&bob, "bind", "apis.kcp.io", "apiexports")
        };
        let json = serde_json::to_value(forbidden_status(&attrs, "")).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "apiexports.apis.kcp.io \"e1\" is forbidden: User \"bob\" cannot bind resource \"apiexports\" in API group \"apis.kcp.io\" at the cluster scope",
                "reason": "Forbidden",
                "details": {"name": "e1", "group": "apis.kcp.io", "kind": "apiexports"},
                "code": 403
            })
        );
        let json = serde_json::to_value(forbidden_status(&Attributes::non_resource(&bob, "get", "/x"), "")).unwrap();
        assert_eq!(json["details"], serde_json::json!({}));
    }

    #[test]
    fn go_quoting() {
        assert_eq!(go_quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(go_quote("a\nb\u{1}"), r#""a\nb\x01""#);
    }
}
