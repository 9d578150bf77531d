//! The one wait-for-condition helper: watch an object until a predicate holds, or time out with an
//! error that names the object and the last state seen (so "timed out" is never a mystery).
//!
//! And the wait that comes before a watch: [`until_listable`] and [`permitted_watcher`]. A component
//! starts before whoever grants it its roles (the reconciler, `faros grant`) or makes the
//! workspaces it watches; its first lists get 403 or 404 for a second or two. kube-runtime's
//! watcher logs every 403 as a warning, so a watch is started only once one list (of one item)
//! succeeds, and start-up ordering is not reported as a fault: see [`report`].

use std::fmt::Debug;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt, TryStreamExt};
use kube::api::{Api, ListParams};
use kube::runtime::watcher::{self, Event};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;

/// How long after a process's first list probe a 403 or 404 is taken for start-up ordering (roles
/// not granted yet, workspace not made yet) rather than a fault; also the shortest time between two
/// warnings of one wait.
pub const BOOTSTRAP_GRACE: Duration = Duration::from_secs(60);

/// The first delay between list probes; it doubles up to [`PROBE_RETRY_MAX`]. Grants arrive within
/// a second of start, so the first retries are quick.
const PROBE_RETRY_FIRST: Duration = Duration::from_millis(50);
const PROBE_RETRY_MAX: Duration = Duration::from_secs(5);
/// The longest delay between list probes within [`BOOTSTRAP_GRACE`] of start: what a 403 or 404
/// waits for then (a binding, a grant, a virtual workspace being served) is kcp's work of a few
/// seconds, and a probe delay doubled to 5 s overshot it by up to 3 s, a start-up cost of every
/// component that lists through a virtual workspace right after kcp's bootstrap.
const PROBE_RETRY_MAX_AT_START: Duration = Duration::from_secs(1);

/// IO-free: the delay before the next list probe after one that waited `previous`, `since_start`
/// after this process's first probe.
pub fn next_probe_delay(previous: Duration, since_start: Duration) -> Duration {
    let max = if since_start < BOOTSTRAP_GRACE {
        PROBE_RETRY_MAX_AT_START
    } else {
        PROBE_RETRY_MAX
    };
    (previous * 2).min(max)
}

/// When this process first probed a list: the start of its [`BOOTSTRAP_GRACE`].
static FIRST_PROBE: OnceLock<Instant> = OnceLock::new();

/// How a failed list probe is logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// Debug level: start-up ordering, or a repeat of a warning given less than a grace ago.
    Quiet,
    Warn,
}

/// How to log a failed list probe. `ordering`: the failure is a 403 or 404 (what start-up ordering
/// looks like); `since_start`: since the process's first probe; `since_warned`: since this wait last
/// warned, `None` if it has not.
pub fn report(ordering: bool, since_start: Duration, since_warned: Option<Duration>) -> Report {
    if ordering && since_start < BOOTSTRAP_GRACE {
        return Report::Quiet;
    }
    match since_warned {
        Some(d) if d < BOOTSTRAP_GRACE => Report::Quiet,
        _ => Report::Warn,
    }
}

/// Lists one object of `api` (with `config`'s selectors) until that succeeds; failures are logged
/// as [`report`] decides. `give_up_after`: return the failure of the first probe made after this
/// long instead of trying again (`Some(Duration::ZERO)`: one probe, nothing logged).
pub async fn until_listable<K>(
    api: &Api<K>,
    config: &watcher::Config,
    give_up_after: Option<Duration>,
) -> Result<(), kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let params = ListParams {
        label_selector: config.label_selector.clone(),
        field_selector: config.field_selector.clone(),
        limit: Some(1),
        ..ListParams::default()
    };
    let first_probe = *FIRST_PROBE.get_or_init(Instant::now);
    let started = Instant::now();
    let mut delay = PROBE_RETRY_FIRST;
    let mut warned: Option<Instant> = None;
    loop {
        let error = match api.list(&params).await {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        if give_up_after.is_some_and(|g| started.elapsed() >= g) {
            return Err(error);
        }
        let ordering = matches!(&error, kube::Error::Api(s) if s.code == 403 || s.code == 404);
        let now = Instant::now();
        match report(ordering, now - first_probe, warned.map(|w| now - w)) {
            Report::Quiet => tracing::debug!(url = %api.resource_url(), %error, "cannot list yet; retrying"),
            Report::Warn => {
                warned = Some(now);
                tracing::warn!(url = %api.resource_url(), %error, "cannot list; retrying");
            }
        }
        tokio::time::sleep(delay).await;
        delay = next_probe_delay(delay, now - first_probe);
    }
}

/// kube-runtime's watcher, started once `api` can be listed ([`until_listable`]): the watch of a
/// long-running loop, which would otherwise log each 403 of start-up ordering as a warning.
pub fn permitted_watcher<K>(
    api: Api<K>,
    config: watcher::Config,
) -> impl Stream<Item = watcher::Result<Event<K>>> + Send
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    futures::stream::once(async move {
        // Never gives up, so never fails.
        let _ = until_listable(&api, &config, None).await;
        (api, config)
    })
    .flat_map(|(api, config)| watcher::watcher(api, config))
}

/// Errors from [`wait_for`].
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    #[error("timed out after {waited:?} waiting for {kind} {name:?}; last state seen: {last_state}")]
    Timeout {
        kind: String,
        name: String,
        waited: Duration,
        last_state: String,
    },
    #[error("watching {kind} {name:?} failed: {source}")]
    Watch {
        kind: String,
        name: String,
        #[source]
        source: watcher::Error,
    },
    #[error("{kind} {name:?} was deleted while waiting for it")]
    Deleted { kind: String, name: String },
}

impl WaitError {
    /// One readable line for a log: a watch refused by the API server is its Status' message and
    /// reason (the error's own text carries the whole Status, fit for DEBUG).
    pub fn brief(&self) -> String {
        let api_status = match self {
            Self::Watch {
                source:
                    watcher::Error::InitialListFailed(kube::Error::Api(s))
                    | watcher::Error::WatchStartFailed(kube::Error::Api(s))
                    | watcher::Error::WatchFailed(kube::Error::Api(s)),
                ..
            } => Some(s),
            Self::Watch {
                source: watcher::Error::WatchError(s),
                ..
            } => Some(s),
            _ => None,
        };
        match (self, api_status) {
            (Self::Watch { kind, name, .. }, Some(s)) => {
                format!("watching {kind} {name:?}: {} ({})", s.message, s.reason)
            }
            _ => self.to_string(),
        }
    }
}

/// Watches `name` through `api` until `predicate` returns true for it, and returns that object.
///
/// `predicate` sees `None` while the object does not exist, so "wait until gone" is
/// `wait_for(api, n, |o| o.is_none(), d)`; in that case `Ok(None)` is returned.
pub async fn wait_for<K>(
    api: Api<K>,
    name: &str,
    mut predicate: impl FnMut(Option<&K>) -> bool,
    timeout: Duration,
) -> Result<Option<K>, WaitError>
where
    K: Resource + Clone + Debug + DeserializeOwned + serde::Serialize + Send + Sync + 'static,
{
    // The resource's plural from its URL (`.../namespaces/ns/configmaps`): works for typed and dynamic objects.
    let kind = api.resource_url().rsplit('/').next().unwrap_or("object").to_string();
    let mut last: Option<K> = None;
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    // One probe first: a list that fails (403 before the grants, 404 before the workspace) fails
    // the wait at once, as the watch's own first list would, without the watcher's warning.
    if let Err(e) = until_listable(&api, &config, Some(Duration::ZERO)).await {
        return Err(WaitError::Watch {
            kind,
            name: name.into(),
            source: watcher::Error::InitialListFailed(e),
        });
    }
    let mut stream = std::pin::pin!(watcher::watcher(api, config));
    let work = async {
        // Until the initial list completes we cannot tell "absent" from "not listed yet".
        let mut initial: Vec<K> = Vec::new();
        loop {
            let event = stream.try_next().await.map_err(|source| WaitError::Watch {
                kind: kind.clone(),
                name: name.into(),
                source,
            })?;
            match event {
                Some(Event::Init) => initial.clear(),
                Some(Event::InitApply(o)) => initial.push(o),
                Some(Event::InitDone) => {
                    last = initial.drain(..).find(|o| o.name_any() == name);
                    if predicate(last.as_ref()) {
                        return Ok(last.clone());
                    }
                }
                Some(Event::Apply(o)) if o.name_any() == name => {
                    last = Some(o);
                    if predicate(last.as_ref()) {
                        return Ok(last.clone());
                    }
                }
                Some(Event::Delete(o)) if o.name_any() == name => {
                    last = None;
                    if predicate(None) {
                        return Ok(None);
                    }
                }
                Some(_) => {}
                None => {
                    return Err(WaitError::Deleted {
                        kind: kind.clone(),
                        name: name.into(),
                    });
                }
            }
        }
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(result) => result,
        Err(_) => Err(WaitError::Timeout {
            kind: kind.clone(),
            name: name.into(),
            waited: timeout,
            last_state: describe(last.as_ref()),
        }),
    }
}

/// A short description of an object's state for error messages: its `status`, else "absent"
/// (what [`WaitError`]'s `last_state` says; shared by other waits so their messages match).
pub fn describe<K: serde::Serialize>(obj: Option<&K>) -> String {
    let Some(obj) = obj else { return "absent".into() };
    let value = serde_json::to_value(obj).unwrap_or_default();
    let status = value.get("status").cloned().unwrap_or(serde_json::Value::Null);
    let mut text = if status.is_null() {
        "exists, no status".to_string()
    } else {
        status.to_string()
    };
    if text.len() > 512 {
        let mut cut = 512;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn a_refused_watch_is_one_line_with_the_status_message() {
        let status = |code: u16, reason: &str, message: &str| {
            Box::new(kube::core::Status::failure(message, reason).with_code(code))
        };
        let watch = |source| WaitError::Watch {
            kind: "apiexportendpointslices".into(),
            name: "p".into(),
            source,
        };
        let missing = status(404, "NotFound", r#"workspaces.tenancy.kcp.io "root:x" not found"#);
        let cases = [
            (
                watch(watcher::Error::InitialListFailed(kube::Error::Api(missing.clone()))),
                r#"watching apiexportendpointslices "p": workspaces.tenancy.kcp.io "root:x" not found (NotFound)"#,
            ),
            (
                watch(watcher::Error::WatchError(status(410, "Expired", "too old"))),
                r#"watching apiexportendpointslices "p": too old (Expired)"#,
            ),
            (
                WaitError::Deleted {
                    kind: "configmaps".into(),
                    name: "c".into(),
                },
                r#"configmaps "c" was deleted while waiting for it"#,
            ),
        ];
        for (error, want) in cases {
            assert_eq!(error.brief(), want);
            assert!(!error.brief().contains("Status {"), "{}", error.brief());
        }
    }

    #[test]
    fn next_probe_delay_table() {
        let (ms, s) = (Duration::from_millis, Duration::from_secs);
        for (case, previous, since_start, want) in [
            ("doubles", ms(50), s(0), ms(100)),
            ("at start: capped at 1 s", ms(800), s(3), s(1)),
            ("at start: stays at 1 s", s(1), s(30), s(1)),
            ("after the grace: doubles past 1 s", s(1), s(61), s(2)),
            ("after the grace: capped at 5 s", s(4), s(120), s(5)),
        ] {
            assert_eq!(next_probe_delay(previous, since_start), want, "{case}");
        }
    }

    #[test]
    fn start_up_ordering_is_quiet_for_a_grace_and_warnings_are_spaced() {
        let s = Duration::from_secs;
        // (403 or 404, since the first probe, since this wait warned, report)
        let cases = [
            (true, s(0), None, Report::Quiet),
            (true, s(59), None, Report::Quiet),
            (true, s(60), None, Report::Warn),
            (true, s(90), Some(s(30)), Report::Quiet),
            (true, s(130), Some(s(70)), Report::Warn),
            // Anything else (connection refused, 500) is a fault from the start...
            (false, s(0), None, Report::Warn),
            // ...warned about once a grace.
            (false, s(10), Some(s(10)), Report::Quiet),
            (false, s(70), Some(s(60)), Report::Warn),
        ];
        for (ordering, since_start, since_warned, want) in cases {
            assert_eq!(
                report(ordering, since_start, since_warned),
                want,
                "{ordering} {since_start:?} {since_warned:?}"
            );
        }
    }

    #[test]
    fn describe_summarises_status() {
        assert_eq!(describe::<ConfigMap>(None), "absent");
        assert_eq!(describe(Some(&ConfigMap::default())), "exists, no status");
        let v = serde_json::json!({"status": {"phase": "Ready"}});
        assert_eq!(describe(Some(&v)), r#"{"phase":"Ready"}"#);
    }
}
