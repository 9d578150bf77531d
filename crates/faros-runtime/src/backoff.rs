//! Per-key exponential retry delays, the error policy's decision ([`Decision`]: what next, and
//! whether the failure was expected) and the default error policy.

use std::time::Duration;

use crate::Action;

/// First retry delay after a failed reconcile.
pub const RETRY_MIN: Duration = Duration::from_millis(500);
/// Longest retry delay.
pub const RETRY_MAX: Duration = Duration::from_secs(60);

/// Exponential backoff: `min` after the first failure, doubling per consecutive failure, capped at
/// `max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    pub min: Duration,
    pub max: Duration,
}

impl Default for Backoff {
    /// [`RETRY_MIN`] doubling to [`RETRY_MAX`].
    fn default() -> Self {
        Self {
            min: RETRY_MIN,
            max: RETRY_MAX,
        }
    }
}

impl Backoff {
    /// The delay after `failures` consecutive failures (1-based; 0 counts as 1).
    pub fn delay(&self, failures: u32) -> Duration {
        // 2^16 × any sensible `min` is far past any sensible `max`; the cap keeps the shift in range.
        let exp = failures.saturating_sub(1).min(16);
        self.min.saturating_mul(1u32 << exp).min(self.max)
    }
}

/// What the error policy knows about a failed reconcile besides the error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retry {
    /// Consecutive failures of the key, this one included.
    pub failures: u32,
    /// The backoff delay for that many failures.
    pub delay: Duration,
}

/// How many consecutive failures of a key an expected failure stays quiet (logged at debug).
///
/// Why three: an expected failure heals on the next attempt (a 409 from a stale copy is retried from
/// the newer copy, already on its way), or on the one after when another write raced in. A third in a
/// row means it is not healing (a second writer keeps changing the object, or the watch stopped
/// delivering and the cache stays stale): from the fourth on it is a warning, like any failure.
pub const QUIET_FAILURES: u32 = 3;

/// The error policy's decision about a failed reconcile: what next, and whether the failure was
/// expected. A policy may return a bare [`Action`], which is an unexpected failure.
///
/// The runtime logs an unexpected failure as a warning. An expected one is self-healing (the policy
/// retries it and the retry succeeds), so a warning would only teach operators to ignore warnings:
/// it is logged at debug, until it repeats more than [`QUIET_FAILURES`] times in a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub action: Action,
    pub expected: bool,
}

impl Decision {
    /// A failure that heals by itself when retried as `action` says.
    pub fn expected(action: Action) -> Self {
        Self { action, expected: true }
    }

    /// A real failure: logged as a warning.
    pub fn unexpected(action: Action) -> Self {
        Self {
            action,
            expected: false,
        }
    }

    /// Whether the failure is logged as a warning (else at debug), `failures` being the key's
    /// consecutive failures, this one included ([`Retry::failures`]).
    pub fn warns(&self, failures: u32) -> bool {
        !self.expected || failures > QUIET_FAILURES
    }
}

impl From<Action> for Decision {
    fn from(action: Action) -> Self {
        Self::unexpected(action)
    }
}

/// The default error policy: retry after the per-key backoff delay (every failure unexpected).
pub fn default_error_policy<K: ?Sized, E: ?Sized>(_key: &K, _error: &E, retry: Retry) -> Action {
    Action::RequeueAfter(retry.delay)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn delay_doubles_from_min_and_caps_at_max() {
        for (failures, ms) in [
            (0, 500),
            (1, 500),
            (2, 1000),
            (3, 2000),
            (4, 4000),
            (7, 32_000),
            (8, 60_000),
            (100, 60_000),
            (u32::MAX, 60_000),
        ] {
            assert_eq!(
                Backoff::default().delay(failures),
                Duration::from_millis(ms),
                "{failures}"
            );
        }
    }

    #[test]
    fn custom_bounds() {
        let b = Backoff {
            min: Duration::from_millis(250),
            max: Duration::from_secs(5),
        };
        for (failures, ms) in [(1, 250), (2, 500), (5, 4000), (6, 5000)] {
            assert_eq!(b.delay(failures), Duration::from_millis(ms), "{failures}");
        }
    }

    #[test]
    fn default_policy_uses_the_backoff_delay() {
        let retry = Retry {
            failures: 3,
            delay: Duration::from_secs(2),
        };
        assert_eq!(
            default_error_policy("k", "boom", retry),
            Action::RequeueAfter(Duration::from_secs(2))
        );
        assert_eq!(
            Decision::from(default_error_policy("k", "boom", retry)),
            Decision::unexpected(Action::RequeueAfter(Duration::from_secs(2))),
            "a bare Action is an unexpected failure"
        );
    }

    /// Unexpected failures always warn; expected ones are quiet for [`QUIET_FAILURES`] in a row.
    #[test]
    fn warns_table() {
        let retry = Action::RequeueAfter(Duration::from_millis(50));
        for (case, decision, failures, want) in [
            ("unexpected, first", Decision::unexpected(retry), 1, true),
            ("unexpected, many", Decision::unexpected(retry), 10, true),
            ("a bare Action", Decision::from(retry), 1, true),
            ("expected, first", Decision::expected(retry), 1, false),
            (
                "expected, third in a row",
                Decision::expected(retry),
                QUIET_FAILURES,
                false,
            ),
            (
                "expected, fourth in a row",
                Decision::expected(retry),
                QUIET_FAILURES + 1,
                true,
            ),
            ("expected, forever", Decision::expected(retry), u32::MAX, true),
            ("expected, no retry", Decision::expected(Action::AwaitChange), 1, false),
            // 0 does not occur (the failure counts itself) and is treated as the first.
            ("expected, 0", Decision::expected(retry), 0, false),
        ] {
            assert_eq!(decision.warns(failures), want, "{case}");
        }
    }
}
