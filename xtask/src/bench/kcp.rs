//! Benchmarks of the embedded kcp, each next to a baseline from the same run:
//! - creates/s of 1 KiB ConfigMaps from 1, 8, 64 and 256 concurrent clients with group commit (and from
//!   8 without), against redb's own durable-commit rate on this disk (the physical limit for
//!   one-commit-per-write);
//! - watch event latency p50/p99 with 100 watchers, against one GET round trip;
//! - list latency for 10k objects, JSON and protobuf, in one response and in pages of 500;
//! - resident memory at N objects (default 100k), read from /proc of the server process;
//! - restart time with N/2 objects: from starting the process on a filled state directory (left by
//!   a SIGKILL, as a crash would) to the embedded kcp answering `/readyz`, with the RSS right after.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::bail;
use futures::StreamExt;
use serde_json::{Value, json};

use super::faros::{CLIENTS, Faros};
use super::profile::Profile;
use super::stats::{ms, percentile};

/// redb's durable commit rate on this disk: sequential transactions of one 1 KiB insert each.
/// Concurrent clients of the creates/s measurements.
const CREATE_CLIENTS: [usize; 4] = [1, 8, 64, 256];

fn redb_commit_rate(path: &Path, commits: usize) -> anyhow::Result<f64> {
    const TABLE: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("bench");
    let db = redb::Database::create(path)?;
    let value = vec![b'x'; 1024];
    let started = Instant::now();
    for i in 0..commits as u64 {
        let txn = db.begin_write()?;
        {
            let mut table = txn.open_table(TABLE)?;
            table.insert(i, value.as_slice())?;
        }
        txn.commit()?;
    }
    Ok(commits as f64 / started.elapsed().as_secs_f64())
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

pub(super) async fn watch_latency(f: &Arc<Faros>, p: &Profile) -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
    let (watchers_n, events) = (p.watchers, p.watch_events);
    f.namespace("watch").await?;
    let list: Value = f
        .http
        .get(format!("{}/api/v1/namespaces/watch/configmaps", f.url))
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
    let mut watchers = Vec::new();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(watchers_n);
    for _ in 0..watchers_n {
        let (f, rv, ready) = (f.clone(), rv.clone(), ready_tx.clone());
        watchers.push(tokio::spawn(async move {
            let url = format!(
                "{}/api/v1/namespaces/watch/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=120",
                f.url
            );
            let resp = f.http.get(url).bearer_auth(&f.token).send().await?;
            let _ = ready.send(()).await;
            let mut body = resp.bytes_stream();
            let mut buf = Vec::new();
            let mut latencies = Vec::with_capacity(events);
            while latencies.len() < events {
                let Some(chunk) = body.next().await else {
                    bail!("watch ended early")
                };
                buf.extend_from_slice(&chunk?);
                while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=nl).collect();
                    let received = now_nanos();
                    let event: Value = serde_json::from_slice(&line)?;
                    if let Some(sent) = event
                        .pointer("/object/metadata/annotations/bench~1sent")
                        .and_then(Value::as_str)
                    {
                        let sent: u128 = sent.parse()?;
                        latencies.push(Duration::from_nanos(received.saturating_sub(sent) as u64));
                    }
                }
            }
            anyhow::Ok(latencies)
        }));
    }
    for _ in 0..watchers_n {
        ready_rx.recv().await;
    }
    let mut round_trips = Vec::new();
    for i in 0..events {
        let body = json!({"metadata": {"name": format!("w-{i}"), "annotations": {"bench/sent": now_nanos().to_string()}}, "data": {"i": i.to_string()}});
        f.post("/api/v1/namespaces/watch/configmaps", &body).await?;
        let started = Instant::now();
        f.http
            .get(format!("{}/api/v1/namespaces/watch/configmaps/w-{i}", f.url))
            .bearer_auth(&f.token)
            .send()
            .await?
            .bytes()
            .await?;
        round_trips.push(started.elapsed());
    }
    let mut all = Vec::new();
    for w in watchers {
        all.extend(w.await??);
    }
    Ok((all, round_trips))
}

/// How a list is asked for: JSON or protobuf, in one response or in pages.
#[derive(Clone, Copy)]
pub(super) struct ListForm {
    protobuf: bool,
    /// `limit` per page; `None` = unpaged.
    page: Option<usize>,
}

impl ListForm {
    /// Every form, paged by `limit` (smoke runs page their small collections too).
    fn all(limit: usize) -> [ListForm; 4] {
        [(false, None), (false, Some(limit)), (true, None), (true, Some(limit))]
            .map(|(protobuf, page)| ListForm { protobuf, page })
    }

    pub(super) fn label(self) -> String {
        let encoding = if self.protobuf { "protobuf" } else { "JSON" };
        match self.page {
            Some(limit) => format!("{encoding}, pages of {limit}"),
            None => format!("{encoding}, unpaged"),
        }
    }
}

/// `limit` of a paged list (client-go's pager asks for 500).
const LIST_PAGE: usize = 500;

/// Item count and continue token of one page, whatever its encoding.
struct Page {
    items: usize,
    /// Items named like the bench's own (JSON only; protobuf pages are checked by total count).
    ours: usize,
    continue_token: Option<String>,
}

/// The parts of a JSON list page the bench reads: the continue token and each item's name, borrowed
/// from the body. Every other member is skipped unparsed, as [`protobuf_page`] skims its pages: a
/// page read into a `serde_json::Value` tree allocated (then freed) some 30 000 nodes between two
/// requests, a few milliseconds of the client's own work that made JSON pages look slower than
/// protobuf ones with the server's work per page the same.
#[derive(serde::Deserialize)]
struct JsonPage<'a> {
    #[serde(borrow)]
    metadata: JsonListMeta<'a>,
    #[serde(default, borrow)]
    items: Vec<JsonItem<'a>>,
}

#[derive(serde::Deserialize)]
struct JsonListMeta<'a> {
    #[serde(default, rename = "continue", borrow)]
    continue_token: Option<std::borrow::Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
struct JsonItem<'a> {
    #[serde(borrow)]
    metadata: JsonItemMeta<'a>,
}

#[derive(serde::Deserialize)]
struct JsonItemMeta<'a> {
    #[serde(borrow)]
    name: std::borrow::Cow<'a, str>,
}

fn json_page(body: &[u8]) -> anyhow::Result<Page> {
    let page: JsonPage = serde_json::from_slice(body)?;
    Ok(Page {
        items: page.items.len(),
        ours: page.items.iter().filter(|i| i.metadata.name.starts_with("l-")).count(),
        continue_token: page
            .metadata
            .continue_token
            .filter(|c| !c.is_empty())
            .map(std::borrow::Cow::into_owned),
    })
}

/// Reads a protobuf field list: `(field number, length-delimited payload)`; varint fields are skipped.
fn pb_fields(mut buf: &[u8]) -> anyhow::Result<Vec<(u64, &[u8])>> {
    fn varint(buf: &mut &[u8]) -> anyhow::Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some((b, rest)) = buf.split_first() else {
                bail!("truncated varint")
            };
            *buf = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        bail!("varint too long")
    }
    let mut out = Vec::new();
    while !buf.is_empty() {
        let tag = varint(&mut buf)?;
        match tag & 7 {
            0 => {
                varint(&mut buf)?;
            }
            2 => {
                let len = usize::try_from(varint(&mut buf)?)?;
                if len > buf.len() {
                    bail!("truncated field");
                }
                let (payload, rest) = buf.split_at(len);
                out.push((tag >> 3, payload));
                buf = rest;
            }
            other => bail!("unexpected wire type {other}"),
        }
    }
    Ok(out)
}

/// A protobuf `<Kind>List`: `k8s\0`, a runtime.Unknown whose `raw` (2) holds ListMeta (1) and items (2).
fn protobuf_page(body: &[u8]) -> anyhow::Result<Page> {
    let unknown = body.strip_prefix(b"k8s\0").ok_or_else(|| {
        anyhow::anyhow!(
            "not a protobuf body: {:?}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        )
    })?;
    let raw = pb_fields(unknown)?
        .into_iter()
        .find(|(n, _)| *n == 2)
        .map(|(_, raw)| raw)
        .unwrap_or_default();
    let (mut items, mut continue_token) = (0, None);
    for (n, payload) in pb_fields(raw)? {
        match n {
            1 => {
                continue_token = pb_fields(payload)?
                    .into_iter()
                    .find(|(m, _)| *m == 3)
                    .map(|(_, c)| String::from_utf8_lossy(c).into_owned())
                    .filter(|c| !c.is_empty());
            }
            2 => items += 1,
            _ => {}
        }
    }
    Ok(Page {
        items,
        ours: 0,
        continue_token,
    })
}

/// One full list (every page of it): the time spent in requests (reading each page's continue
/// token is not counted: the client's parsing is not the server's latency), the items seen, and the
/// bench's own among them (JSON).
async fn list_once(f: &Faros, form: ListForm) -> anyhow::Result<(Duration, usize, usize)> {
    let (mut spent, mut items, mut ours) = (Duration::ZERO, 0, 0);
    let mut continue_token: Option<String> = None;
    loop {
        let mut url = format!("{}/api/v1/namespaces/list/configmaps", f.url);
        if let Some(limit) = form.page {
            url.push_str(&format!("?limit={limit}"));
            if let Some(c) = &continue_token {
                url.push_str(&format!("&continue={c}"));
            }
        }
        let accept = if form.protobuf {
            "application/vnd.kubernetes.protobuf, application/json"
        } else {
            "application/json"
        };
        let started = Instant::now();
        let resp = f
            .http
            .get(url)
            .bearer_auth(&f.token)
            .header("accept", accept)
            .send()
            .await?;
        if !resp.status().is_success() {
            bail!("list ({}): {} {}", form.label(), resp.status(), resp.text().await?);
        }
        let body = resp.bytes().await?;
        spent += started.elapsed();
        let page = if form.protobuf {
            protobuf_page(&body)?
        } else {
            json_page(&body)?
        };
        items += page.items;
        ours += page.ours;
        continue_token = page.continue_token;
        if form.page.is_none() || continue_token.is_none() {
            return Ok((spent, items, ours));
        }
    }
}

/// p50 and max of full lists of `p.list_objects` objects, per form.
pub(super) async fn list_latency(f: &Arc<Faros>, p: &Profile) -> anyhow::Result<Vec<(ListForm, Vec<Duration>)>> {
    f.namespace("list").await?;
    f.create_many("list", "l", p.list_objects, CLIENTS).await?;
    // Every namespace also holds what kcp puts there (kube-root-ca.crt): JSON counts the bench's own,
    // and every form must then see the same total.
    let forms = ListForm::all(if p.smoke { 50 } else { LIST_PAGE });
    let (_, total, ours) = list_once(f, forms[0]).await?;
    if ours != p.list_objects {
        bail!("list returned {ours} of the bench's items, expected {}", p.list_objects);
    }
    let mut results = Vec::new();
    for form in forms {
        let mut samples = Vec::new();
        for _ in 0..p.list_samples {
            let (spent, items, _) = list_once(f, form).await?;
            samples.push(spent);
            if items != total {
                bail!("list ({}) returned {items} items, expected {total}", form.label());
            }
        }
        results.push((form, samples));
    }
    Ok(results)
}

/// Restarts timed per restart measurement (the median is reported).
const RESTARTS: usize = 3;

/// Fills `state` with `objects` ConfigMaps, kills the server, then restarts it [`RESTARTS`] times:
/// per restart, the time from spawning the process to `/readyz` answering 200 and the RSS then.
async fn restart_times(p: &Profile, state: &Path, objects: usize) -> anyhow::Result<Vec<(Duration, f64)>> {
    let f = Arc::new(Faros::start(p, state.to_path_buf(), Faros::CORE)?);
    f.namespace("restart").await?;
    f.create_many("restart", "s", objects, CLIENTS).await?;
    drop(f);
    let mut runs = Vec::new();
    for _ in 0..RESTARTS {
        let started = Instant::now();
        let f = Faros::start(p, state.to_path_buf(), Faros::CORE)?;
        loop {
            let resp = f
                .http
                .get(format!("{}/readyz", f.url))
                .bearer_auth(&f.token)
                .send()
                .await;
            if resp.is_ok_and(|r| r.status().is_success()) {
                break;
            }
            if started.elapsed() > Duration::from_secs(120) {
                bail!("the embedded kcp was not ready 120s after a restart with {objects} objects");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        runs.push((started.elapsed(), f.rss_mib()?));
    }
    Ok(runs)
}

pub async fn run(root: &Path, p: &Profile) -> anyhow::Result<String> {
    let rss_objects = p.rss_objects;
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let target = root.join("target");
    std::fs::create_dir_all(&target)?;
    // Same disk as the project, so the baseline and the server share the physical limit.
    let dir = tempfile::tempdir_in(&target)?;
    println!(
        "faros embedded kcp benchmark ({}, {} CPUs, {})",
        p.build(),
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        p.faros.display()
    );

    let limit = redb_commit_rate(&dir.path().join("baseline.redb"), p.redb_commits)?;
    println!("\nbaseline: redb durable commits/s (1 KiB, one per txn)      {limit:>10.0}");

    let f = Arc::new(Faros::start(p, dir.path().join("group-commit"), Faros::CORE)?);
    let mut rates = Vec::new();
    for clients in CREATE_CLIENTS {
        let ns = format!("bench-{clients}");
        f.namespace(&ns).await?;
        let elapsed = f.create_many(&ns, "c", p.creates, clients).await?;
        let rate = p.creates as f64 / elapsed.as_secs_f64();
        rates.push((clients, rate));
        println!(
            "creates/s, {clients:>3} clients, group commit                 {rate:>10.0}   ratio to redb limit {:.2}",
            rate / limit
        );
    }
    drop(f);
    let args: Vec<&str> = Faros::CORE.iter().copied().chain(["--kcp-no-group-commit"]).collect();
    let f = Arc::new(Faros::start(p, dir.path().join("no-group-commit"), &args)?);
    f.namespace("bench").await?;
    let elapsed = f.create_many("bench", "c", p.creates, CLIENTS).await?;
    let nogc = p.creates as f64 / elapsed.as_secs_f64();
    println!(
        "creates/s, {CLIENTS:>3} clients, no group commit              {nogc:>10.0}   ratio to redb limit {:.2}",
        nogc / limit
    );
    drop(f);

    let f = Arc::new(Faros::start(p, dir.path().join("latency"), Faros::CORE)?);
    let (mut watch, mut rtt) = watch_latency(&f, p).await?;
    let (w50, w99, r50) = (
        percentile(&mut watch, 50.0),
        percentile(&mut watch, 99.0),
        percentile(&mut rtt, 50.0),
    );
    println!(
        "\nbaseline: GET round trip p50                               {:>9.2}ms",
        ms(r50)
    );
    println!(
        "watch latency, {} watchers, {} events: p50 {:.2}ms  p99 {:.2}ms   p99 ratio to target 10ms {:.2}",
        p.watchers,
        watch.len(),
        ms(w50),
        ms(w99),
        ms(w99) / 10.0
    );
    let lists = list_latency(&f, p).await?;
    let mut list_p50s = Vec::new();
    for (form, mut samples) in lists {
        let (l50, max) = (percentile(&mut samples, 50.0), percentile(&mut samples, 100.0));
        list_p50s.push(format!("{} {:.1}ms", form.label(), ms(l50)));
        println!(
            "list of {} objects, {:<22} p50 {:>6.1}ms  max {:>6.1}ms   ratio to target 25ms {:.2}",
            p.list_objects,
            form.label(),
            ms(l50),
            ms(max),
            ms(l50) / 25.0
        );
    }
    drop(f);

    let f = Arc::new(Faros::start(p, dir.path().join("rss"), Faros::CORE)?);
    f.namespace("rss").await?;
    let idle = f.rss_mib()?;
    f.create_many("rss", "r", rss_objects, CLIENTS).await?;
    let rss = f.rss_mib()?;
    let image = f.kcp_metric("faros_kcp_storage_image_bytes").await? / (1024.0 * 1024.0);
    // What the memory costs beyond the stored bytes themselves (index, allocator, history).
    let per_byte = (rss - idle) / image;
    println!("\nbaseline: RSS idle                                          {idle:>8.1}MiB");
    println!("baseline: memory image at {rss_objects} objects (keys, values) {image:>8.1}MiB");
    println!(
        "RSS at {rss_objects} objects                                    {rss:>8.1}MiB   ratio to target 200MiB {:.2}; \
         RSS growth per image byte {per_byte:.2}",
        rss / 200.0
    );

    drop(f);

    let restart_objects = rss_objects / 2;
    let mut restarts = restart_times(p, &dir.path().join("restart"), restart_objects).await?;
    let each: Vec<String> = restarts
        .iter()
        .map(|(t, rss)| format!("{:.0}ms/{rss:.0}MiB", ms(*t)))
        .collect();
    restarts.sort_by_key(|(t, _)| *t);
    let restart = restarts.get(restarts.len() / 2).map_or(0.0, |(t, _)| ms(*t));
    println!(
        "restart with {restart_objects} objects to /readyz, median of {RESTARTS} {restart:>9.0}ms   (each, with RSS then: {})",
        each.join(", ")
    );

    let rate_at = |n: usize| rates.iter().find(|(c, _)| *c == n).map_or(0.0, |(_, r)| *r);
    let creates: Vec<String> = rates.iter().map(|(c, r)| format!("{:.2}x at {c}", r / limit)).collect();
    Ok(format!(
        "\nsummary: creates/s vs redb limit with group commit {} (target >= 3.00 at 64: {:.2}), {:.2}x without at {CLIENTS} (target >= 0.50); watch p99 {:.2}ms (< 10); list p50 {} (< 25); RSS {:.0}MiB (< 200; its growth {per_byte:.2}x the {image:.0}MiB image); restart with {restart_objects} objects {restart:.0}ms",
        creates.join(", "),
        rate_at(64) / limit,
        nogc / limit,
        ms(w99),
        list_p50s.join(", "),
        rss
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_json_page_is_read_for_its_count_names_and_continue_token_alone() {
        // (body, items, the bench's own items, continue token)
        let cases: [(&str, usize, usize, Option<&str>); 5] = [
            (
                r#"{"kind":"ConfigMapList","metadata":{"resourceVersion":"7","continue":"abc"},"items":[{"metadata":{"name":"l-1","namespace":"list"},"data":{"payload":"xx"}},{"metadata":{"name":"kube-root-ca.crt"}}]}"#,
                2,
                1,
                Some("abc"),
            ),
            (r#"{"metadata":{"continue":""},"items":[]}"#, 0, 0, None),
            (r#"{"metadata":{},"items":[{"metadata":{"name":"l-2"}}]}"#, 1, 1, None),
            // A name with an escape cannot be borrowed from the body; it is read all the same.
            (
                r#"{"metadata":{},"items":[{"metadata":{"name":"l\u002d3"}}]}"#,
                1,
                1,
                None,
            ),
            (r#"{"metadata":{"continue":"x"}}"#, 0, 0, Some("x")),
        ];
        for (body, items, ours, continue_token) in cases {
            let page = json_page(body.as_bytes()).unwrap();
            assert_eq!(
                (page.items, page.ours, page.continue_token.as_deref()),
                (items, ours, continue_token),
                "{body}"
            );
        }
        assert!(json_page(b"{\"metadata\":{},\"items\":[{\"metadata\":{}}]}").is_err());
    }
}
