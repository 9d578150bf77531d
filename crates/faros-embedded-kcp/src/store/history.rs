//! The bounded in-memory event history that watches resume from and old list pages are rebuilt from.

use std::collections::VecDeque;
use std::sync::Arc;

use super::{Event, StoreError};

/// Events in RV order, at most `capacity` of them.
///
/// `floor` is the invariant that makes resumption safe: every event with `rv > floor` is still held.
/// It starts at the RV the store opened with (events before a restart are not persisted) and moves to the
/// RV of each evicted event.
#[derive(Debug)]
pub(crate) struct History {
    events: VecDeque<Arc<Event>>,
    capacity: usize,
    floor: u64,
}

impl History {
    pub(crate) fn new(capacity: usize, floor: u64) -> Self {
        // A zero capacity would leave no window between publishing and a watcher reading: keep one.
        let capacity = capacity.max(1);
        Self {
            events: VecDeque::with_capacity(capacity.min(4096)),
            capacity,
            floor,
        }
    }

    /// Appends an event; RVs must be pushed in increasing order.
    pub(crate) fn push(&mut self, event: Arc<Event>) {
        if self.events.len() == self.capacity
            && let Some(evicted) = self.events.pop_front()
        {
            self.floor = evicted.rv;
        }
        self.events.push_back(event);
    }

    /// The smallest RV a watch or a continued list can start from.
    pub(crate) fn floor(&self) -> u64 {
        self.floor
    }

    /// The RV of the newest event held, or the floor when there is none.
    pub(crate) fn last_rv(&self) -> u64 {
        self.events.back().map_or(self.floor, |e| e.rv)
    }

    /// Fails with `TooOld` when events after `rv` have already been evicted.
    pub(crate) fn check_covers(&self, rv: u64) -> Result<(), StoreError> {
        if rv < self.floor {
            Err(StoreError::TooOld {
                requested: rv,
                oldest: self.floor,
            })
        } else {
            Ok(())
        }
    }

    /// The held events with `rv > after`, oldest first.
    pub(crate) fn after(&self, after: u64) -> impl Iterator<Item = &Arc<Event>> {
        let start = self.events.partition_point(|e| e.rv <= after);
        self.events.range(start..)
    }

    /// Up to `max` events with `rv > cursor` that `keep` accepts, and the RV the cursor advances to.
    ///
    /// The cursor also advances past rejected events so a filtered watcher does not rescan them, but stops
    /// at the last accepted event when `max` is reached.
    pub(crate) fn collect(
        &self,
        cursor: u64,
        max: usize,
        keep: impl Fn(&Event) -> bool,
    ) -> Result<(Vec<Arc<Event>>, u64), StoreError> {
        self.check_covers(cursor)?;
        let mut out = Vec::new();
        let mut advanced = cursor;
        for event in self.after(cursor) {
            if keep(event) {
                if out.len() == max {
                    break;
                }
                out.push(event.clone());
            }
            advanced = event.rv;
        }
        Ok((out, advanced))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::{EventType, ObjectKey};

    fn event(rv: u64, name: &str) -> Arc<Event> {
        Arc::new(Event {
            rv,
            event_type: EventType::Added,
            key: ObjectKey::new("", "configmaps", "c", "ns", name),
            object: Arc::new(json!({})),
            prev: None,
        })
    }

    fn rvs(events: &[Arc<Event>]) -> Vec<u64> {
        events.iter().map(|e| e.rv).collect()
    }

    #[test]
    fn eviction_moves_the_floor() {
        let mut h = History::new(3, 10);
        assert_eq!((h.floor(), h.last_rv()), (10, 10));
        for rv in 11..=15 {
            h.push(event(rv, "a"));
        }
        assert_eq!((h.floor(), h.last_rv()), (12, 15));
        assert_eq!(h.after(0).map(|e| e.rv).collect::<Vec<_>>(), vec![13, 14, 15]);
        assert_eq!(h.after(13).map(|e| e.rv).collect::<Vec<_>>(), vec![14, 15]);
        assert!(h.check_covers(12).is_ok());
        assert!(matches!(
            h.check_covers(11),
            Err(StoreError::TooOld {
                requested: 11,
                oldest: 12
            })
        ));
    }

    #[test]
    fn zero_capacity_keeps_one_event() {
        let mut h = History::new(0, 0);
        h.push(event(1, "a"));
        h.push(event(2, "a"));
        assert_eq!((h.floor(), h.last_rv()), (1, 2));
    }

    #[test]
    fn collect_filters_limits_and_advances() {
        let mut h = History::new(10, 0);
        for (rv, name) in [(1, "a"), (2, "b"), (3, "a"), (4, "b"), (5, "a")] {
            h.push(event(rv, name));
        }
        let is_a = |e: &Event| e.key.name == "a";
        let cases = [
            // (cursor, max, expected rvs, expected cursor)
            (0, 10, vec![1, 3, 5], 5),
            (0, 2, vec![1, 3], 4),
            (3, 10, vec![5], 5),
            (5, 10, vec![], 5),
        ];
        for (cursor, max, want, want_cursor) in cases {
            let (got, advanced) = h.collect(cursor, max, is_a).unwrap();
            assert_eq!((rvs(&got), advanced), (want, want_cursor), "cursor {cursor} max {max}");
        }
        let (got, advanced) = h.collect(0, 10, |e: &Event| e.key.name == "z").unwrap();
        assert_eq!((rvs(&got), advanced), (vec![], 5));
    }
}
