//! The group of an APIResourceSchema as kcp judges it: the Kubernetes community's groups (`k8s.io`,
//! `kubernetes.io` and their subdomains) need the API approval annotation, as for CRDs, and the
//! group must be a DNS subdomain with at least one dot (`core` is written as the empty group).

use serde_json::Value;

use crate::kcp::admission::field::FieldError;
use crate::objects::dns;

pub const APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";
const APPROVAL_FIELD: &str = "metadata.annotations[api-approved.kubernetes.io]";
const ENHANCEMENT: &str = "https://github.com/kubernetes/enhancements/pull/1111";

/// The groups Kubernetes accepts without a dot; any other group needs one.
const SINGLE_SEGMENT_GROUPS: &[&str] = &["apps", "batch", "extensions", "policy", "autoscaling"];

/// Whether `group` belongs to the Kubernetes community and needs approval.
pub fn is_protected(group: &str) -> bool {
    ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|domain| group == *domain || group.strip_suffix(domain).is_some_and(|rest| rest.ends_with('.')))
}

/// The state of the approval annotation's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approval {
    Missing,
    /// "unapproved…": knowingly not approved, accepted.
    Bypassed,
    /// A URL (of the approving pull request).
    Approved,
    Invalid,
}

pub fn approval(annotation: &str) -> Approval {
    if annotation.is_empty() {
        Approval::Missing
    } else if annotation.starts_with("unapproved") {
        Approval::Bypassed
    } else if is_absolute_url_with_host(annotation) {
        Approval::Approved
    } else {
        Approval::Invalid
    }
}

/// The approval problem of a schema in `group` with `annotations`, if any.
pub fn approval_problem(group: &str, annotations: Option<&Value>) -> Option<FieldError> {
    if !is_protected(group) {
        return None;
    }
    let value = annotations
        .and_then(|a| a.get(APPROVAL_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or_default();
    match approval(value) {
        Approval::Approved | Approval::Bypassed => None,
        Approval::Missing => Some(FieldError::required(
            APPROVAL_FIELD,
            format!("protected groups must have approval annotation \"{APPROVAL_ANNOTATION}\", see {ENHANCEMENT}"),
        )),
        Approval::Invalid => Some(FieldError::invalid(
            APPROVAL_FIELD,
            value,
            format!(
                "protected groups must have approval annotation \"{APPROVAL_ANNOTATION}\" with either a URL or a \
                 reason starting with \"unapproved\", see {ENHANCEMENT}"
            ),
        )),
    }
}

/// What is wrong with the form of `group`, if anything.
pub fn form_problem(group: &str) -> Option<FieldError> {
    const FIELD: &str = "spec.group";
    if group.is_empty() {
        return None;
    }
    if group == "core" {
        return Some(FieldError::invalid(
            FIELD,
            group,
            "must be empty string for the core group",
        ));
    }
    let errors = dns::dns1123_subdomain_errors(group);
    if !errors.is_empty() {
        return Some(FieldError::invalid(FIELD, group, errors.join(",")));
    }
    (!group.contains('.') && !SINGLE_SEGMENT_GROUPS.contains(&group))
        .then(|| FieldError::invalid(FIELD, group, "should be a domain with at least one dot"))
}

/// Whether `s` parses as an absolute request URI with a scheme and a host, as Go's
/// `url.ParseRequestURI` followed by kcp's check that both are set.
fn is_absolute_url_with_host(s: &str) -> bool {
    if s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let scheme_ok = scheme.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    let Some(rest) = rest.strip_prefix("//") else {
        return false;
    };
    if !scheme_ok {
        return false;
    }
    let rest = rest.split_once('?').map_or(rest, |(before, _)| before);
    let authority = rest.split_once('/').map_or(rest, |(before, _)| before);
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host_chars_ok = host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b >= 0x80 || b"-_.~!$&'()*+,;=:[]<>\"%".contains(&b));
    let port_ok = match host.rsplit_once(':') {
        Some((_, port)) if !host.starts_with('[') => port.bytes().all(|b| b.is_ascii_digit()),
        _ => true,
    };
    let name = host
        .rsplit_once(':')
        .filter(|_| !host.starts_with('['))
        .map_or(host, |(h, _)| h);
    !name.is_empty() && host_chars_ok && port_ok
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn protected_groups() {
        for (group, protected) in [
            ("k8s.io", true),
            ("apps.k8s.io", true),
            ("kubernetes.io", true),
            ("x.y.kubernetes.io", true),
            ("notk8s.io", false),
            ("k8s.io.example.com", false),
            ("mykubernetes.io", false),
            ("example.io", false),
            ("", false),
        ] {
            assert_eq!(is_protected(group), protected, "{group}");
        }
    }

    #[test]
    fn approval_states() {
        for (value, want) in [
            ("", Approval::Missing),
            ("unapproved", Approval::Bypassed),
            ("unapproved, experimental only", Approval::Bypassed),
            (
                "https://github.com/kubernetes/kubernetes/pull/78458",
                Approval::Approved,
            ),
            ("http://example.com:8080/x?y#z", Approval::Approved),
            ("https://user@host", Approval::Approved),
            ("approved", Approval::Invalid),
            ("https://", Approval::Invalid),
            ("https:/github.com/x", Approval::Invalid),
            ("/kubernetes/pull/1", Approval::Invalid),
            ("github.com/kubernetes/pull/1", Approval::Invalid),
            ("https://exa mple.com", Approval::Invalid),
            ("https://example.com:port", Approval::Invalid),
            ("1http://example.com", Approval::Invalid),
            ("Unapproved", Approval::Invalid),
        ] {
            assert_eq!(approval(value), want, "{value:?}");
        }
    }

    #[test]
    fn approval_problems_are_kcps_messages() {
        let annotations = |v: &str| json!({ APPROVAL_ANNOTATION: v });
        assert_eq!(approval_problem("example.io", None), None);
        assert_eq!(approval_problem("apps.k8s.io", Some(&annotations("unapproved"))), None);
        assert_eq!(
            approval_problem(
                "apps.k8s.io",
                Some(&annotations("https://github.com/kubernetes/enhancements/pull/1111"))
            ),
            None
        );
        assert_eq!(
            approval_problem("apps.k8s.io", None).map(|e| e.to_string()).as_deref(),
            Some(
                "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
            )
        );
        assert_eq!(
            approval_problem("kubernetes.io", Some(&annotations("yes")))
                .map(|e| e.to_string())
                .as_deref(),
            Some(
                "metadata.annotations[api-approved.kubernetes.io]: Invalid value: \"yes\": protected groups must have approval annotation \"api-approved.kubernetes.io\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
            )
        );
    }

    #[test]
    fn group_forms() {
        for (group, want) in [
            ("", None),
            ("example.io", None),
            ("apps", None),
            ("autoscaling", None),
            (
                "core",
                Some("spec.group: Invalid value: \"core\": must be empty string for the core group"),
            ),
            (
                "widgets",
                Some("spec.group: Invalid value: \"widgets\": should be a domain with at least one dot"),
            ),
            (
                "Example.io",
                Some(
                    "spec.group: Invalid value: \"Example.io\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                ),
            ),
        ] {
            assert_eq!(form_problem(group).map(|e| e.to_string()).as_deref(), want, "{group}");
        }
    }
}
