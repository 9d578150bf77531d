//! Waiting for an object the reconcile has just written or read, with one watch request.
//!
//! [`faros_core::wait::wait_for`] lists before it watches, because it does not know the object's
//! state. A reconcile that just created a workspace or applied a Secret does: the write's answer is
//! the object at a resourceVersion, so a watch from that version sees every later change and the
//! list is one request per wait for nothing. When the version is too old to watch from (410: the
//! server's history moved on) or the watch cannot start, this falls back to `wait_for`, which lists
//! first; correctness never depends on the short path.
//!
//! It must not decide what "done" means (the caller's predicate does) nor retry beyond the deadline.

use std::fmt::Debug;
use std::time::Duration;

use faros_core::wait::{WaitError, wait_for};
use futures::StreamExt;
use kube::api::{Api, WatchEvent, WatchParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::time::Instant;

/// What one watch event means for the wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// The predicate holds for this state: done.
    Done,
    /// Not yet; keep watching from the event's version.
    Continue,
    /// The watch cannot go on from here (410 Gone, or another error event): list and watch again.
    Relist,
}

/// The decision for one event of the object's watch: `Some(obj)` is its state after an
/// ADDED/MODIFIED event, `None` after DELETED; an error event always relists (only a fresh list
/// tells the current state).
pub(crate) fn step<K>(event: &WatchEvent<K>, predicate: &mut impl FnMut(Option<&K>) -> bool) -> Step {
    match event {
        WatchEvent::Added(o) | WatchEvent::Modified(o) => done_if(predicate(Some(o))),
        WatchEvent::Deleted(_) => done_if(predicate(None)),
        WatchEvent::Bookmark(_) => Step::Continue,
        WatchEvent::Error(_) => Step::Relist,
    }
}

fn done_if(done: bool) -> Step {
    if done { Step::Done } else { Step::Continue }
}

/// Watches `seen` (the object as the caller just wrote or read it, where `predicate` did not hold
/// yet) from its resourceVersion until `predicate` holds, and returns that state (`None`: deleted).
/// Falls back to [`wait_for`] with the time left when the watch cannot continue from a known version.
pub(crate) async fn wait_from<K>(
    api: Api<K>,
    seen: &K,
    mut predicate: impl FnMut(Option<&K>) -> bool,
    timeout: Duration,
) -> Result<Option<K>, WaitError>
where
    K: Resource + Clone + Debug + DeserializeOwned + serde::Serialize + Send + Sync + 'static,
{
    let name = seen.name_any();
    let Some(mut version) = seen.resource_version() else {
        return wait_for(api, &name, predicate, timeout).await;
    };
    let deadline = Instant::now() + timeout;
    let mut last = Some(seen.clone());
    let params = WatchParams::default().fields(&format!("metadata.name={name}"));
    let short = async {
        // A watch body the server ends (its timeout) resumes from the last version seen.
        while let Ok(stream) = api.watch(&params, &version).await {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                let Ok(event) = event else { return None };
                match step(&event, &mut predicate) {
                    Step::Done => {
                        return Some(match event {
                            WatchEvent::Added(o) | WatchEvent::Modified(o) => Some(o),
                            _ => None,
                        });
                    }
                    Step::Relist => return None,
                    Step::Continue => {}
                }
                match event {
                    WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                        version = o.resource_version().unwrap_or(version);
                        last = Some(o);
                    }
                    WatchEvent::Deleted(o) => {
                        version = o.resource_version().unwrap_or(version);
                        last = None;
                    }
                    WatchEvent::Bookmark(b) => version = b.metadata.resource_version,
                    WatchEvent::Error(_) => {}
                }
            }
        }
        None
    };
    match tokio::time::timeout_at(deadline, short).await {
        Ok(Some(found)) => Ok(found),
        Ok(None) => {
            let left = deadline.saturating_duration_since(Instant::now());
            wait_for(api, &name, predicate, left).await
        }
        Err(_) => Err(WaitError::Timeout {
            kind: api.resource_url().rsplit('/').next().unwrap_or("object").to_string(),
            name,
            waited: timeout,
            last_state: faros_core::wait::describe(last.as_ref()),
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::core::Status;

    fn cm(data: Option<&str>) -> ConfigMap {
        let mut c = ConfigMap::default();
        c.metadata.name = Some("x".into());
        c.data = data.map(|d| [("k".to_string(), d.to_string())].into());
        c
    }

    #[test]
    fn step_table() {
        let gone = Box::new(Status::failure("too old resource version", "Expired").with_code(410));
        // predicate: the ConfigMap has data, or (for "wait until gone") is absent.
        let cases: Vec<(&str, WatchEvent<ConfigMap>, bool, Step)> = vec![
            ("added, not yet", WatchEvent::Added(cm(None)), false, Step::Continue),
            (
                "modified, holds",
                WatchEvent::Modified(cm(Some("v"))),
                false,
                Step::Done,
            ),
            (
                "modified, not yet",
                WatchEvent::Modified(cm(None)),
                false,
                Step::Continue,
            ),
            (
                "deleted while waiting for data",
                WatchEvent::Deleted(cm(None)),
                false,
                Step::Continue,
            ),
            (
                "deleted while waiting for absence",
                WatchEvent::Deleted(cm(None)),
                true,
                Step::Done,
            ),
            ("410 relists", WatchEvent::Error(gone), false, Step::Relist),
        ];
        for (case, event, want_absent, want) in cases {
            let mut predicate = |c: Option<&ConfigMap>| match c {
                Some(c) => !want_absent && c.data.is_some(),
                None => want_absent,
            };
            assert_eq!(step(&event, &mut predicate), want, "{case}");
        }
    }
}
