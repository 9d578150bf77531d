//! kcp's condition bookkeeping (`third_party/conditions/util/conditions`): a transition time that
//! only moves when the status changes, `Ready` listed first and the rest sorted by type, and the
//! `Ready` summary mirroring one source condition.

use faros_core::kcp::{Condition, ConditionStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

pub const READY: &str = "Ready";
pub const SEVERITY_ERROR: &str = "Error";
pub const SEVERITY_WARNING: &str = "Warning";
pub const SEVERITY_INFO: &str = "Info";

/// The parts of a condition a reconciler decides; the transition time is bookkeeping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    pub type_: &'static str,
    pub status: ConditionStatus,
    pub severity: Option<&'static str>,
    pub reason: Option<String>,
    pub message: Option<String>,
}

impl Mark {
    pub fn true_(type_: &'static str) -> Self {
        Self {
            type_,
            status: ConditionStatus::True,
            severity: None,
            reason: None,
            message: None,
        }
    }

    pub fn false_(type_: &'static str, reason: &str, severity: &'static str, message: impl Into<String>) -> Self {
        Self {
            type_,
            status: ConditionStatus::False,
            severity: Some(severity),
            reason: Some(reason.into()),
            message: Some(message.into()),
        }
    }
}

/// Seconds precision, like Kubernetes' `metav1.Time`.
pub fn now() -> Time {
    let ts = jiff::Timestamp::now();
    Time(jiff::Timestamp::from_second(ts.as_second()).unwrap_or(ts))
}

/// Sets a condition, keeping its transition time unless the status changes.
pub fn set(conditions: &mut Vec<Condition>, mark: Mark, now: &Time) {
    let new = Condition {
        type_: mark.type_.into(),
        status: mark.status,
        severity: mark.severity.map(String::from),
        last_transition_time: now.clone(),
        reason: mark.reason,
        message: mark.message,
    };
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        Some(existing) => {
            let ltt = if existing.status == new.status {
                existing.last_transition_time.clone()
            } else {
                new.last_transition_time.clone()
            };
            *existing = Condition {
                last_transition_time: ltt,
                ..new
            };
        }
        None => conditions.push(new),
    }
    conditions.sort_by(|a, b| (a.type_ != READY, &a.type_).cmp(&(b.type_ != READY, &b.type_)));
}

pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == ConditionStatus::True)
}

/// `Ready` as the copy of `source` (kcp's `SetSummary` with one condition).
pub fn summarize(conditions: &mut Vec<Condition>, source: &'static str, now: &Time) {
    let mark = match find(conditions, source) {
        Some(c) if c.status == ConditionStatus::True => Mark::true_(READY),
        Some(c) => Mark {
            type_: READY,
            status: c.status.clone(),
            severity: match c.severity.as_deref() {
                Some(SEVERITY_ERROR) => Some(SEVERITY_ERROR),
                Some(SEVERITY_WARNING) => Some(SEVERITY_WARNING),
                Some(SEVERITY_INFO) => Some(SEVERITY_INFO),
                _ => None,
            },
            reason: c.reason.clone(),
            message: c.message.clone(),
        },
        None => return,
    };
    set(conditions, mark, now);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Time {
        Time(jiff::Timestamp::from_second(s).unwrap_or_default())
    }

    #[test]
    fn transition_time_moves_only_with_status_and_ready_sorts_first() {
        let mut c = Vec::new();
        set(&mut c, Mark::false_("Zeta", "R", SEVERITY_INFO, "m"), &at(1));
        set(&mut c, Mark::true_("Alpha"), &at(1));
        set(&mut c, Mark::false_("Zeta", "R2", SEVERITY_ERROR, "m2"), &at(2));
        summarize(&mut c, "Zeta", &at(3));
        let types: Vec<&str> = c.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Ready", "Alpha", "Zeta"]);
        let zeta = find(&c, "Zeta").cloned().unwrap_or_else(|| unreachable!());
        assert_eq!(zeta.last_transition_time, at(1), "same status keeps the time");
        assert_eq!(zeta.reason.as_deref(), Some("R2"));
        let ready = find(&c, READY).cloned().unwrap_or_else(|| unreachable!());
        assert_eq!(ready.reason.as_deref(), Some("R2"));
        assert_eq!(ready.severity.as_deref(), Some("Error"));
        set(&mut c, Mark::true_("Zeta"), &at(4));
        summarize(&mut c, "Zeta", &at(4));
        assert_eq!(find(&c, "Zeta").map(|c| c.last_transition_time.clone()), Some(at(4)));
        assert!(is_true(&c, READY));
        assert_eq!(find(&c, READY).and_then(|c| c.reason.clone()), None);
    }
}
