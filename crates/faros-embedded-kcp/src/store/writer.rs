//! The single writer: plans each `write` call against the current state, batches concurrent calls into
//! one durable redb transaction (group commit), then publishes events and acknowledges the callers.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc;

use redb::Durability;
use serde_json::Value;
use tokio::sync::oneshot;

use super::history::StoredText;
use super::image::Writes;
use super::key::{decode_value, encode_value_into, set_resource_version, value_rv, with_resource_version};
use super::{Committed, Event, EventType, META, OBJECTS, ObjectKey, RV_KEY, Shared, StoreError};

/// Upper bound of calls folded into one transaction, so one commit's latency stays bounded.
const MAX_BATCH: usize = 1024;

/// One mutation of a `write` call.
#[derive(Clone, Debug, PartialEq)]
pub enum WriteOp {
    /// Fails with `AlreadyExists` when the key holds an object.
    Create { key: ObjectKey, object: Value },
    /// Fails with `NotFound` when absent, `Conflict` when `expected_rv` is given and differs.
    Update {
        key: ObjectKey,
        object: Value,
        expected_rv: Option<u64>,
    },
    /// Fails like `Update`; the event carries the last state with the deletion RV.
    Delete { key: ObjectKey, expected_rv: Option<u64> },
}

/// A `write` call queued for the writer thread.
pub(crate) struct Request {
    pub(crate) ops: Vec<WriteOp>,
    pub(crate) reply: oneshot::Sender<Result<Vec<Committed>, StoreError>>,
}

/// The current state of a key as seen by a call in progress.
#[derive(Clone, Debug)]
pub(crate) struct Current {
    pub(crate) rv: u64,
    pub(crate) object: Arc<Value>,
}

/// The outcome of one successful call: final state per touched key, and its events.
#[derive(Debug)]
pub(crate) struct Plan {
    /// Final state per encoded key (`None` = removed), one entry per key however often it was touched.
    pub(crate) writes: Vec<(Vec<u8>, Option<Current>)>,
    pub(crate) events: Vec<Event>,
    /// The last RV the call assigned.
    pub(crate) last_rv: u64,
    /// `(group, resource)` pairs the call created objects of.
    pub(crate) created_resources: Vec<(String, String)>,
}

/// Reads the state of an encoded key before the call.
pub(crate) type Lookup<'a> = dyn FnMut(&[u8]) -> Result<Option<Current>, StoreError> + 'a;

/// Applies `ops` on top of `lookup` (the state before the call) without touching storage.
///
/// Each op gets its own RV, starting after `base_rv`, so a watcher resuming from any event's RV neither
/// repeats nor skips a sibling of that event. Any failing op fails the whole call and nothing of it is
/// kept, which is what makes a call atomic inside a shared transaction.
pub(crate) fn plan_call(ops: Vec<WriteOp>, base_rv: u64, lookup: &mut Lookup<'_>) -> Result<Plan, StoreError> {
    let mut overlay: HashMap<Vec<u8>, Option<Current>> = HashMap::new();
    let mut order: Vec<Vec<u8>> = Vec::new();
    let mut events = Vec::with_capacity(ops.len());
    let mut created_resources = Vec::new();
    let mut rv = base_rv;
    for op in ops {
        let key = match &op {
            WriteOp::Create { key, .. } | WriteOp::Update { key, .. } | WriteOp::Delete { key, .. } => key,
        };
        let encoded = key.encode()?;
        let current = match overlay.get(&encoded) {
            Some(state) => state.clone(),
            None => lookup(&encoded)?,
        };
        let next_rv = rv + 1;
        let (key, state, event_type, object, prev) = match op {
            WriteOp::Create { key, mut object } => {
                if current.is_some() {
                    return Err(StoreError::AlreadyExists(Box::new(key)));
                }
                set_resource_version(&mut object, next_rv)?;
                let object = Arc::new(object);
                created_resources.push((key.group.clone(), key.resource.clone()));
                let state = Some(Current {
                    rv: next_rv,
                    object: object.clone(),
                });
                (key, state, EventType::Added, object, None)
            }
            WriteOp::Update {
                key,
                mut object,
                expected_rv,
            } => {
                let current = check_current(&key, current, expected_rv)?;
                set_resource_version(&mut object, next_rv)?;
                let object = Arc::new(object);
                let state = Some(Current {
                    rv: next_rv,
                    object: object.clone(),
                });
                (key, state, EventType::Modified, object, Some(current.object))
            }
            WriteOp::Delete { key, expected_rv } => {
                let current = check_current(&key, current, expected_rv)?;
                let object = with_resource_version(&current.object, next_rv)?;
                (key, None, EventType::Deleted, object, Some(current.object))
            }
        };
        rv = next_rv;
        match overlay.entry(encoded) {
            Entry::Occupied(mut slot) => {
                slot.insert(state);
            }
            Entry::Vacant(slot) => {
                order.push(slot.key().clone());
                slot.insert(state);
            }
        }
        events.push(Event {
            rv,
            event_type,
            key,
            object,
            prev,
        });
    }
    let writes = order
        .into_iter()
        .map(|k| {
            let state = overlay.remove(&k).flatten();
            (k, state)
        })
        .collect();
    Ok(Plan {
        writes,
        events,
        last_rv: rv,
        created_resources,
    })
}

fn check_current(key: &ObjectKey, current: Option<Current>, expected_rv: Option<u64>) -> Result<Current, StoreError> {
    let current = current.ok_or_else(|| StoreError::NotFound(Box::new(key.clone())))?;
    match expected_rv {
        Some(expected) if expected != current.rv => Err(StoreError::Conflict {
            key: Box::new(key.clone()),
            expected,
            actual: current.rv,
        }),
        _ => Ok(current),
    }
}

/// The writer thread's loop; returns when every `Store` handle is gone and the queue is drained.
pub(crate) fn run(shared: Arc<Shared>, requests: mpsc::Receiver<Request>, group_commit: bool) {
    std::thread::scope(|scope| {
        // Parsed events aging out of the history are freed on a thread of their own: a parsed object
        // is a tree of allocations, and freeing them took ~8 % of this thread, the store's serial step.
        let (retire, retired) = mpsc::channel::<Vec<Arc<Event>>>();
        let retirer = std::thread::Builder::new()
            .name("kcp-store-free".into())
            .spawn_scoped(scope, move || retired.into_iter().for_each(drop));
        let retire = match retirer {
            Ok(_) => Some(retire),
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the store's freeing thread; the writer frees aged events itself");
                None
            }
        };
        serve(&shared, &requests, group_commit, retire.as_ref());
    });
}

/// Answers write calls until every sender is gone.
fn serve(
    shared: &Shared,
    requests: &mpsc::Receiver<Request>,
    group_commit: bool,
    retire: Option<&mpsc::Sender<Vec<Arc<Event>>>>,
) {
    let mut failed: Option<String> = None;
    while let Ok(first) = requests.recv() {
        let mut batch = vec![first];
        if group_commit {
            while batch.len() < MAX_BATCH {
                match requests.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
        }
        if let Some(why) = &failed {
            for request in batch {
                let _ = request.reply.send(Err(StoreError::Storage(why.clone())));
            }
            continue;
        }
        match process_batch(shared, batch) {
            Ok(aged) => {
                if let Some(retire) = retire
                    && !aged.is_empty()
                {
                    // Only fails once the freeing thread is gone; the events are then freed here.
                    let _ = retire.send(aged);
                }
            }
            Err(TxnError::Aborted(why)) => tracing::error!(error = %why, "store transaction aborted"),
            Err(TxnError::CommitFailed(why)) => {
                // redb refuses further writes after a failed commit, and the commit may even have become
                // durable: refuse everything until the file is reopened rather than risk reusing RVs.
                tracing::error!(error = %why, "store commit failed; refusing further writes until restart");
                failed = Some(format!("store is read-only after a failed commit: {why}"));
            }
        }
    }
}

/// Why a whole batch failed (every caller of the batch gets the error).
#[derive(Debug)]
pub(crate) enum TxnError {
    /// The transaction was rolled back before committing; the store stays writable.
    Aborted(StoreError),
    /// The commit itself failed; its outcome is unknown.
    CommitFailed(StoreError),
}

impl TxnError {
    fn error(&self) -> &StoreError {
        match self {
            Self::Aborted(e) | Self::CommitFailed(e) => e,
        }
    }
}

fn aborted(e: impl Into<StoreError>) -> TxnError {
    TxnError::Aborted(e.into())
}

/// Runs one batch in one transaction and answers every caller. Returns the parsed events that aged
/// out of the history, for the caller to free.
pub(crate) fn process_batch(shared: &Shared, batch: Vec<Request>) -> Result<Vec<Arc<Event>>, TxnError> {
    let base_rv = shared.current_rv.load(Ordering::Acquire);
    let mut replies = Vec::with_capacity(batch.len());
    let outcome = run_transaction(shared, base_rv, batch, &mut replies);
    match outcome {
        Ok((last_rv, writes)) => {
            // Stored values by their resourceVersion (each state has its own): the history keeps
            // these for the events that wrote them or replaced them instead of encoding copies.
            let mut texts: HashMap<u64, Arc<[u8]>> = HashMap::with_capacity(2 * writes.len());
            if last_rv != base_rv {
                texts.extend(writes.iter().filter_map(|(_, v)| v.as_ref()).filter_map(stored_with_rv));
                // Durable now: readers may see it (before any caller hears of it or any watcher does).
                let mut image = shared.image.write().unwrap_or_else(|p| p.into_inner());
                let replaced = image.apply(writes, last_rv);
                drop(image);
                texts.extend(replaced.iter().filter_map(stored_with_rv));
            }
            shared.current_rv.store(last_rv, Ordering::Release);
            let published: Vec<(Arc<Event>, StoredText)> = replies
                .iter()
                .filter_map(|(_, result)| result.as_ref().ok())
                .flatten()
                .map(|e| {
                    let stored = StoredText {
                        object: texts.get(&e.rv).cloned(),
                        prev: e
                            .prev
                            .as_deref()
                            .and_then(object_rv)
                            .and_then(|rv| texts.get(&rv).cloned()),
                    };
                    (Arc::new(e.clone()), stored)
                })
                .collect();
            let aged = shared.hub.publish(published);
            for (reply, result) in replies {
                let committed = result.map(|events| {
                    events
                        .into_iter()
                        .map(|event| Committed {
                            stored: texts.get(&event.rv).cloned(),
                            event,
                        })
                        .collect()
                });
                let _ = reply.send(committed);
            }
            Ok(aged)
        }
        Err(e) => {
            for (reply, _) in replies {
                let _ = reply.send(Err(e.error().clone()));
            }
            Err(e)
        }
    }
}

/// A stored value keyed by the resourceVersion in its prefix.
fn stored_with_rv(value: &Arc<[u8]>) -> Option<(u64, Arc<[u8]>)> {
    Some((value_rv(value).ok()?, value.clone()))
}

/// The resourceVersion an object carries (every stored state carries its own).
fn object_rv(object: &Value) -> Option<u64> {
    object.pointer("/metadata/resourceVersion")?.as_str()?.parse().ok()
}

type Reply = (
    oneshot::Sender<Result<Vec<Committed>, StoreError>>,
    Result<Vec<Event>, StoreError>,
);

/// Plans and applies every call, then commits durably. Returns the last RV assigned and the values
/// written, for the memory image.
fn run_transaction(
    shared: &Shared,
    base_rv: u64,
    batch: Vec<Request>,
    replies: &mut Vec<Reply>,
) -> Result<(u64, Writes), TxnError> {
    let mut writes = Writes::new();
    // This batch's latest value per key. With the memory image (the table as of the last commit:
    // only this thread changes either, and the image is applied right after each commit) it
    // answers every lookup, so planning neither walks the file's B-tree nor copies pages out of
    // its cache.
    let mut written: HashMap<Vec<u8>, Option<Arc<[u8]>>> = HashMap::with_capacity(batch.len());
    // Each value is encoded here and copied out at its exact size.
    let mut encoded = Vec::with_capacity(4096);
    let mut txn = shared.db.begin_write().map_err(aborted)?;
    txn.set_durability(Durability::Immediate).map_err(aborted)?;
    let mut rv = base_rv;
    {
        let mut objects = txn.open_table(OBJECTS).map_err(aborted)?;
        // Replies are pushed before any storage error can occur for that call, so that a failing
        // transaction still answers every caller.
        let mut pending = batch.into_iter();
        while let Some(Request { ops, reply }) = pending.next() {
            let planned = {
                let mut lookup = |k: &[u8]| -> Result<Option<Current>, StoreError> {
                    let value = match written.get(k) {
                        Some(value) => value.clone(),
                        None => shared.image.read().unwrap_or_else(|p| p.into_inner()).get(k),
                    };
                    match value {
                        Some(value) => {
                            let (rv, object) = decode_value(&value)?;
                            Ok(Some(Current {
                                rv,
                                object: Arc::new(object),
                            }))
                        }
                        None => Ok(None),
                    }
                };
                plan_call(ops, rv, &mut lookup)
            };
            let plan = match planned {
                // A failed read is a failure of the transaction, not of this call.
                Err(e @ StoreError::Storage(_)) => {
                    replies.push((reply, Ok(Vec::new())));
                    replies.extend(pending.map(|r| (r.reply, Ok(Vec::new()))));
                    return Err(TxnError::Aborted(e));
                }
                Err(e) => {
                    replies.push((reply, Err(e)));
                    continue;
                }
                Ok(plan) => plan,
            };
            replies.push((reply, Ok(Vec::new())));
            let before = writes.len();
            if let Err(e) = apply(&mut objects, &plan, &mut writes, &mut encoded) {
                // The table may hold part of this call: only dropping the whole transaction undoes it.
                replies.extend(pending.map(|r| (r.reply, Ok(Vec::new()))));
                return Err(TxnError::Aborted(e));
            }
            written.extend(writes[before..].iter().cloned());
            if !plan.created_resources.is_empty() {
                // Registered before the commit makes the objects visible, so `scan_cluster` never misses
                // a resource; a registration whose commit then fails only costs an empty scan.
                let mut resources = shared.resources.write().unwrap_or_else(|p| p.into_inner());
                resources.extend(plan.created_resources.iter().cloned());
            }
            rv = plan.last_rv;
            if let Some(last) = replies.last_mut() {
                last.1 = Ok(plan.events);
            }
        }
    }
    if rv == base_rv {
        // Every call failed: nothing to make durable.
        txn.abort().map_err(aborted)?;
        return Ok((rv, Writes::new()));
    }
    txn.open_table(META)
        .map_err(aborted)?
        .insert(RV_KEY, rv)
        .map_err(aborted)?;
    txn.commit().map_err(|e| TxnError::CommitFailed(e.into()))?;
    shared.commits.fetch_add(1, Ordering::Relaxed);
    Ok((rv, writes))
}

fn apply(
    objects: &mut redb::Table<'_, &[u8], &[u8]>,
    plan: &Plan,
    writes: &mut Writes,
    encoded: &mut Vec<u8>,
) -> Result<(), StoreError> {
    for (key, state) in &plan.writes {
        match state {
            Some(current) => {
                encode_value_into(encoded, current.rv, &current.object)?;
                let bytes: Arc<[u8]> = Arc::from(&encoded[..]);
                objects.insert(key.as_slice(), &bytes[..])?;
                writes.push((key.clone(), Some(bytes)));
            }
            None => {
                objects.remove(key.as_slice())?;
                writes.push((key.clone(), None));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    type EventSummary = (u64, EventType, String);
    type WriteSummary = (String, Option<u64>);
    /// (ops, expected events, expected final writes)
    type Case = (
        Vec<WriteOp>,
        Vec<(u64, EventType, &'static str)>,
        Vec<(&'static str, Option<u64>)>,
    );

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("", "configmaps", "c", "ns", name)
    }

    fn obj(name: &str, data: &str) -> Value {
        json!({"metadata": {"name": name}, "data": {"v": data}})
    }

    fn stored(rv: u64, name: &str, data: &str) -> Current {
        let mut o = obj(name, data);
        set_resource_version(&mut o, rv).unwrap();
        Current {
            rv,
            object: Arc::new(o),
        }
    }

    /// Plans against a map and returns (event summaries, final writes as (name, rv)).
    fn run_plan(
        existing: &[(&str, Current)],
        ops: Vec<WriteOp>,
    ) -> Result<(Vec<EventSummary>, Vec<WriteSummary>), StoreError> {
        let db: BTreeMap<Vec<u8>, Current> = existing
            .iter()
            .map(|(n, c)| (key(n).encode().unwrap(), c.clone()))
            .collect();
        let mut lookup = |k: &[u8]| Ok(db.get(k).cloned());
        let plan = plan_call(ops, 10, &mut lookup)?;
        let events = plan
            .events
            .iter()
            .map(|e| (e.rv, e.event_type, e.key.name.clone()))
            .collect();
        let writes = plan
            .writes
            .iter()
            .map(|(k, s)| (ObjectKey::decode(k).unwrap().name, s.as_ref().map(|c| c.rv)))
            .collect();
        Ok((events, writes))
    }

    #[test]
    fn plans_successful_calls() {
        use EventType::*;
        let existing = [("a", stored(5, "a", "1"))];
        let cases: Vec<Case> = vec![
            (
                vec![WriteOp::Create {
                    key: key("b"),
                    object: obj("b", "1"),
                }],
                vec![(11, Added, "b")],
                vec![("b", Some(11))],
            ),
            (
                vec![WriteOp::Update {
                    key: key("a"),
                    object: obj("a", "2"),
                    expected_rv: Some(5),
                }],
                vec![(11, Modified, "a")],
                vec![("a", Some(11))],
            ),
            (
                vec![WriteOp::Delete {
                    key: key("a"),
                    expected_rv: None,
                }],
                vec![(11, Deleted, "a")],
                vec![("a", None)],
            ),
            // Later ops of a call see earlier ones; one write per key.
            (
                vec![
                    WriteOp::Create {
                        key: key("b"),
                        object: obj("b", "1"),
                    },
                    WriteOp::Update {
                        key: key("b"),
                        object: obj("b", "2"),
                        expected_rv: Some(11),
                    },
                    WriteOp::Delete {
                        key: key("a"),
                        expected_rv: Some(5),
                    },
                    WriteOp::Create {
                        key: key("a"),
                        object: obj("a", "3"),
                    },
                ],
                vec![
                    (11, Added, "b"),
                    (12, Modified, "b"),
                    (13, Deleted, "a"),
                    (14, Added, "a"),
                ],
                vec![("b", Some(12)), ("a", Some(14))],
            ),
        ];
        for (ops, events, writes) in cases {
            let (got_events, got_writes) = run_plan(&existing, ops.clone()).unwrap();
            let events: Vec<_> = events.into_iter().map(|(rv, t, n)| (rv, t, n.to_string())).collect();
            let writes: Vec<_> = writes.into_iter().map(|(n, rv)| (n.to_string(), rv)).collect();
            assert_eq!((got_events, got_writes), (events, writes), "{ops:?}");
        }
    }

    #[test]
    fn plans_failing_calls() {
        let existing = [("a", stored(5, "a", "1"))];
        let cases = vec![
            (
                vec![WriteOp::Create {
                    key: key("a"),
                    object: obj("a", "1"),
                }],
                "AlreadyExists",
            ),
            (
                vec![WriteOp::Update {
                    key: key("z"),
                    object: obj("z", "1"),
                    expected_rv: None,
                }],
                "NotFound",
            ),
            (
                vec![WriteOp::Delete {
                    key: key("z"),
                    expected_rv: None,
                }],
                "NotFound",
            ),
            (
                vec![WriteOp::Update {
                    key: key("a"),
                    object: obj("a", "1"),
                    expected_rv: Some(4),
                }],
                "Conflict 4 5",
            ),
            (
                vec![WriteOp::Delete {
                    key: key("a"),
                    expected_rv: Some(6),
                }],
                "Conflict 6 5",
            ),
            (
                vec![
                    WriteOp::Create {
                        key: key("b"),
                        object: obj("b", "1"),
                    },
                    WriteOp::Create {
                        key: key("b"),
                        object: obj("b", "1"),
                    },
                ],
                "AlreadyExists",
            ),
            (
                vec![WriteOp::Create {
                    key: key("b"),
                    object: json!("not an object"),
                }],
                "InvalidObject",
            ),
            (
                vec![WriteOp::Create {
                    key: key(""),
                    object: obj("", "1"),
                }],
                "InvalidKey",
            ),
        ];
        for (ops, want) in cases {
            let got = match run_plan(&existing, ops.clone()) {
                Err(StoreError::AlreadyExists(_)) => "AlreadyExists".to_string(),
                Err(StoreError::NotFound(_)) => "NotFound".to_string(),
                Err(StoreError::Conflict { expected, actual, .. }) => format!("Conflict {expected} {actual}"),
                Err(StoreError::InvalidObject(_)) => "InvalidObject".to_string(),
                Err(StoreError::InvalidKey(_)) => "InvalidKey".to_string(),
                other => format!("{other:?}"),
            };
            assert_eq!(got, want, "{ops:?}");
        }
    }

    #[test]
    fn delete_event_carries_last_state_with_deletion_rv() {
        let existing = [("a", stored(5, "a", "last"))];
        let db: BTreeMap<Vec<u8>, Current> = existing
            .iter()
            .map(|(n, c)| (key(n).encode().unwrap(), c.clone()))
            .collect();
        let mut lookup = |k: &[u8]| Ok(db.get(k).cloned());
        let plan = plan_call(
            vec![WriteOp::Delete {
                key: key("a"),
                expected_rv: None,
            }],
            10,
            &mut lookup,
        )
        .unwrap();
        let event = &plan.events[0];
        assert_eq!(
            *event.object,
            json!({"metadata": {"name": "a", "resourceVersion": "11"}, "data": {"v": "last"}})
        );
        assert_eq!(
            event.prev.as_deref(),
            Some(&json!({"metadata": {"name": "a", "resourceVersion": "5"}, "data": {"v": "last"}}))
        );
    }
}
