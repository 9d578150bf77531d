//! Benchmarks of the embedded kcp, each next to a baseline from the same run:
//! - creates/s of 1 KiB ConfigMaps from 8 concurrent clients, with and without group commit, against
//!   redb's own durable-commit rate on this disk (the physical limit for one-commit-per-write);
//! - watch event latency p50/p99 with 100 watchers, against one GET round trip;
//! - list latency for 10k objects;
//! - resident memory at N objects (default 100k), read from /proc of the server process.

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

async fn watch_latency(f: &Arc<Faros>, p: &Profile) -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
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

async fn list_latency(f: &Arc<Faros>, p: &Profile) -> anyhow::Result<Vec<Duration>> {
    f.namespace("list").await?;
    f.create_many("list", "l", p.list_objects).await?;
    let mut samples = Vec::new();
    for _ in 0..p.list_samples {
        let started = Instant::now();
        let body = f
            .http
            .get(format!("{}/api/v1/namespaces/list/configmaps", f.url))
            .bearer_auth(&f.token)
            .send()
            .await?
            .bytes()
            .await?;
        samples.push(started.elapsed());
        let v: Value = serde_json::from_slice(&body)?;
        // Every namespace also holds what kcp puts there (kube-root-ca.crt): count the bench's own.
        let n = v["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter(|i| {
                        i.pointer("/metadata/name")
                            .and_then(Value::as_str)
                            .is_some_and(|n| n.starts_with("l-"))
                    })
                    .count()
            })
            .unwrap_or_default();
        if n != p.list_objects {
            bail!("list returned {n} of the bench's items, expected {}", p.list_objects);
        }
    }
    Ok(samples)
}

pub async fn run(root: &Path, p: &Profile) -> anyhow::Result<String> {
    let rss_objects = p.rss_objects;
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let target = root.join("target");
    std::fs::create_dir_all(&target)?;
    // Same disk as the project, so the baseline and the server share the physical limit.
    let dir = tempfile::tempdir_in(&target)?;
    println!(
        "faros embedded kcp benchmark ({}, {} CPUs)",
        p.build(),
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    );

    let limit = redb_commit_rate(&dir.path().join("baseline.redb"), p.redb_commits)?;
    println!("\nbaseline: redb durable commits/s (1 KiB, one per txn)      {limit:>10.0}");

    let mut rates = Vec::new();
    for (label, flags) in [
        ("group commit", vec![]),
        ("no group commit", vec!["--kcp-no-group-commit"]),
    ] {
        let args: Vec<&str> = Faros::CORE.iter().copied().chain(flags).collect();
        let f = Arc::new(Faros::start(p, dir.path().join(label.replace(' ', "-")), &args)?);
        f.namespace("bench").await?;
        let elapsed = f.create_many("bench", "c", p.creates).await?;
        let rate = p.creates as f64 / elapsed.as_secs_f64();
        rates.push((label, rate));
        println!(
            "creates/s, {CLIENTS} clients, {label:<16}                 {rate:>10.0}   ratio to redb limit {:.2}",
            rate / limit
        );
    }

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
    let mut list = list_latency(&f, p).await?;
    let (l50, l99) = (percentile(&mut list, 50.0), percentile(&mut list, 99.0));
    println!(
        "list of {} objects: p50 {:.1}ms  max {:.1}ms   ratio to target 100ms {:.2}",
        p.list_objects,
        ms(l50),
        ms(l99),
        ms(l99) / 100.0
    );
    drop(f);

    let f = Arc::new(Faros::start(p, dir.path().join("rss"), Faros::CORE)?);
    f.namespace("rss").await?;
    let idle = f.rss_mib()?;
    f.create_many("rss", "r", rss_objects).await?;
    let rss = f.rss_mib()?;
    println!("\nbaseline: RSS idle                                          {idle:>8.1}MiB");
    println!(
        "RSS at {rss_objects} objects                                    {rss:>8.1}MiB   ratio to target 200MiB {:.2}",
        rss / 200.0
    );

    let (_, gc) = rates[0];
    let (_, nogc) = rates[1];
    Ok(format!(
        "\nsummary: creates/s {:.2}x redb limit with group commit (target >= 1.00), {:.2}x without (target >= 0.50); watch p99 {:.2}ms (< 10); list {:.1}ms (< 100); RSS {:.0}MiB (< 200)",
        gc / limit,
        nogc / limit,
        ms(w99),
        ms(l99),
        rss
    ))
}
