//! `cargo xtask bench provider`: 100 Providers applied at once to `faros dev` (embedded kcp + hub
//! reconciler); time from apply to `Ready=True` per Provider (p50/p95) and kube API requests per
//! Provider provisioned. Baseline in the same run: 100 bare Workspaces applied at once, time to Ready
//! (what provisioning can never beat: each Provider needs a workspace). Five rounds of both bursts,
//! taking turns going first; the ratio reported is the median of the rounds' ratios.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::faros::Faros;
use super::profile::Profile;
use super::stats::{median, ms, percentile};
use super::watch::{ready, watch_until};

const TIMEOUT: Duration = Duration::from_secs(300);

/// How long the reconciler is given to go idle (its echo-queued passes done) before requests are
/// counted again, and how long the idle request rate is measured.
const SETTLE: Duration = Duration::from_secs(2);

/// The embedded kcp's request counter by HTTP method (`faros_kcp_apiserver_requests_total`, labelled
/// by method and code; watches are GETs).
async fn requests_by_method(f: &Faros) -> anyhow::Result<BTreeMap<String, u64>> {
    let text = f.kcp_metrics().await?;
    let mut by = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("faros_kcp_apiserver_requests_total{") else {
            continue;
        };
        let method = rest
            .split("method=\"")
            .nth(1)
            .and_then(|m| m.split('"').next())
            .unwrap_or("?");
        let n = rest
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        *by.entry(method.to_string()).or_insert(0) += n as u64;
    }
    Ok(by)
}

/// POSTs `bodies` to `collection` all at once.
async fn apply_all(f: &Arc<Faros>, collection: &str, bodies: Vec<Value>) -> anyhow::Result<()> {
    let tasks: Vec<_> = bodies
        .into_iter()
        .map(|b| {
            let (f, c) = (f.clone(), collection.to_string());
            tokio::spawn(async move { f.post(&c, &b).await })
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    Ok(())
}

pub async fn run(root: &Path, p: &Profile) -> anyhow::Result<String> {
    let count = p.providers;
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let target = root.join("target");
    let dir = tempfile::tempdir_in(&target)?;
    println!("faros provider provisioning benchmark ({}, {count} at once)", p.build());

    let f = Arc::new(Faros::start(p, dir.path().join("provider"), Faros::CORE)?);
    // Providers live in root:faros:system:providers, which exists once the reconciler bootstrapped.
    let providers = "/clusters/root:faros:system:providers/apis/admin.faros.sh/v1alpha1/providers";
    let started = Instant::now();
    while f
        .http
        .get(format!("{}{providers}", f.url))
        .bearer_auth(&f.token)
        .send()
        .await?
        .status()
        != 200
    {
        if started.elapsed() > TIMEOUT {
            bail!("the hub bootstrap did not finish");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The reconciler's Provider controller is watching once its lease is held; give it a moment to
    // settle, and take the idle request rate meanwhile (lease renewals) to subtract it later.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle_from = (Instant::now(), f.requests_total().await?);
    tokio::time::sleep(SETTLE).await;
    let idle_per_sec =
        f.requests_total().await?.saturating_sub(idle_from.1) as f64 / idle_from.0.elapsed().as_secs_f64();

    // Rounds of a bare-workspace burst and a Provider burst, the two taking turns going first: the
    // server holds more objects with every burst, and a one-off pair measured the baseline on the
    // emptier server every time. The ratio is each round's, and the suite reports their median.
    let mut rounds = Vec::with_capacity(p.provider_rounds);
    for round in 1..=p.provider_rounds {
        let bare_first = round % 2 == 1;
        let mut bare = None;
        if bare_first {
            bare = Some(bare_workspaces(&f, round, count).await?);
        }
        let providers = provider_burst(&f, providers, round, count, idle_per_sec).await?;
        let bare = match bare {
            Some(b) => b,
            None => bare_workspaces(&f, round, count).await?,
        };
        println!(
            "round {round} ({} first): {count} bare Workspaces to Ready p50 {:.1}ms p95 {:.1}ms; {count} Providers to \
             Ready=True p50 {:.1}ms p95 {:.1}ms; p95 {:.2}x; requests/provider {:.1}",
            if bare_first { "workspaces" } else { "Providers" },
            bare.p50_ms,
            bare.p95_ms,
            providers.p50_ms,
            providers.p95_ms,
            providers.p95_ms / bare.p95_ms.max(0.001),
            providers.per_provider,
        );
        println!("  {}", providers.settled);
        rounds.push((bare, providers));
    }
    if rounds.is_empty() {
        bail!("the profile asks for no provider rounds");
    }
    let median =
        |f: &dyn Fn(&(Burst, ProviderBurst)) -> f64| median(&rounds.iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0);
    let ratio = median(&|(b, pr)| pr.p95_ms / b.p95_ms.max(0.001));
    let (w95, p95) = (median(&|(b, _)| b.p95_ms), median(&|(_, pr)| pr.p95_ms));
    let per_provider = median(&|(_, pr)| pr.per_provider);
    let ws_per = median(&|(b, _)| b.per_workspace);
    println!(
        "\nmedians of {} rounds: bare Workspaces p95 {w95:.1}ms ({ws_per:.1} requests each), Providers p95 {p95:.1}ms \
         ({per_provider:.1} requests each), the rounds' p95 ratio {ratio:.2}x",
        rounds.len()
    );
    Ok(format!(
        "\nsummary: Provider p95 {p95:.0}ms = {ratio:.2}x the bare-workspace p95 (median of {} rounds' ratios, target <= 1.50), \
         {:.2} of the 1 s target; {per_provider:.1} kube requests per Provider (target <= 12)",
        rounds.len(),
        p95 / 1000.0,
    ))
}

/// One burst's times to Ready (ms) and the kube requests it made per object, the suite's own less.
struct Burst {
    p50_ms: f64,
    p95_ms: f64,
    per_workspace: f64,
}

/// A Provider burst: its times, and its requests per Provider at Ready and once the reconciler is idle.
struct ProviderBurst {
    p50_ms: f64,
    p95_ms: f64,
    per_provider: f64,
    /// The requests once idle, by method: a line for the output.
    settled: String,
}

/// The suite's own requests in a burst: one POST per object plus the watch and the two metric reads.
fn own_requests(count: usize) -> u64 {
    count as u64 + 3
}

/// `count` bare Workspaces applied at once in `root`, timed to Ready.
async fn bare_workspaces(f: &Arc<Faros>, round: usize, count: usize) -> anyhow::Result<Burst> {
    let collection = "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces";
    let names: Vec<String> = (0..count).map(|i| format!("bench-{round}-{i}")).collect();
    let before = f.requests_total().await?;
    let t0 = Instant::now();
    let bodies = names
        .iter()
        .map(|n| json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": n}, "spec": {}}))
        .collect();
    apply_all(f, collection, bodies).await?;
    let mut times = watch_until(f, collection, &names, t0, TIMEOUT, |o| {
        o.pointer("/status/phase").and_then(Value::as_str) == Some("Ready")
    })
    .await?;
    let requests = f.requests_total().await?.saturating_sub(before);
    Ok(Burst {
        p50_ms: ms(percentile(&mut times, 50.0)),
        p95_ms: ms(percentile(&mut times, 95.0)),
        per_workspace: requests.saturating_sub(own_requests(count)) as f64 / count as f64,
    })
}

/// `count` Providers applied at once, timed to `Ready=True`; their requests are read at the last
/// Ready and again once the reconciler is idle ([`SETTLE`] later, less the idle rate).
async fn provider_burst(
    f: &Arc<Faros>,
    collection: &str,
    round: usize,
    count: usize,
    idle_per_sec: f64,
) -> anyhow::Result<ProviderBurst> {
    let names: Vec<String> = (0..count).map(|i| format!("p{round}-{i}")).collect();
    let before = f.requests_total().await?;
    let by_method_before = requests_by_method(f).await?;
    let t0 = Instant::now();
    let bodies = names
        .iter()
        .map(|n| json!({"apiVersion": "admin.faros.sh/v1alpha1", "kind": "Provider", "metadata": {"name": n}, "spec": {}}))
        .collect();
    apply_all(f, collection, bodies).await?;
    let mut times = watch_until(f, collection, &names, t0, TIMEOUT, ready)
        .await
        .context("waiting for Providers")?;
    let after = f.requests_total().await?;
    let own = own_requests(count);
    let per_provider = (after.saturating_sub(before).saturating_sub(own)) as f64 / count as f64;
    // Requests after the last Ready count too (a second reconcile queued by a watch event, say): read
    // again once the reconciler is idle, less the idle rate (lease renewals) and the metric reads.
    tokio::time::sleep(SETTLE).await;
    let settled = requests_by_method(f).await?;
    let idle = idle_per_sec * t0.elapsed().as_secs_f64();
    let settled_total: u64 = settled.values().sum();
    let settled_per = (settled_total.saturating_sub(before + own) as f64 - idle).max(0.0) / count as f64;
    let mut breakdown = String::new();
    for (method, n) in &settled {
        let delta = n.saturating_sub(by_method_before.get(method).copied().unwrap_or(0));
        breakdown.push_str(&format!(" {method} {:.2}", delta as f64 / count as f64));
    }
    Ok(ProviderBurst {
        p50_ms: ms(percentile(&mut times, 50.0)),
        p95_ms: ms(percentile(&mut times, 95.0)),
        per_provider,
        settled: format!(
            "requests/provider once idle ({SETTLE:?} later, less {idle_per_sec:.1}/s idle): {settled_per:.1}; by method, \
             the benchmark's own included:{breakdown}"
        ),
    })
}
