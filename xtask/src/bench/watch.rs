//! Waiting for many objects of one collection to reach a state by reading a single watch stream, so
//! a benchmark observes readiness without polling each object (which would add load to the system it
//! measures). It only reads; creating the objects is the caller's job.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use anyhow::bail;
use futures::StreamExt;
use serde_json::Value;

use super::faros::Faros;

/// Waits until every object named in `names` satisfies `done`, reading one watch stream (reopened
/// when the server ends it); returns the time each became done, measured from `t0`. Objects that
/// were already done when the watch opened count at the time their initial event arrives.
pub(super) async fn watch_until(
    f: &Faros,
    collection: &str,
    names: &[String],
    t0: Instant,
    timeout: Duration,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<Vec<Duration>> {
    watch_until_as(f, &f.token, collection, names, t0, timeout, done).await
}

/// [`watch_until`] as the holder of `token` (a user other than `f`'s admin).
pub(super) async fn watch_until_as(
    f: &Faros,
    token: &str,
    collection: &str,
    names: &[String],
    t0: Instant,
    timeout: Duration,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<Vec<Duration>> {
    let wanted: HashSet<&str> = names.iter().map(String::as_str).collect();
    let mut finished: HashMap<String, Duration> = HashMap::new();
    let deadline = t0 + timeout;
    while finished.len() < wanted.len() {
        if Instant::now() > deadline {
            bail!("only {} of {} ready after {timeout:?}", finished.len(), wanted.len());
        }
        let url = format!("{}{collection}?watch=true&timeoutSeconds=60", f.url);
        let resp = f.http.get(url).bearer_auth(token).send().await?;
        let mut body = resp.bytes_stream();
        let mut buf = Vec::new();
        while finished.len() < wanted.len() {
            let Some(chunk) = body.next().await else { break };
            buf.extend_from_slice(&chunk?);
            while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=nl).collect();
                let event: Value = serde_json::from_slice(&line)?;
                let obj = &event["object"];
                let name = obj
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if wanted.contains(name) && !finished.contains_key(name) && done(obj) {
                    finished.insert(name.to_string(), t0.elapsed());
                }
            }
        }
    }
    Ok(finished.into_values().collect())
}

/// Whether an object's `Ready` condition is `True`.
pub(super) fn ready(obj: &Value) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}
