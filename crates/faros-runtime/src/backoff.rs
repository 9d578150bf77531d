//! Per-key exponential retry delays and the default error policy.

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

/// The default error policy: retry after the per-key backoff delay.
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
    }
}
