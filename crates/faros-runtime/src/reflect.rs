//! The one relist/index driver: a kube watcher's events folded into an index the caller keeps
//! (after kube-runtime's reflector and kubert's indexes), so no subsystem writes its own loop over
//! `Init`, `InitApply`, `InitDone`, `Apply` and `Delete`.
//!
//! [`Relist`] is the IO-free fold: a relist's objects are buffered until it is complete and then
//! handed over whole ([`Update::Relisted`]), so an index replaces what it held at once (objects
//! deleted while the watch was down disappear with it) and is never seen half listed. [`drive`]
//! runs a watcher stream through it until told to stop. Relisting after an error, with backoff, is
//! the stream's (kube's `watcher(..).default_backoff()`): after a failure it lists again, and the
//! index sees one more [`Update::Relisted`].
//!
//! What it must not do: build clients or watches (the caller hands it the stream), or decide what
//! an index keeps.

use std::future::Future;
use std::ops::ControlFlow;

use futures::{Stream, StreamExt};
use kube::runtime::watcher::Event;

/// What an index is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Update<K> {
    /// A complete (re)list: everything there is, replacing what the index held.
    Relisted(Vec<K>),
    /// An object was added or changed.
    Applied(K),
    /// An object was deleted.
    Deleted(K),
}

/// Folds watcher events into [`Update`]s, buffering a relist until it is complete.
#[derive(Debug)]
pub struct Relist<K> {
    listing: Vec<K>,
}

impl<K> Default for Relist<K> {
    fn default() -> Self {
        Self { listing: Vec::new() }
    }
}

impl<K> Relist<K> {
    /// The update `event` makes, if any yet.
    pub fn fold(&mut self, event: Event<K>) -> Option<Update<K>> {
        match event {
            Event::Init => {
                self.listing.clear();
                None
            }
            Event::InitApply(obj) => {
                self.listing.push(obj);
                None
            }
            Event::InitDone => Some(Update::Relisted(std::mem::take(&mut self.listing))),
            Event::Apply(obj) => Some(Update::Applied(obj)),
            Event::Delete(obj) => Some(Update::Deleted(obj)),
        }
    }
}

/// Runs `stream` into `index` until `stop` resolves, the stream ends, or `on_error` breaks on one
/// of its errors (otherwise the stream's backoff retries, and relists, by itself).
pub async fn drive<K, E, S>(
    stream: S,
    stop: impl Future<Output = ()>,
    mut index: impl FnMut(Update<K>),
    on_error: impl FnMut(E) -> ControlFlow<()>,
) where
    S: Stream<Item = Result<Event<K>, E>>,
{
    drive_async(
        stream,
        stop,
        |update| {
            index(update);
            std::future::ready(())
        },
        on_error,
    )
    .await;
}

/// [`drive`] for an index whose updates await something (a lookup an entry needs before it is
/// kept): each update is awaited before the next event is taken.
pub async fn drive_async<K, E, S, F>(
    stream: S,
    stop: impl Future<Output = ()>,
    mut index: impl FnMut(Update<K>) -> F,
    mut on_error: impl FnMut(E) -> ControlFlow<()>,
) where
    S: Stream<Item = Result<Event<K>, E>>,
    F: Future<Output = ()>,
{
    let mut stream = std::pin::pin!(stream);
    let mut stop = std::pin::pin!(stop);
    let mut relist = Relist::default();
    loop {
        let event = tokio::select! {
            _ = &mut stop => return,
            e = stream.next() => match e {
                Some(e) => e,
                None => return,
            },
        };
        match event {
            Ok(event) => {
                if let Some(update) = relist.fold(event) {
                    // Raced against `stop` too: an update may wait on the network.
                    tokio::select! {
                        _ = &mut stop => return,
                        _ = index(update) => {}
                    }
                }
            }
            Err(error) => {
                if on_error(error).is_break() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::collections::BTreeSet;

    #[test]
    fn relists_are_handed_over_whole() {
        let mut r = Relist::default();
        let steps = [
            (Event::Init, None),
            (Event::InitApply("a"), None),
            (Event::InitApply("b"), None),
            (Event::InitDone, Some(Update::Relisted(vec!["a", "b"]))),
            (Event::Apply("c"), Some(Update::Applied("c"))),
            (Event::Delete("a"), Some(Update::Deleted("a"))),
            // A relist that starts again midway (the watch failed during it) drops the partial list.
            (Event::Init, None),
            (Event::InitApply("x"), None),
            (Event::Init, None),
            (Event::InitApply("b"), None),
            (Event::InitDone, Some(Update::Relisted(vec!["b"]))),
            (Event::InitDone, Some(Update::Relisted(vec![]))),
        ];
        for (i, (event, want)) in steps.into_iter().enumerate() {
            assert_eq!(r.fold(event), want, "step {i}");
        }
    }

    /// An index as callers keep one: a set, replaced on relist.
    fn apply(set: &mut BTreeSet<&'static str>, update: Update<&'static str>) {
        match update {
            Update::Relisted(all) => *set = all.into_iter().collect(),
            Update::Applied(o) => {
                set.insert(o);
            }
            Update::Deleted(o) => {
                set.remove(o);
            }
        }
    }

    #[tokio::test]
    async fn drive_folds_events_into_the_index_and_relists_after_errors() {
        type Item = Result<Event<&'static str>, &'static str>;
        /// Name, events, the answer to every error, the index after, how many errors were seen.
        type Case = (&'static str, Vec<Item>, ControlFlow<()>, Vec<&'static str>, usize);
        let cases: Vec<Case> = vec![
            (
                "applies and deletes",
                vec![
                    Ok(Event::Init),
                    Ok(Event::InitApply("a")),
                    Ok(Event::InitDone),
                    Ok(Event::Apply("b")),
                    Ok(Event::Delete("a")),
                ],
                ControlFlow::Continue(()),
                vec!["b"],
                0,
            ),
            (
                // What `default_backoff()` yields after a failure: the error, then a fresh list.
                // "a" was deleted while the watch was down; the relist drops it.
                "an error, then the relist replaces the index",
                vec![
                    Ok(Event::Init),
                    Ok(Event::InitApply("a")),
                    Ok(Event::InitApply("b")),
                    Ok(Event::InitDone),
                    Err("connection reset"),
                    Ok(Event::Init),
                    Ok(Event::InitApply("b")),
                    Ok(Event::InitApply("c")),
                    Ok(Event::InitDone),
                ],
                ControlFlow::Continue(()),
                vec!["b", "c"],
                1,
            ),
            (
                "an error the caller calls fatal ends the drive",
                vec![Ok(Event::Apply("a")), Err("forbidden"), Ok(Event::Apply("b"))],
                ControlFlow::Break(()),
                vec!["a"],
                1,
            ),
            (
                "a relist cut short is never half applied",
                vec![Ok(Event::Apply("a")), Ok(Event::Init), Ok(Event::InitApply("b"))],
                ControlFlow::Continue(()),
                vec!["a"],
                0,
            ),
        ];
        for (name, events, on_error, want, errors) in cases {
            let mut set = BTreeSet::new();
            let mut seen = 0;
            drive(
                futures::stream::iter(events),
                std::future::pending(),
                |u| apply(&mut set, u),
                |_| {
                    seen += 1;
                    on_error
                },
            )
            .await;
            assert_eq!(set.into_iter().collect::<Vec<_>>(), want, "{name}");
            assert_eq!(seen, errors, "{name}");
        }
    }

    #[tokio::test]
    async fn drive_stops_when_told() {
        let mut updates = 0;
        drive(
            futures::stream::pending::<Result<Event<()>, ()>>(),
            std::future::ready(()),
            |_| updates += 1,
            |_| ControlFlow::Continue(()),
        )
        .await;
        assert_eq!(updates, 0);
    }
}
