//! Publishing committed events to the history and streaming them to watchers.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures::Stream;

use super::history::{Held, History, StoredText};
use super::{Event, ObjectKey, StoreError};

/// Events a watcher takes from the history per lock; bounds how far a slow watcher can hide its lag in a
/// private buffer instead of being cut off with `TooOld`.
const WATCH_BATCH: usize = 256;

/// Which events a watch receives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchFilter {
    pub group: String,
    pub resource: String,
    /// `None` = every logical cluster (kcp wildcard).
    pub cluster: Option<String>,
    /// `None` = every namespace.
    pub namespace: Option<String>,
}

impl WatchFilter {
    pub fn matches(&self, key: &ObjectKey) -> bool {
        key.group == self.group
            && key.resource == self.resource
            && self.cluster.as_ref().is_none_or(|c| *c == key.cluster)
            && self.namespace.as_ref().is_none_or(|n| *n == key.namespace)
    }
}

/// History plus the wakers of idle watchers, under one lock so a watcher cannot miss a publish between
/// finding nothing and registering.
pub(crate) struct Hub {
    state: Mutex<HubState>,
    /// Signalled after every publish; continued lists wait on it for the history to catch up with the
    /// snapshot they read.
    published: Condvar,
}

pub(crate) struct HubState {
    pub(crate) history: History,
    wakers: HashMap<u64, Waker>,
    next_watcher: u64,
}

impl Hub {
    pub(crate) fn new(history: History) -> Self {
        Self {
            state: Mutex::new(HubState {
                history,
                wakers: HashMap::new(),
                next_watcher: 0,
            }),
            published: Condvar::new(),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, HubState> {
        // A panic while holding this lock cannot leave the history half-updated (push is one step).
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends committed events (in RV order), with the stored values the writer has for them, and
    /// wakes every idle watcher. Returns the parsed events that aged out of the history, to be freed
    /// by the caller (not under the lock, and not necessarily on its thread).
    pub(crate) fn publish(&self, events: Vec<(Arc<Event>, StoredText)>) -> Vec<Arc<Event>> {
        if events.is_empty() {
            return Vec::new();
        }
        let held: Vec<Held> = events
            .into_iter()
            .map(|(event, stored)| Held::new(event, stored))
            .collect();
        let mut aged = Vec::new();
        let wakers = {
            let mut state = self.lock();
            for event in held {
                aged.extend(state.history.push(event));
            }
            std::mem::take(&mut state.wakers)
        };
        self.published.notify_all();
        for waker in wakers.into_values() {
            waker.wake();
        }
        aged
    }

    /// Locks the history once it holds every event up to `rv`.
    ///
    /// The writer makes a commit visible before it publishes the commit's events, so a reader whose
    /// snapshot is at `rv` may briefly be ahead of the history.
    pub(crate) fn lock_caught_up(&self, rv: u64) -> Result<MutexGuard<'_, HubState>, StoreError> {
        let guard = self.lock();
        let (guard, timeout) = self
            .published
            .wait_timeout_while(guard, Duration::from_secs(10), |s| s.history.last_rv() < rv)
            .unwrap_or_else(|p| p.into_inner());
        if timeout.timed_out() && guard.history.last_rv() < rv {
            return Err(StoreError::Storage(format!(
                "event history stuck before resourceVersion {rv}"
            )));
        }
        Ok(guard)
    }

    pub(crate) fn watch(self: &Arc<Self>, from_rv: u64, filter: WatchFilter) -> Result<WatchStream, StoreError> {
        let id = {
            let mut state = self.lock();
            state.history.check_covers(from_rv)?;
            state.next_watcher += 1;
            state.next_watcher
        };
        Ok(WatchStream {
            hub: self.clone(),
            id,
            cursor: from_rv,
            filter,
            buffer: VecDeque::new(),
            done: false,
        })
    }
}

/// Events with `rv > from_rv` matching a filter, in RV order, live.
///
/// Ends after yielding `TooOld` when the history evicted events it had not yet taken; never skips.
pub struct WatchStream {
    hub: Arc<Hub>,
    id: u64,
    /// Every event with `rv <= cursor` has been taken from the history (into `buffer` or skipped).
    cursor: u64,
    filter: WatchFilter,
    buffer: VecDeque<Arc<Event>>,
    done: bool,
}

impl WatchStream {
    /// An RV a BOOKMARK may carry: every matching event up to it has been yielded.
    pub fn bookmark_rv(&self) -> u64 {
        self.buffer.front().map_or(self.cursor, |e| e.rv - 1)
    }
}

impl Stream for WatchStream {
    type Item = Result<Arc<Event>, StoreError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(event) = this.buffer.pop_front() {
            return Poll::Ready(Some(Ok(event)));
        }
        if this.done {
            return Poll::Ready(None);
        }
        let mut state = this.hub.lock();
        let filter = &this.filter;
        match state.history.collect(this.cursor, WATCH_BATCH, |k| filter.matches(k)) {
            Err(too_old) => {
                state.wakers.remove(&this.id);
                this.done = true;
                Poll::Ready(Some(Err(too_old)))
            }
            Ok((events, cursor)) => {
                this.cursor = cursor;
                this.buffer.extend(events);
                match this.buffer.pop_front() {
                    Some(event) => Poll::Ready(Some(Ok(event))),
                    None => {
                        state.wakers.insert(this.id, cx.waker().clone());
                        Poll::Pending
                    }
                }
            }
        }
    }
}

impl Drop for WatchStream {
    fn drop(&mut self) {
        self.hub.lock().wakers.remove(&self.id);
    }
}

impl std::fmt::Debug for WatchStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchStream")
            .field("cursor", &self.cursor)
            .field("filter", &self.filter)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_matches_table() {
        let key = ObjectKey::new("g", "r", "c1", "ns", "n");
        let f = |c: Option<&str>, ns: Option<&str>| WatchFilter {
            group: "g".into(),
            resource: "r".into(),
            cluster: c.map(Into::into),
            namespace: ns.map(Into::into),
        };
        let cases = [
            (f(None, None), true),
            (f(Some("c1"), None), true),
            (f(Some("c2"), None), false),
            (f(Some("c1"), Some("ns")), true),
            (f(None, Some("ns")), true),
            (f(None, Some("other")), false),
            (
                WatchFilter {
                    resource: "x".into(),
                    ..f(None, None)
                },
                false,
            ),
            (
                WatchFilter {
                    group: "".into(),
                    ..f(None, None)
                },
                false,
            ),
        ];
        for (filter, want) in cases {
            assert_eq!(filter.matches(&key), want, "{filter:?}");
        }
    }
}
