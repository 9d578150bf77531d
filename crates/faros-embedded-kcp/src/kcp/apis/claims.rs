//! Permission claims: which of an export's claims a binding accepted, the effective verbs (a literal
//! set intersection), `PermissionClaimsValid`/`PermissionClaimsApplied`, and the claim labels kcp
//! puts on claimed objects (kcp `pkg/reconciler/apis/permissionclaimlabel`, SDK
//! `apis/v1alpha2/permissionclaims/labels.go`).

use std::collections::{BTreeMap, BTreeSet};

use faros_core::kcp::LABEL_CLAIMED_PREFIX;
use faros_core::kcp::apis::v1alpha2::{
    AcceptablePermissionClaim, AcceptablePermissionClaimState, PermissionClaim, PermissionClaimSelector,
    ScopedPermissionClaim,
};
use serde_json::Value;

use super::conditions::{Mark, SEVERITY_ERROR, SEVERITY_WARNING};
use super::hash;
use crate::kcp::apis::view::AcceptedClaim;
use crate::objects::meta;

pub const PERMISSION_CLAIMS_VALID: &str = "PermissionClaimsValid";
pub const PERMISSION_CLAIMS_APPLIED: &str = "PermissionClaimsApplied";

/// kcp's set key of a claim: `resource/group/identityHash`.
fn key(group: &str, resource: &str, identity_hash: &str) -> String {
    format!("{resource}/{group}/{identity_hash}")
}

/// Literal set intersection, sorted: export `["*"]` and binding `["get"]` share nothing.
pub fn effective_verbs(exported: &[String], accepted: &[String]) -> Vec<String> {
    let exported: BTreeSet<&String> = exported.iter().collect();
    accepted
        .iter()
        .filter(|v| exported.contains(v))
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Label key marking objects claimed through `export_cluster:export_name`.
pub fn label_key(export_cluster: &str, export_name: &str) -> String {
    format!(
        "{LABEL_CLAIMED_PREFIX}{}",
        hash::export_hash(export_cluster, export_name)
    )
}

/// Label value of one claim: base62 sha224 of the claim's JSON without verbs and selectors, exactly
/// as Go marshals `PermissionClaim` (`group` and `identityHash` omitted when empty, `verbs: null`).
pub fn label_value(group: &str, resource: &str, identity_hash: &str) -> String {
    let mut json = serde_json::Map::new();
    if !group.is_empty() {
        json.insert("group".into(), Value::String(group.into()));
    }
    if !resource.is_empty() {
        json.insert("resource".into(), Value::String(resource.into()));
    }
    json.insert("verbs".into(), Value::Null);
    if !identity_hash.is_empty() {
        json.insert("identityHash".into(), Value::String(identity_hash.into()));
    }
    let bytes = serde_json::to_vec(&Value::Object(json)).unwrap_or_default();
    hash::base62_sha224(&bytes)
}

/// The outcome of comparing an export's claims with a binding's.
#[derive(Clone, Debug)]
pub struct Evaluation {
    /// Accepted claims the export also makes, sorted by kcp's set key.
    pub applied: Vec<ScopedPermissionClaim>,
    /// `applied` with effective verbs and selectors, for the virtual workspace.
    pub accepted: Vec<AcceptedClaim>,
    pub valid: Mark,
}

/// `selector` as a label selector; `None` for `matchAll` (everything).
pub fn selector_of(selector: &PermissionClaimSelector) -> Option<crate::selector::LabelSelector> {
    if selector.match_all {
        return None;
    }
    let value = serde_json::json!({
        "matchLabels": selector.match_labels.clone().unwrap_or_default(),
        "matchExpressions": selector.match_expressions.clone().unwrap_or_default(),
    });
    match crate::selector::LabelSelector::from_label_selector(&value) {
        Ok(s) => Some(s),
        // A selector that does not parse selects nothing rather than everything.
        Err(_) => crate::selector::LabelSelector::parse("faros.invalid/never,!faros.invalid/never").ok(),
    }
}

/// The `matchLabels` of a selector (none for `matchAll`).
pub fn match_labels_of(selector: &PermissionClaimSelector) -> BTreeMap<String, String> {
    if selector.match_all {
        return BTreeMap::new();
    }
    selector.match_labels.clone().unwrap_or_default().into_iter().collect()
}

/// Compares the export's claims with the binding's; claims on the export's own resources are ignored.
pub fn evaluate(
    exported: &[PermissionClaim],
    binding: &[AcceptablePermissionClaim],
    own_resources: &[(String, String)],
) -> Evaluation {
    let own = |g: &str, r: &str| own_resources.iter().any(|(og, or)| og == g && or == r);
    let exported: BTreeMap<String, &PermissionClaim> = exported
        .iter()
        .filter(|c| !own(&c.group, &c.resource))
        .map(|c| (key(&c.group, &c.resource, &c.identity_hash), c))
        .collect();
    let accepted: BTreeMap<String, &AcceptablePermissionClaim> = binding
        .iter()
        .filter(|c| c.state == AcceptablePermissionClaimState::Accepted)
        .map(|c| (key(&c.group, &c.resource, &c.identity_hash), c))
        .collect();
    let mut applied = Vec::new();
    let mut effective = Vec::new();
    let mut unexpected = Vec::new();
    let mut mismatches = Vec::new();
    for (k, claim) in &accepted {
        let Some(export_claim) = exported.get(k) else {
            unexpected.push(format!(
                "unexpected/invalid claim for {}.{} (identity {:?})",
                claim.resource, claim.group, claim.identity_hash
            ));
            continue;
        };
        applied.push(ScopedPermissionClaim {
            group: claim.group.clone(),
            resource: claim.resource.clone(),
            verbs: claim.verbs.clone(),
            identity_hash: claim.identity_hash.clone(),
            selector: claim.selector.clone(),
            extra: Default::default(),
        });
        effective.push(AcceptedClaim {
            group: claim.group.clone(),
            resource: claim.resource.clone(),
            verbs: effective_verbs(&export_claim.verbs, &claim.verbs),
            selector: selector_of(&claim.selector),
            match_labels: match_labels_of(&claim.selector),
        });
        let a: BTreeSet<&String> = claim.verbs.iter().collect();
        let e: BTreeSet<&String> = export_claim.verbs.iter().collect();
        let star = "*".to_string();
        let mut parts = Vec::new();
        if !a.contains(&star) && !e.contains(&star) && a != e {
            parts.push(format!(
                "verbs: accepted {}, exported {}",
                go_list(&claim.verbs),
                go_list(&export_claim.verbs)
            ));
        }
        if export_claim
            .default_selector
            .as_ref()
            .is_some_and(|d| *d != claim.selector)
        {
            parts.push("selector differs from defaultSelector".into());
        }
        if !parts.is_empty() {
            mismatches.push(format!("{}.{} ({})", claim.resource, claim.group, parts.join("; ")));
        }
    }
    let valid = if !mismatches.is_empty() {
        let shown = mismatches.len().min(5);
        Mark::false_(
            PERMISSION_CLAIMS_VALID,
            "PermissionClaimsMismatch",
            SEVERITY_WARNING,
            format!(
                "{} permission claim(s) have mismatched verbs or selectors (showing first {shown}): {}",
                mismatches.len(),
                mismatches[..shown].join(", ")
            ),
        )
    } else if !unexpected.is_empty() {
        let shown = unexpected.len().min(10);
        Mark::false_(
            PERMISSION_CLAIMS_VALID,
            "InvalidPermissionClaims",
            SEVERITY_ERROR,
            format!(
                "{} unexpected and/or invalid permission claims (showing first {shown}): {}",
                unexpected.len(),
                go_aggregate(&unexpected[..shown])
            ),
        )
    } else {
        Mark::true_(PERMISSION_CLAIMS_VALID)
    };
    Evaluation {
        applied,
        accepted: effective,
        valid,
    }
}

/// Go's `%v` of a `[]string`.
fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// `utilerrors.NewAggregate(errs).Error()`.
fn go_aggregate(errs: &[String]) -> String {
    match errs {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Whether `obj`'s labels are selected by an accepted claim.
pub fn selects(claim: &AcceptedClaim, obj: &Value) -> bool {
    match &claim.selector {
        None => true,
        Some(s) => s.matches(meta::labels(obj)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use faros_core::kcp::ConditionStatus;
    use serde_json::json;

    fn export_claim(v: Value) -> PermissionClaim {
        serde_json::from_value(v).unwrap_or_else(|e| unreachable!("{e}"))
    }
    fn binding_claim(v: Value) -> AcceptablePermissionClaim {
        serde_json::from_value(v).unwrap_or_else(|e| unreachable!("{e}"))
    }

    #[test]
    fn verb_intersection_is_literal() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let cases: [(&[&str], &[&str], &[&str]); 4] = [
            (&["get", "list", "create"], &["get", "list"], &["get", "list"]),
            (&["*"], &["get", "list"], &[]),
            (&["*"], &["*"], &["*"]),
            (&["watch", "get"], &["get", "watch", "get"], &["get", "watch"]),
        ];
        for (e, a, want) in cases {
            assert_eq!(effective_verbs(&s(e), &s(a)), s(want), "{e:?} ∩ {a:?}");
        }
    }

    #[test]
    fn label_value_hashes_go_json_of_the_claim() {
        assert_eq!(
            label_value("", "configmaps", ""),
            "3QVjs6pfBjMpLEVYYhysJnroYGsQGlWm05E4qe"
        );
        assert!(label_key("root", "widgets.example.io").ends_with("/4o7BgXDVSw9Z0bNGI5KvI2webNkICO2gMjsFfu"));
    }

    #[test]
    fn evaluation_table() {
        let exported = vec![
            export_claim(json!({"resource": "configmaps", "verbs": ["get", "list", "create"]})),
            export_claim(json!({"resource": "secrets", "verbs": ["get"]})),
            export_claim(json!({"group": "example.io", "resource": "widgets", "verbs": ["*"]})),
        ];
        let own = vec![("example.io".to_string(), "widgets".to_string())];
        // Same verbs, accepted → applied with all verbs; rejected claims are not applied.
        let eval = evaluate(
            &exported,
            &[
                binding_claim(json!({"resource": "configmaps", "verbs": ["get", "list", "create"],
                    "selector": {"matchAll": true}, "state": "Accepted"})),
                binding_claim(json!({"resource": "secrets", "verbs": ["get"],
                    "selector": {"matchAll": true}, "state": "Rejected"})),
            ],
            &own,
        );
        assert_eq!(eval.valid.status, ConditionStatus::True);
        assert_eq!(eval.applied.len(), 1);
        assert_eq!(eval.accepted[0].verbs, ["create", "get", "list"]);
        assert!(eval.accepted[0].selector.is_none());
        // Fewer verbs → intersection plus a mismatch warning.
        let eval = evaluate(
            &exported,
            &[binding_claim(json!({"resource": "configmaps", "verbs": ["get"],
                "selector": {"matchLabels": {"app": "x"}}, "state": "Accepted"}))],
            &own,
        );
        assert_eq!(eval.accepted[0].verbs, ["get"]);
        assert_eq!(eval.valid.reason.as_deref(), Some("PermissionClaimsMismatch"));
        assert_eq!(
            eval.valid.message.as_deref(),
            Some(
                "1 permission claim(s) have mismatched verbs or selectors (showing first 1): configmaps. (verbs: accepted [get], exported [get list create])"
            )
        );
        assert!(selects(
            &eval.accepted[0],
            &json!({"metadata": {"labels": {"app": "x"}}})
        ));
        assert!(!selects(
            &eval.accepted[0],
            &json!({"metadata": {"labels": {"app": "y"}}})
        ));
        // A claim the export does not make (or on its own resource) is invalid.
        let eval = evaluate(
            &exported,
            &[binding_claim(
                json!({"group": "example.io", "resource": "widgets", "verbs": ["*"],
                "selector": {"matchAll": true}, "state": "Accepted"}),
            )],
            &own,
        );
        assert!(eval.applied.is_empty());
        assert_eq!(eval.valid.reason.as_deref(), Some("InvalidPermissionClaims"));
        assert_eq!(
            eval.valid.message.as_deref(),
            Some(
                "1 unexpected and/or invalid permission claims (showing first 1): unexpected/invalid claim for widgets.example.io (identity \"\")"
            )
        );
    }
}
