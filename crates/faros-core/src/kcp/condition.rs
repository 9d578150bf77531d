//! kcp's condition type (SDK `third_party/conditions/apis/conditions/v1alpha1`).
//!
//! It differs from `metav1.Condition`: there is no `observedGeneration`, there is a `severity`
//! (`Error`, `Warning`, `Info`, only when the status is `False`), `lastTransitionTime` is required,
//! and `reason`/`message` may be absent.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

open_string_enum! {
    /// A condition's `status`.
    ConditionStatus {
        True => "True",
        False => "False",
        Unknown => "Unknown",
    }
}

/// One kcp condition, as found in `status.conditions` of every kcp kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: ConditionStatus,
    /// `Error`, `Warning` or `Info`; only set when `status` is `False`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
    pub last_transition_time: Time,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Condition {
    /// A condition of `type_` with `status`, transitioned at `at`.
    pub fn new(type_: impl Into<String>, status: ConditionStatus, at: Time) -> Self {
        Self {
            type_: type_.into(),
            status,
            severity: None,
            last_transition_time: at,
            reason: None,
            message: None,
        }
    }

    pub fn is_true(&self) -> bool {
        self.status == ConditionStatus::True
    }

    /// Finds the condition of `type_` in a (possibly absent) condition list.
    pub fn find<'a>(conditions: Option<&'a [Condition]>, type_: &str) -> Option<&'a Condition> {
        conditions?.iter().find(|c| c.type_ == type_)
    }

    /// True if the list has a condition of `type_` with status `True`.
    pub fn is_type_true(conditions: Option<&[Condition]>, type_: &str) -> bool {
        Self::find(conditions, type_).is_some_and(Condition::is_true)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::kcp::testutil::roundtrip;
    use serde_json::json;

    #[test]
    fn roundtrips_with_exact_field_names() {
        let full = json!({"type":"InitialBindingCompleted","status":"False","severity":"Error",
            "lastTransitionTime":"2026-01-01T00:00:00Z","reason":"NamingConflicts","message":"conflict on widgets"});
        let c: Condition = roundtrip(&full);
        assert_eq!(c.type_, "InitialBindingCompleted");
        assert_eq!(c.status, ConditionStatus::False);
        assert_eq!(c.severity.as_deref(), Some("Error"));
        assert_eq!(c.reason.as_deref(), Some("NamingConflicts"));

        let minimal = json!({"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"});
        let c: Condition = roundtrip(&minimal);
        assert!(c.is_true());
    }

    #[test]
    fn last_transition_time_is_required() {
        let err = serde_json::from_value::<Condition>(json!({"type":"Ready","status":"True"})).unwrap_err();
        assert!(err.to_string().contains("lastTransitionTime"), "{err}");
    }

    #[test]
    fn unknown_status_is_kept() {
        let c: Condition = roundtrip(&json!({"type":"X","status":"Maybe","lastTransitionTime":"2026-01-01T00:00:00Z"}));
        assert_eq!(c.status, ConditionStatus::Other("Maybe".into()));
    }

    #[test]
    fn find_helpers() {
        let list: Vec<Condition> = serde_json::from_value(json!([
            {"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"},
            {"type":"BindingUpToDate","status":"False","lastTransitionTime":"2026-01-01T00:00:00Z"}
        ]))
        .unwrap();
        assert!(Condition::is_type_true(Some(&list), "Ready"));
        assert!(!Condition::is_type_true(Some(&list), "BindingUpToDate"));
        assert!(!Condition::is_type_true(Some(&list), "Missing"));
        assert!(!Condition::is_type_true(None, "Ready"));
        assert_eq!(
            Condition::find(Some(&list), "BindingUpToDate").map(|c| &c.status),
            Some(&ConditionStatus::False)
        );
    }
}
