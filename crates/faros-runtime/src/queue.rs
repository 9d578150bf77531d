//! [`WorkQueue`]: the per-key queue of a controller, without IO or clocks (the caller passes `now`).
//!
//! - a key is queued at most once; queueing it again only moves its due time earlier;
//! - keys come out in due-time order, and never while a worker holds them: a key queued while it is
//!   running waits for [`WorkQueue::finish`];
//! - a failure counts against the key, and the [`Retry`] for its next failure follows the
//!   [`Backoff`]; a success resets the count;
//! - [`WorkQueue::forget`] drops a deleted object's key, so nothing retries against it.

use std::collections::{BTreeMap, BTreeSet};

use tokio::time::Instant;

use crate::{Action, Backoff, Retry};

/// How a reconcile of a key ended, with the [`Action`] to take next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It succeeded and asked for this; the key's failure count is reset.
    Reconciled(Action),
    /// It failed and the error policy chose this; the key's failure count grows by one.
    Failed(Action),
}

/// See the module docs.
#[derive(Debug)]
pub struct WorkQueue<K> {
    /// When each waiting key is due; a running key here runs again after it finishes.
    due: BTreeMap<K, Instant>,
    running: BTreeSet<K>,
    failures: BTreeMap<K, u32>,
    backoff: Backoff,
}

impl<K: Ord + Clone> Default for WorkQueue<K> {
    fn default() -> Self {
        Self::new(Backoff::default())
    }
}

impl<K: Ord + Clone> WorkQueue<K> {
    pub fn new(backoff: Backoff) -> Self {
        Self {
            due: BTreeMap::new(),
            running: BTreeSet::new(),
            failures: BTreeMap::new(),
            backoff,
        }
    }

    /// Schedules `key` at `at`, unless it is already due sooner.
    pub fn enqueue(&mut self, key: K, at: Instant) {
        let slot = self.due.entry(key).or_insert(at);
        if at < *slot {
            *slot = at;
        }
    }

    /// Forgets `key` (the object is gone): no pending run, no failure count. A running key stays
    /// held until its [`finish`](Self::finish).
    pub fn forget(&mut self, key: &K) {
        self.due.remove(key);
        self.failures.remove(key);
    }

    fn waiting(&self) -> impl Iterator<Item = (&K, &Instant)> {
        self.due.iter().filter(|(k, _)| !self.running.contains(*k))
    }

    /// Takes the earliest key due at `now` that is not running, and marks it running.
    pub fn pop_due(&mut self, now: Instant) -> Option<K> {
        let key = self
            .waiting()
            .filter(|(_, at)| **at <= now)
            .min_by_key(|(_, at)| **at)
            .map(|(k, _)| k.clone())?;
        self.due.remove(&key);
        self.running.insert(key.clone());
        Some(key)
    }

    /// When the next key that is not running becomes due.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.waiting().map(|(_, at)| *at).min()
    }

    /// What a failure of `key` now would mean: its count and backoff delay.
    pub fn retry(&self, key: &K) -> Retry {
        let failures = self.failures(key).saturating_add(1);
        Retry {
            failures,
            delay: self.backoff.delay(failures),
        }
    }

    /// Records the end of a reconcile of `key` at `now`. `alive` says whether the object still
    /// exists; if not, the key is forgotten whatever the outcome.
    pub fn finish(&mut self, key: &K, outcome: Outcome, alive: bool, now: Instant) {
        self.running.remove(key);
        if !alive {
            self.forget(key);
            return;
        }
        let action = match outcome {
            Outcome::Reconciled(action) => {
                self.failures.remove(key);
                action
            }
            Outcome::Failed(action) => {
                let n = self.failures.entry(key.clone()).or_insert(0);
                *n = n.saturating_add(1);
                action
            }
        };
        if let Action::RequeueAfter(delay) = action {
            self.enqueue(key.clone(), now + delay);
        }
    }

    /// Consecutive failures of `key`.
    pub fn failures(&self, key: &K) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
    }

    /// Keys waiting to run (also those queued again while running).
    pub fn len(&self) -> usize {
        self.due.len()
    }

    pub fn is_empty(&self) -> bool {
        self.due.is_empty()
    }

    /// True when nothing waits and nothing runs.
    pub fn is_idle(&self) -> bool {
        self.due.is_empty() && self.running.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::time::Duration;

    /// A failure with the default error policy (retry after the backoff delay).
    fn fail<K: Ord + Clone>(q: &mut WorkQueue<K>, k: &K, now: Instant) {
        let retry = q.retry(k);
        q.finish(k, Outcome::Failed(Action::RequeueAfter(retry.delay)), true, now);
    }

    fn drain<K: Ord + Clone>(q: &mut WorkQueue<K>, now: Instant) -> Vec<K> {
        std::iter::from_fn(|| q.pop_due(now)).collect()
    }

    #[test]
    fn dedupes_and_orders_by_due_time() {
        let start = Instant::now();
        let mut q = WorkQueue::default();
        q.enqueue("b", start + Duration::from_secs(2));
        q.enqueue("a", start + Duration::from_secs(1));
        q.enqueue("c", start);
        q.enqueue("c", start);
        assert_eq!(q.len(), 3);
        assert_eq!(q.pop_due(start), Some("c"));
        assert_eq!(q.pop_due(start), None, "a and b are not due yet");
        assert_eq!(q.next_deadline(), Some(start + Duration::from_secs(1)));
        assert_eq!(q.pop_due(start + Duration::from_secs(1)), Some("a"));
        assert_eq!(q.next_deadline(), Some(start + Duration::from_secs(2)));
        assert_eq!(q.pop_due(start + Duration::from_secs(2)), Some("b"));
        assert!(q.is_empty());
    }

    #[test]
    fn earlier_add_wins_later_add_does_not_delay() {
        let start = Instant::now();
        let mut q = WorkQueue::default();
        for secs in [10, 1, 5] {
            q.enqueue("a", start + Duration::from_secs(secs));
        }
        assert_eq!(q.next_deadline(), Some(start + Duration::from_secs(1)));
        assert_eq!(q.pop_due(start + Duration::from_secs(1)), Some("a"));
    }

    #[test]
    fn active_key_is_not_handed_out_twice() {
        let t0 = Instant::now();
        let mut q = WorkQueue::default();
        q.enqueue("a", t0);
        q.enqueue("b", t0);
        let first = q.pop_due(t0).unwrap();
        // Re-added while held: must wait for finish().
        q.enqueue(first, t0);
        let second = q.pop_due(t0).unwrap();
        assert_ne!(first, second);
        assert_eq!(q.pop_due(t0), None);
        assert_eq!(q.next_deadline(), None, "a running key sets no deadline");
        q.finish(&first, Outcome::Reconciled(Action::AwaitChange), true, t0);
        assert_eq!(q.pop_due(t0), Some(first));
    }

    #[test]
    fn queue_dedupes_serializes_and_backs_off() {
        let t0 = Instant::now();
        let mut q = WorkQueue::default();
        let k = ("c1", "a");
        q.enqueue(k, t0);
        q.enqueue(k, t0);
        assert_eq!(q.pop_due(t0), Some(k));
        assert_eq!(q.pop_due(t0), None, "deduplicated");
        // An update while running is remembered, not run concurrently.
        q.enqueue(k, t0);
        assert_eq!(q.pop_due(t0), None);
        q.finish(&k, Outcome::Reconciled(Action::AwaitChange), true, t0);
        assert_eq!(q.pop_due(t0), Some(k), "dirty key runs again");
        // Failures back off 0.5 s, 1 s, 2 s …, success resets.
        let mut now = t0;
        for want in [500u64, 1000, 2000, 4000] {
            fail(&mut q, &k, now);
            let at = q.next_deadline().unwrap();
            assert_eq!((at - now).as_millis() as u64, want);
            assert_eq!(q.pop_due(now), None);
            now = at;
            assert_eq!(q.pop_due(now), Some(k));
        }
        assert_eq!(q.failures(&k), 4);
        q.finish(
            &k,
            Outcome::Reconciled(Action::RequeueAfter(Duration::from_secs(10))),
            true,
            now,
        );
        assert_eq!(q.failures(&k), 0);
        assert_eq!(q.next_deadline(), Some(now + Duration::from_secs(10)));
    }

    #[test]
    fn failures_count_per_key_and_reset_on_success() {
        let t0 = Instant::now();
        let mut q = WorkQueue::default();
        let (k, other) = ("q", "p");
        for want in [1, 2] {
            q.enqueue(k, t0);
            let k = q.pop_due(t0).unwrap();
            assert_eq!(q.retry(&k).failures, want);
            q.finish(&k, Outcome::Failed(Action::AwaitChange), true, t0);
            assert_eq!(q.failures(&k), want);
        }
        assert_eq!(q.failures(&other), 0, "per key");
        q.enqueue(k, t0);
        q.pop_due(t0);
        q.finish(&k, Outcome::Reconciled(Action::AwaitChange), true, t0);
        assert_eq!(q.failures(&k), 0);
        assert_eq!(q.retry(&k).failures, 1);
        assert!(q.is_idle(), "AwaitChange queues nothing, even after a failure");
    }

    #[test]
    fn error_policy_may_retry_sooner_than_the_backoff() {
        let t0 = Instant::now();
        let mut q = WorkQueue::default();
        q.enqueue("k", t0);
        q.pop_due(t0);
        let soon = Duration::from_millis(50);
        q.finish(&"k", Outcome::Failed(Action::RequeueAfter(soon)), true, t0);
        assert_eq!(q.next_deadline(), Some(t0 + soon));
        assert_eq!(q.failures(&"k"), 1);
    }

    #[test]
    fn deleted_objects_leave_the_queue() {
        let t0 = Instant::now();
        let mut q = WorkQueue::default();
        let k = ("c1", "a");
        q.enqueue(k, t0);
        let k = q.pop_due(t0).unwrap();
        q.finish(&k, Outcome::Failed(Action::RequeueAfter(q.retry(&k).delay)), false, t0);
        assert!(q.is_idle(), "a failing object that is gone is not retried");
        assert_eq!(q.failures(&k), 0);
    }

    #[test]
    fn forget_drops_a_pending_retry_and_its_count() {
        let t0 = Instant::now();
        let mut q = WorkQueue::default();
        q.enqueue("a", t0);
        q.enqueue("b", t0);
        let a = q.pop_due(t0).unwrap();
        fail(&mut q, &a, t0);
        q.forget(&a);
        assert_eq!(q.failures(&a), 0);
        assert_eq!(drain(&mut q, t0 + Duration::from_secs(60)), vec!["b"]);
    }

    #[test]
    fn backoff_is_configurable() {
        let t0 = Instant::now();
        let mut q = WorkQueue::new(Backoff {
            min: Duration::from_secs(1),
            max: Duration::from_secs(3),
        });
        let mut delays = Vec::new();
        for _ in 0..4 {
            q.enqueue("k", t0);
            q.pop_due(t0);
            fail(&mut q, &"k", t0);
            delays.push(q.next_deadline().unwrap() - t0);
        }
        assert_eq!(delays, [1, 2, 3, 3].map(Duration::from_secs).to_vec());
    }
}
