//! The bounded in-memory event history that watches resume from and old list pages are rebuilt from.
//!
//! Only the newest [`PARSED_EVENTS`] events stay parsed (what live watchers read, each once per
//! watcher). Older ones are kept as their JSON text, parsed again only for a watch resuming that far
//! back or a continued list undoing them: a parsed 1 KiB object takes about 6 KiB, and 10 000 parsed
//! events were a fifth of the embedded kcp's memory at 100 000 objects. The text is the stored value
//! itself (resourceVersion prefix and JSON) wherever the writer has it: an event's new state and the
//! state it replaced are shared with the memory image instead of being serialized into a copy.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::Value;

use super::key::{decode_value, encode_value};
use super::{Event, EventType, ObjectKey, StoreError};

/// How many of the newest events stay parsed.
const PARSED_EVENTS: usize = 1024;

/// One event of the history: always its text, and the parsed event while it is among the newest.
#[derive(Debug)]
pub(crate) struct Held {
    parsed: Option<Arc<Event>>,
    rv: u64,
    event_type: EventType,
    key: ObjectKey,
    /// Stored values (resourceVersion prefix, then JSON) of the event's object and of its `prev`.
    object: Arc<[u8]>,
    prev: Option<Arc<[u8]>>,
}

/// The stored values the writer already has for an event: its object's and its prev's, when they are
/// exactly those states (an event's object is the stored one unless a later op of the same batch
/// replaced it, or the event is a deletion).
#[derive(Debug, Default)]
pub(crate) struct StoredText {
    pub(crate) object: Option<Arc<[u8]>>,
    pub(crate) prev: Option<Arc<[u8]>>,
}

impl Held {
    /// Keeps `event` with its text: `stored` where given, else encoded (done by the publisher,
    /// outside the history's lock).
    pub(crate) fn new(event: Arc<Event>, stored: StoredText) -> Self {
        // The prefix of an encoded text is never read: parsing takes only the JSON after it.
        let text = |v: &Value| -> Arc<[u8]> { encode_value(0, v).unwrap_or_default().into() };
        Self {
            rv: event.rv,
            event_type: event.event_type,
            key: event.key.clone(),
            object: stored.object.unwrap_or_else(|| text(&event.object)),
            prev: match (stored.prev, event.prev.as_deref()) {
                (Some(stored), Some(_)) => Some(stored),
                (_, prev) => prev.map(text),
            },
            parsed: Some(event),
        }
    }

    pub(crate) fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// The event, parsed again from its text once it is no longer among the newest.
    pub(crate) fn event(&self) -> Result<Arc<Event>, StoreError> {
        if let Some(event) = &self.parsed {
            return Ok(event.clone());
        }
        Ok(Arc::new(Event {
            rv: self.rv,
            event_type: self.event_type,
            key: self.key.clone(),
            object: Arc::new(parse(&self.object)?),
            prev: self.prev.as_ref().map(parse).transpose()?.map(Arc::new),
        }))
    }

    /// The state before the event (`None` for `Added`).
    pub(crate) fn prev(&self) -> Result<Option<Arc<Value>>, StoreError> {
        match &self.parsed {
            Some(event) => Ok(event.prev.clone()),
            None => Ok(self.prev.as_ref().map(parse).transpose()?.map(Arc::new)),
        }
    }
}

fn parse(text: &Arc<[u8]>) -> Result<Value, StoreError> {
    decode_value(text)
        .map(|(_, value)| value)
        .map_err(|e| StoreError::Corrupt(format!("an event in the history: {e}")))
}

/// Events in RV order, at most `capacity` of them.
///
/// `floor` is the invariant that makes resumption safe: every event with `rv > floor` is still held.
/// It starts at the RV the store opened with (events before a restart are not persisted) and moves to the
/// RV of each evicted event.
#[derive(Debug)]
pub(crate) struct History {
    events: VecDeque<Held>,
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

    /// Appends an event; RVs must be pushed in increasing order. Returns the parsed event this ages
    /// out, if any, for the caller to free away from its hot path: freeing a parsed object is most
    /// of what aging costs, and the publisher is the store's one writer thread.
    #[must_use = "the aged event is returned to be freed elsewhere"]
    pub(crate) fn push(&mut self, event: Held) -> Option<Arc<Event>> {
        let mut evicted_parsed = None;
        if self.events.len() == self.capacity
            && let Some(evicted) = self.events.pop_front()
        {
            self.floor = evicted.rv;
            evicted_parsed = evicted.parsed;
        }
        self.events.push_back(event);
        // An event is either evicted while still parsed (capacity within PARSED_EVENTS) or aged
        // before its eviction (capacity beyond it), never both in one push.
        match self.events.len().checked_sub(PARSED_EVENTS + 1) {
            Some(aged) => self.events[aged].parsed.take().or(evicted_parsed),
            None => evicted_parsed,
        }
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
    pub(crate) fn after(&self, after: u64) -> impl Iterator<Item = &Held> {
        let start = self.events.partition_point(|e| e.rv <= after);
        self.events.range(start..)
    }

    /// Up to `max` events with `rv > cursor` whose key `keep` accepts, and the RV the cursor advances to.
    ///
    /// The cursor also advances past rejected events so a filtered watcher does not rescan them, but stops
    /// at the last accepted event when `max` is reached.
    pub(crate) fn collect(
        &self,
        cursor: u64,
        max: usize,
        keep: impl Fn(&ObjectKey) -> bool,
    ) -> Result<(Vec<Arc<Event>>, u64), StoreError> {
        self.check_covers(cursor)?;
        let mut out = Vec::new();
        let mut advanced = cursor;
        for held in self.after(cursor) {
            if keep(&held.key) {
                if out.len() == max {
                    break;
                }
                out.push(held.event()?);
            }
            advanced = held.rv;
        }
        Ok((out, advanced))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(rv: u64, name: &str) -> Held {
        Held::new(
            Arc::new(Event {
                rv,
                event_type: EventType::Added,
                key: ObjectKey::new("", "configmaps", "c", "ns", name),
                object: Arc::new(json!({})),
                prev: None,
            }),
            StoredText::default(),
        )
    }

    fn rvs(events: &[Arc<Event>]) -> Vec<u64> {
        events.iter().map(|e| e.rv).collect()
    }

    #[test]
    fn eviction_moves_the_floor() {
        let mut h = History::new(3, 10);
        assert_eq!((h.floor(), h.last_rv()), (10, 10));
        let evicted: Vec<Arc<Event>> = (11..=15).filter_map(|rv| h.push(event(rv, "a"))).collect();
        assert_eq!((h.floor(), h.last_rv()), (12, 15));
        assert_eq!(
            rvs(&evicted),
            vec![11, 12],
            "evicted while parsed: handed back to be freed"
        );
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
        let _ = h.push(event(1, "a"));
        let _ = h.push(event(2, "a"));
        assert_eq!((h.floor(), h.last_rv()), (1, 2));
    }

    #[test]
    fn collect_filters_limits_and_advances() {
        let mut h = History::new(10, 0);
        for (rv, name) in [(1, "a"), (2, "b"), (3, "a"), (4, "b"), (5, "a")] {
            let _ = h.push(event(rv, name));
        }
        let is_a = |k: &ObjectKey| k.name == "a";
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
        let (got, advanced) = h.collect(0, 10, |k: &ObjectKey| k.name == "z").unwrap();
        assert_eq!((rvs(&got), advanced), (vec![], 5));
    }

    #[test]
    fn older_events_are_kept_as_text_and_parsed_back_equal() {
        let count = PARSED_EVENTS as u64 + 5;
        let originals: Vec<Arc<Event>> = (1..=count)
            .map(|rv| {
                let modified = rv % 2 == 0;
                Arc::new(Event {
                    rv,
                    event_type: if modified {
                        EventType::Modified
                    } else {
                        EventType::Added
                    },
                    key: ObjectKey::new("", "configmaps", "c", "ns", format!("o{rv}")),
                    object: Arc::new(json!({"metadata": {"name": format!("o{rv}")}, "data": {"n": rv, "f": 1.5}})),
                    prev: modified.then(|| Arc::new(json!({"metadata": {"name": format!("o{rv}")}, "data": null}))),
                })
            })
            .collect();
        let mut h = History::new(count as usize, 0);
        let mut aged = Vec::new();
        for e in &originals {
            // Every third event comes with the writer's stored values, as the writer shares them.
            let stored = match e.rv % 3 {
                0 => StoredText {
                    object: Some(encode_value(e.rv, &e.object).unwrap().into()),
                    prev: e.prev.as_deref().map(|p| encode_value(e.rv - 1, p).unwrap().into()),
                },
                _ => StoredText::default(),
            };
            aged.extend(h.push(Held::new(e.clone(), stored)));
        }
        assert_eq!(rvs(&aged), vec![1, 2, 3, 4, 5], "each event is handed back as it ages");
        let parsed: Vec<bool> = h.after(0).map(|e| e.parsed.is_some()).collect();
        assert_eq!(parsed.iter().filter(|p| **p).count(), PARSED_EVENTS);
        assert!(!parsed[0] && parsed[parsed.len() - 1]);
        for (held, original) in h.after(0).zip(&originals) {
            assert_eq!(held.event().unwrap(), *original, "rv {}", original.rv);
            assert_eq!(held.prev().unwrap(), original.prev, "rv {}", original.rv);
        }
        let (got, _) = h.collect(0, 3, |k: &ObjectKey| k.name != "o2").unwrap();
        assert_eq!(rvs(&got), vec![1, 3, 4]);
    }
}
