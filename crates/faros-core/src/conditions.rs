//! Status-condition helpers with Kubernetes' transition semantics.
//!
//! `lastTransitionTime` must move only when a condition's *status* changes; reason, message and
//! observedGeneration are refreshed in place. Getting this wrong makes every reconcile write a new
//! timestamp, which re-triggers watchers and, with several hub replicas, becomes a write storm. So
//! [`set`] also reports whether anything changed, letting callers skip no-op status writes.
//!
//! The helpers are generic over [`ConditionLike`] so kcp's own condition type (which has `severity`
//! and no `observedGeneration`) can share them; `metav1.Condition` implements it here.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// The three values of a condition's `status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

impl ConditionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }
}

impl From<bool> for ConditionStatus {
    fn from(b: bool) -> Self {
        if b { Self::True } else { Self::False }
    }
}

impl std::fmt::Display for ConditionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the helpers need from a condition type.
pub trait ConditionLike {
    fn condition_type(&self) -> &str;
    fn condition_status(&self) -> &str;
    fn last_transition_time(&self) -> &Time;
    fn set_last_transition_time(&mut self, time: Time);
}

impl ConditionLike for Condition {
    fn condition_type(&self) -> &str {
        &self.type_
    }
    fn condition_status(&self) -> &str {
        &self.status
    }
    fn last_transition_time(&self) -> &Time {
        &self.last_transition_time
    }
    fn set_last_transition_time(&mut self, time: Time) {
        self.last_transition_time = time;
    }
}

/// A `metav1.Condition` stamped with `now` as its (candidate) transition time.
pub fn new_condition(
    type_: &str,
    status: ConditionStatus,
    reason: &str,
    message: impl Into<String>,
    observed_generation: Option<i64>,
    now: Timestamp,
) -> Condition {
    Condition {
        type_: type_.to_string(),
        status: status.as_str().to_string(),
        reason: reason.to_string(),
        message: message.into(),
        observed_generation,
        last_transition_time: Time(now),
    }
}

/// Inserts or replaces the condition of `new`'s type. When the status is unchanged the existing
/// `lastTransitionTime` is kept and `new`'s is discarded. Returns whether `conditions` changed.
/// New types are appended, existing ones keep their position, so output order is stable.
pub fn set<C: ConditionLike + PartialEq>(conditions: &mut Vec<C>, mut new: C) -> bool {
    let Some(existing) = conditions
        .iter_mut()
        .find(|c| c.condition_type() == new.condition_type())
    else {
        conditions.push(new);
        return true;
    };
    if existing.condition_status() == new.condition_status() {
        new.set_last_transition_time(existing.last_transition_time().clone());
    }
    if *existing == new {
        return false;
    }
    *existing = new;
    true
}

/// The condition of type `type_`, if present.
pub fn get<'a, C: ConditionLike>(conditions: &'a [C], type_: &str) -> Option<&'a C> {
    conditions.iter().find(|c| c.condition_type() == type_)
}

/// Whether the condition of type `type_` has status `status`; absent counts as `Unknown`.
pub fn has_status<C: ConditionLike>(conditions: &[C], type_: &str, status: ConditionStatus) -> bool {
    get(conditions, type_).map_or(ConditionStatus::Unknown.as_str(), |c| c.condition_status()) == status.as_str()
}

/// Whether the condition of type `type_` is present and `True`.
pub fn is_true<C: ConditionLike>(conditions: &[C], type_: &str) -> bool {
    has_status(conditions, type_, ConditionStatus::True)
}

/// Whether the condition of type `type_` is present and `False`.
pub fn is_false<C: ConditionLike>(conditions: &[C], type_: &str) -> bool {
    has_status(conditions, type_, ConditionStatus::False)
}

/// Removes the condition of type `type_`; returns whether one was removed.
pub fn remove<C: ConditionLike>(conditions: &mut Vec<C>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.condition_type() != type_);
    conditions.len() != before
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use ConditionStatus::{False, True, Unknown};
    use pretty_assertions::assert_eq;

    fn ts(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap()
    }

    fn cond(type_: &str, status: ConditionStatus, reason: &str, msg: &str, generation: i64, at: i64) -> Condition {
        new_condition(type_, status, reason, msg, Some(generation), ts(at))
    }

    #[test]
    fn set_table() {
        struct Case {
            name: &'static str,
            before: Vec<Condition>,
            new: Condition,
            changed: bool,
            after: Vec<Condition>,
        }
        let ready_t0 = cond("Ready", True, "Provisioned", "ok", 1, 100);
        let other = cond("Synced", True, "Done", "", 1, 50);
        let cases = [
            Case {
                name: "append to empty",
                before: vec![],
                new: ready_t0.clone(),
                changed: true,
                after: vec![ready_t0.clone()],
            },
            Case {
                name: "identical except time is a no-op and keeps the old time",
                before: vec![ready_t0.clone()],
                new: cond("Ready", True, "Provisioned", "ok", 1, 200),
                changed: false,
                after: vec![ready_t0.clone()],
            },
            Case {
                name: "same status, new reason/message/generation: updated, time kept",
                before: vec![ready_t0.clone()],
                new: cond("Ready", True, "Other", "still ok", 2, 200),
                changed: true,
                after: vec![cond("Ready", True, "Other", "still ok", 2, 100)],
            },
            Case {
                name: "status flip moves the time",
                before: vec![ready_t0.clone()],
                new: cond("Ready", False, "WorkspaceError", "boom", 1, 200),
                changed: true,
                after: vec![cond("Ready", False, "WorkspaceError", "boom", 1, 200)],
            },
            Case {
                name: "other types untouched and order kept",
                before: vec![ready_t0.clone(), other.clone()],
                new: cond("Ready", Unknown, "Pending", "", 1, 300),
                changed: true,
                after: vec![cond("Ready", Unknown, "Pending", "", 1, 300), other.clone()],
            },
            Case {
                name: "new type appended after existing",
                before: vec![other.clone()],
                new: ready_t0.clone(),
                changed: true,
                after: vec![other.clone(), ready_t0.clone()],
            },
        ];
        for c in cases {
            let mut conds = c.before;
            assert_eq!(set(&mut conds, c.new), c.changed, "{}", c.name);
            assert_eq!(conds, c.after, "{}", c.name);
        }
    }

    #[test]
    fn queries() {
        let conds = vec![cond("Ready", True, "R", "", 1, 1), cond("Synced", False, "R", "", 1, 1)];
        for (type_, t, f, unknown) in [
            ("Ready", true, false, false),
            ("Synced", false, true, false),
            ("Missing", false, false, true),
        ] {
            assert_eq!(is_true(&conds, type_), t, "{type_}");
            assert_eq!(is_false(&conds, type_), f, "{type_}");
            assert_eq!(has_status(&conds, type_, Unknown), unknown, "{type_}");
        }
        assert_eq!(get(&conds, "Synced").map(|c| c.status.as_str()), Some("False"));
        assert!(get(&conds, "Missing").is_none());
    }

    #[test]
    fn remove_reports_change() {
        let mut conds = vec![cond("Ready", True, "R", "", 1, 1)];
        assert!(!remove(&mut conds, "Synced"));
        assert!(remove(&mut conds, "Ready"));
        assert!(conds.is_empty());
    }

    #[test]
    fn status_from_bool_and_display() {
        assert_eq!(ConditionStatus::from(true), True);
        assert_eq!(ConditionStatus::from(false).to_string(), "False");
    }

    #[test]
    fn serializes_as_metav1() {
        let c = cond("Ready", True, "Provisioned", "ok", 3, 1_767_225_600);
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            serde_json::json!({
                "lastTransitionTime": "2026-01-01T00:00:00Z",
                "message": "ok",
                "observedGeneration": 3,
                "reason": "Provisioned",
                "status": "True",
                "type": "Ready"
            })
        );
    }
}
