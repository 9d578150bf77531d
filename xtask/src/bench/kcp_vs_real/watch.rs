//! Watch event latency for `kcp-vs-real`: N watchers of one namespace's ConfigMaps, opened from the
//! namespace list's resourceVersion, then E creates stamped with their send time; an event's latency
//! is its arrival minus that stamp. Every watcher must see every event: one that does not is
//! reported with why (its HTTP status, the Status of an `ERROR` event, or the server ending its
//! stream after some events), grouped, instead of a figure measured on the watchers that were left.
//!
//! Every watcher has its own connection, as N controllers would, and the creates go through the
//! caller's client, on yet another. One shared HTTP/2 connection cannot carry them: real kcp
//! allows 100 concurrent streams per connection (kube's secure serving default when
//! `--http2-max-streams-per-connection` is unset; kube-apiserver sets 1000, kcp does not), and
//! hyper queues a request beyond the server's limit instead of opening another connection, so with
//! 100 watchers on the connection the first create waited until every watch hit its
//! `timeoutSeconds` and ended without an event.
//!
//! It measures only; the servers are the caller's.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use serde_json::{Value, json};

use super::super::faros::Faros;

/// How one watcher ended.
#[derive(Debug, PartialEq)]
pub(super) enum Outcome {
    /// Every event arrived: their latencies.
    Complete(Vec<Duration>),
    /// The watch was refused: HTTP status and the Status message.
    Refused(u16, String),
    /// An `ERROR` event: the Status's code and reason.
    ErrorEvent(i64, String),
    /// The stream ended (or broke) after this many of the events.
    Ended { after: usize, why: String },
}

impl Outcome {
    /// The group a failed watcher is counted in.
    fn reason(&self) -> Option<String> {
        match self {
            Outcome::Complete(_) => None,
            Outcome::Refused(status, message) => Some(format!("HTTP {status}: {message}")),
            Outcome::ErrorEvent(code, reason) => Some(format!("ERROR event {code}: {reason}")),
            Outcome::Ended { after, why } => Some(format!("stream ended after {after} events ({why})")),
        }
    }
}

/// Every watcher's events, or why some watchers missed events ("k of N: reason", most common first).
pub(super) fn summarize(outcomes: Vec<Outcome>) -> Result<Vec<Duration>, String> {
    let total = outcomes.len();
    let mut failed: BTreeMap<String, usize> = BTreeMap::new();
    let mut latencies = Vec::new();
    for o in outcomes {
        match o.reason() {
            Some(r) => *failed.entry(r).or_default() += 1,
            None => {
                if let Outcome::Complete(l) = o {
                    latencies.extend(l);
                }
            }
        }
    }
    if failed.is_empty() {
        return Ok(latencies);
    }
    let mut groups: Vec<(String, usize)> = failed.into_iter().collect();
    groups.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Err(groups
        .iter()
        .map(|(r, n)| format!("{n} of {total} watchers: {r}"))
        .collect::<Vec<_>>()
        .join("; "))
}

/// What kube's watch cache says about watchers it closed itself: the sum of
/// `apiserver_terminated_watchers_total` (a watcher whose buffer stayed full, because its client
/// did not read fast enough, is closed without an `ERROR` event). `None` when the server has no
/// such metric (the embedded kcp, or real kcp before it closed any).
pub(super) async fn terminated_watchers(f: &Faros) -> Option<f64> {
    let text = f
        .http
        .get(format!("{}/metrics", f.url))
        .bearer_auth(&f.token)
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    let counts: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with("apiserver_terminated_watchers_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    (!counts.is_empty()).then(|| counts.iter().sum())
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

/// Reads one watch through `http` until `events` stamped events arrived, saying on `opened` once
/// its response headers (or its failure) are in: kube's watch handler sends them after it
/// registered the watch, so events created from then on reach it.
async fn watch(
    http: reqwest::Client,
    token: &str,
    url: &str,
    events: usize,
    opened: tokio::sync::mpsc::Sender<()>,
) -> Outcome {
    let resp = http.get(url).bearer_auth(token).send().await;
    let _ = opened.send(()).await;
    let resp = match resp {
        Ok(r) => r,
        Err(e) => {
            return Outcome::Ended {
                after: 0,
                why: format!("{e:#}"),
            };
        }
    };
    let status = resp.status().as_u16();
    if status != 200 {
        let body: Value = resp.json().await.unwrap_or_default();
        return Outcome::Refused(status, body["message"].as_str().unwrap_or_default().to_string());
    }
    let mut body = resp.bytes_stream();
    let mut buf = Vec::new();
    let mut latencies = Vec::with_capacity(events);
    while latencies.len() < events {
        let chunk = match body.next().await {
            Some(Ok(c)) => c,
            Some(Err(e)) => {
                return Outcome::Ended {
                    after: latencies.len(),
                    why: format!("{e:#}"),
                };
            }
            None => {
                return Outcome::Ended {
                    after: latencies.len(),
                    why: "no error event".into(),
                };
            }
        };
        buf.extend_from_slice(&chunk);
        while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=nl).collect();
            let received = now_nanos();
            let Ok(event) = serde_json::from_slice::<Value>(&line) else {
                continue;
            };
            if event["type"] == "ERROR" {
                let o = &event["object"];
                return Outcome::ErrorEvent(
                    o["code"].as_i64().unwrap_or_default(),
                    format!(
                        "{} {}",
                        o["reason"].as_str().unwrap_or_default(),
                        o["message"].as_str().unwrap_or_default()
                    ),
                );
            }
            if let Some(sent) = event
                .pointer("/object/metadata/annotations/bench~1sent")
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<u128>().ok())
            {
                latencies.push(Duration::from_nanos(received.saturating_sub(sent) as u64));
            }
        }
    }
    Outcome::Complete(latencies)
}

/// `watchers` watches of namespace `ns`'s ConfigMaps from its list's resourceVersion, each through
/// its own client from `connect` (its own connection), then `events` creates one after the other
/// through `f`'s; every watcher's outcome.
pub(super) async fn watch_latency(
    f: &Arc<Faros>,
    connect: fn() -> reqwest::Result<reqwest::Client>,
    ns: &str,
    watchers: usize,
    events: usize,
) -> anyhow::Result<Vec<Outcome>> {
    f.namespace(ns).await?;
    let collection = format!("{}/api/v1/namespaces/{ns}/configmaps", f.url);
    let list: Value = f
        .http
        .get(&collection)
        .bearer_auth(&f.token)
        .send()
        .await?
        .json()
        .await?;
    let rv = list
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("0")
        .to_string();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(watchers);
    let mut tasks = Vec::new();
    for _ in 0..watchers {
        let (http, token, ready) = (connect()?, f.token.clone(), ready_tx.clone());
        let url = format!("{collection}?watch=true&resourceVersion={rv}&timeoutSeconds=300");
        tasks.push(tokio::spawn(
            async move { watch(http, &token, &url, events, ready).await },
        ));
    }
    drop(ready_tx);
    for _ in 0..watchers {
        ready_rx.recv().await;
    }
    for i in 0..events {
        let body = json!({"metadata": {"name": format!("w-{i}"), "annotations": {"bench/sent": now_nanos().to_string()}}, "data": {"i": i.to_string()}});
        f.post(&format!("/api/v1/namespaces/{ns}/configmaps"), &body).await?;
    }
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(t.await?);
    }
    Ok(outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outcomes, and the latencies or the explanation they sum up to.
    type Case = (Vec<Outcome>, Result<Vec<Duration>, &'static str>);

    #[test]
    fn failed_watchers_are_grouped_by_why() {
        let ms = Duration::from_millis;
        let cases: Vec<Case> = vec![
            (
                vec![Outcome::Complete(vec![ms(1), ms(2)]), Outcome::Complete(vec![ms(3)])],
                Ok(vec![ms(1), ms(2), ms(3)]),
            ),
            (
                vec![
                    Outcome::Complete(vec![ms(1)]),
                    Outcome::ErrorEvent(410, "Expired too old".into()),
                    Outcome::ErrorEvent(410, "Expired too old".into()),
                    Outcome::Refused(429, "too many".into()),
                ],
                Err("2 of 4 watchers: ERROR event 410: Expired too old; 1 of 4 watchers: HTTP 429: too many"),
            ),
            (
                vec![Outcome::Ended {
                    after: 3,
                    why: "no error event".into(),
                }],
                Err("1 of 1 watchers: stream ended after 3 events (no error event)"),
            ),
        ];
        for (outcomes, want) in cases {
            assert_eq!(summarize(outcomes), want.map_err(String::from));
        }
    }
}
