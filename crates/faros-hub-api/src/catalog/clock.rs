//! The hub's notion of "now" for heartbeat freshness, injectable so tests can age a provider past
//! its TTL without waiting 90 seconds.

use std::fmt::Debug;
use std::sync::Mutex;
use std::time::Duration;

use jiff::Timestamp;

/// A source of wall-clock time.
pub trait Clock: Send + Sync + Debug + 'static {
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that moves only when told to (tests, simulations).
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<Timestamp>,
}

impl ManualClock {
    pub fn new(start: Timestamp) -> Self {
        Self { now: Mutex::new(start) }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(|p| p.into_inner());
        let span = jiff::SignedDuration::try_from(by).unwrap_or(jiff::SignedDuration::MAX);
        *now = now.checked_add(span).unwrap_or(Timestamp::MAX);
    }

    pub fn set(&self, to: Timestamp) {
        *self.now.lock().unwrap_or_else(|p| p.into_inner()) = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.now.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let start: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let clock = ManualClock::new(start);
        assert_eq!(clock.now(), start);
        clock.advance(Duration::from_secs(91));
        assert_eq!(clock.now(), "2026-01-01T00:01:31Z".parse::<Timestamp>().unwrap());
    }
}
