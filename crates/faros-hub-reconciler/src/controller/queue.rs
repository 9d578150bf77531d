//! A keyed, delaying work queue with the guarantees a controller needs:
//! - a key is queued at most once (adding it again only moves its due time earlier);
//! - a key is never handed to two workers at once; if it is added while being worked on, it is handed
//!   out again after [`WorkQueue::done`];
//! - keys come out in due-time order.
//!
//! kube-runtime's `Controller` has these too, but keys its objects by (name, namespace), which merges
//! same-named objects of different kcp workspaces seen through a wildcard watch; this queue takes any
//! key, and the Provider controller uses (logical cluster, name).

use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

#[derive(Debug)]
struct State<K> {
    due: HashMap<K, Instant>,
    active: HashSet<K>,
    closed: bool,
}

/// See the module docs.
#[derive(Debug)]
pub struct WorkQueue<K> {
    state: Mutex<State<K>>,
    notify: Notify,
}

impl<K: Clone + Eq + Hash> Default for WorkQueue<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Clone + Eq + Hash> WorkQueue<K> {
    pub fn new() -> Self {
        Self {
            state: Mutex::new(State {
                due: HashMap::new(),
                active: HashSet::new(),
                closed: false,
            }),
            notify: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<K>> {
        // A panic while holding this lock leaves only plain maps behind; keep using them.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues `key` now.
    pub fn add(&self, key: K) {
        self.add_at(key, Instant::now());
    }

    /// Queues `key` after `delay`, unless it is already due earlier.
    pub fn add_after(&self, key: K, delay: Duration) {
        self.add_at(key, Instant::now() + delay);
    }

    fn add_at(&self, key: K, at: Instant) {
        {
            let mut state = self.lock();
            let due = state.due.entry(key).or_insert(at);
            if at < *due {
                *due = at;
            }
        }
        self.notify.notify_waiters();
    }

    /// Keys waiting (not counting those being worked on).
    pub fn len(&self) -> usize {
        self.lock().due.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops handing out keys; pending and future [`next`](Self::next) calls return `None`.
    pub fn close(&self) {
        self.lock().closed = true;
        self.notify.notify_waiters();
    }

    /// The next due key that no worker holds, marking it held. Waits as needed; `None` once closed.
    pub async fn next(&self) -> Option<K> {
        loop {
            let notified = self.notify.notified();
            let mut notified = std::pin::pin!(notified);
            // Register before looking, so an add between the look and the wait is not missed.
            notified.as_mut().enable();
            let wake_at = {
                let mut state = self.lock();
                if state.closed {
                    return None;
                }
                let now = Instant::now();
                let earliest = state
                    .due
                    .iter()
                    .filter(|(k, _)| !state.active.contains(*k))
                    .min_by_key(|(_, at)| **at)
                    .map(|(k, at)| (k.clone(), *at));
                match earliest {
                    Some((key, at)) if at <= now => {
                        state.due.remove(&key);
                        state.active.insert(key.clone());
                        return Some(key);
                    }
                    Some((_, at)) => Some(at),
                    None => None,
                }
            };
            match wake_at {
                Some(at) => {
                    tokio::select! {
                        _ = notified => {}
                        _ = tokio::time::sleep_until(at) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Releases a key handed out by [`next`](Self::next).
    pub fn done(&self, key: &K) {
        self.lock().active.remove(key);
        self.notify.notify_waiters();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test(start_paused = true)]
    async fn dedupes_and_orders_by_due_time() {
        let q = WorkQueue::new();
        q.add_after("b", Duration::from_secs(2));
        q.add_after("a", Duration::from_secs(1));
        q.add("c");
        q.add("c");
        assert_eq!(q.len(), 3);
        let start = Instant::now();
        assert_eq!(q.next().await, Some("c"));
        assert_eq!(q.next().await, Some("a"));
        assert_eq!(start.elapsed(), Duration::from_secs(1));
        assert_eq!(q.next().await, Some("b"));
        assert_eq!(start.elapsed(), Duration::from_secs(2));
        assert!(q.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn earlier_add_wins_later_add_does_not_delay() {
        let q = WorkQueue::new();
        q.add_after("a", Duration::from_secs(10));
        q.add_after("a", Duration::from_secs(1));
        q.add_after("a", Duration::from_secs(5));
        let start = Instant::now();
        assert_eq!(q.next().await, Some("a"));
        assert_eq!(start.elapsed(), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn active_key_is_not_handed_out_twice() {
        let q = Arc::new(WorkQueue::new());
        q.add("a");
        q.add("b");
        let first = q.next().await.unwrap();
        // Re-added while held: must wait for done().
        q.add(first);
        let second = q.next().await.unwrap();
        assert_ne!(first, second);
        let q2 = q.clone();
        let waiter = tokio::spawn(async move { q2.next().await });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        q.done(&first);
        assert_eq!(waiter.await.unwrap(), Some(first));
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_worker_wakes_on_add_and_close() {
        let q = Arc::new(WorkQueue::<u32>::new());
        let q2 = q.clone();
        let waiter = tokio::spawn(async move { q2.next().await });
        tokio::task::yield_now().await;
        q.add(7);
        assert_eq!(waiter.await.unwrap(), Some(7));
        let q3 = q.clone();
        let waiter = tokio::spawn(async move { q3.next().await });
        tokio::task::yield_now().await;
        q.close();
        assert_eq!(waiter.await.unwrap(), None);
    }
}
