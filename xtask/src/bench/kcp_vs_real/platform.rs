//! The platform half of `kcp-vs-real`: `faros dev` (embedded kcp, hub API, hub reconciler and the
//! quickstart provider in one process) against the same components as processes on real kcp,
//! started by the kcp e2e target's own plan ([`crate::e2e::kcp::start`]: the charts' flags, the
//! components' own kcp identities, quickstart's Provider and kubeconfig Secret). Per platform:
//! - time from start to quickstart Ready as the hub reports it: for `faros dev`, from spawning it
//!   to its banner, which it prints once the hub's catalog has quickstart Ready (and its demo
//!   tenant exists); for real kcp, from spawning kcp to the hub's `/api/providers` listing
//!   quickstart ready (kcp's start, `faros grant`, the reconciler and the hub, the Provider, the
//!   provider's `init` and `serve`, as the e2e runs them; files and certificates made before);
//! - N Providers applied at once to `Ready=True` (p50/p95), read from one watch as the `provider`
//!   suite reads them ([`super::super::watch`]);
//! - the platform's resident memory after that (every process of it);
//! - on real kcp, kcp's own figures on the same kcp ([`super::baseline`]): its start to `/readyz`,
//!   one bare provider workspace to Ready, and N of them created at once to Ready (before the
//!   Providers); and the reconciler's kube requests per Provider ([`super::requests`]).
//!
//! It measures; starting real kcp's platform is the e2e plan's job, not this module's.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use super::super::faros::Faros;
use super::super::profile::Profile;
use super::super::stats::{ms, percentile};
use super::super::watch::{ready, watch_until};
use super::baseline::workspaces_to_ready;
use super::requests;
use super::targets::OnRealKcp;
use crate::e2e::kcp::start;

/// Where Providers are applied (the reconciler provisions them from there).
const PROVIDERS: &str = "/clusters/root:faros:system:providers/apis/admin.faros.sh/v1alpha1/providers";
/// How long N Providers may take to be Ready.
const PROVIDERS_TIMEOUT: Duration = Duration::from_secs(300);
/// How often the e2e plan's gates are checked here (the e2e itself checks every second).
const GATE_POLL: Duration = Duration::from_millis(100);
/// How long the reconciler's idle request rate is measured (lease renewals), and how long it is
/// given after the last Provider's Ready to finish the passes their watch events queued before its
/// requests are read again.
const IDLE: Duration = Duration::from_secs(4);
const SETTLE: Duration = Duration::from_secs(2);

/// One platform's figures.
#[derive(Clone, Copy, Default)]
pub(super) struct PlatformFigures {
    pub to_quickstart_ready: Duration,
    pub providers_p50: Duration,
    pub providers_p95: Duration,
    /// Every process of the platform, after the Providers.
    pub rss_mib: f64,
    /// Real kcp's own figures on the platform's kcp, and the figures the targets judge.
    pub on_real: Option<OnRealKcp>,
}

/// Resident memory of process `pid`, in MiB.
fn rss_of(pid: u32) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .with_context(|| format!("no VmRSS for process {pid}"))
}

/// Applies `count` Providers at once as `f`'s admin and returns each one's time to `Ready=True`.
async fn providers_to_ready(f: &Arc<Faros>, count: usize) -> anyhow::Result<Vec<Duration>> {
    let names: Vec<String> = (0..count).map(|i| format!("bench-p{i}")).collect();
    let t0 = Instant::now();
    let posts: Vec<_> = names
        .iter()
        .map(|n| {
            let (f, body) = (
                f.clone(),
                json!({"apiVersion": "admin.faros.sh/v1alpha1", "kind": "Provider", "metadata": {"name": n}, "spec": {}}),
            );
            tokio::spawn(async move { f.post(PROVIDERS, &body).await })
        })
        .collect();
    for p in posts {
        p.await??;
    }
    watch_until(f, PROVIDERS, &names, t0, PROVIDERS_TIMEOUT, ready)
        .await
        .context("waiting for the Providers")
}

/// Both figures of N Providers, printed.
async fn providers(f: &Arc<Faros>, count: usize) -> anyhow::Result<(Duration, Duration)> {
    let mut times = providers_to_ready(f, count).await?;
    let (p50, p95) = (percentile(&mut times, 50.0), percentile(&mut times, 95.0));
    println!(
        "  {count} Providers at once to Ready  p50 {:>7.0}ms  p95 {:>7.0}ms",
        ms(p50),
        ms(p95)
    );
    Ok((p50, p95))
}

/// `faros dev` with quickstart, from a fresh state directory.
pub(super) async fn embedded(p: &Profile, state: PathBuf) -> anyhow::Result<PlatformFigures> {
    println!("\nfaros dev (embedded kcp, hub API, hub reconciler, quickstart in one process):");
    let profile = p.clone();
    let started = Instant::now();
    let f = tokio::task::spawn_blocking(move || {
        Faros::start(&profile, state, &["--hub-port", "0", "--quickstart-port", "0"])
    })
    .await??;
    let to_quickstart_ready = started.elapsed();
    println!("  start to quickstart Ready        {:>9.0}ms", ms(to_quickstart_ready));
    let f = Arc::new(f);
    let (providers_p50, providers_p95) = providers(&f, p.providers).await?;
    let rss_mib = f.rss_mib()?;
    println!("  RSS of the platform              {rss_mib:>9.1}MiB (one process)");
    Ok(PlatformFigures {
        to_quickstart_ready,
        providers_p50,
        providers_p95,
        rss_mib,
        on_real: None,
    })
}

/// Real kcp and the components as processes, by the kcp e2e plan, in `work`.
pub(super) async fn real(root: &Path, kcp: &Path, p: &Profile, work: PathBuf) -> anyhow::Result<PlatformFigures> {
    println!("\nreal kcp + faros-hub-reconciler + faros-hub-api + quickstart as processes (the kcp e2e's plan):");
    // The components beside the measured `faros` (`--faros` names a copy of a whole build's
    // binaries, so that a build from before a change runs the platform too).
    let faros_bin = match (p.smoke, p.faros.parent()) {
        (true, _) => root.join("target/debug"),
        (false, Some(dir)) => dir.to_path_buf(),
        (false, None) => super::super::profile::measured_dir(root),
    };
    let (root_dir, kcp) = (root.to_path_buf(), kcp.to_path_buf());
    let logs = work.join("logs");
    let mut platform =
        tokio::task::spawn_blocking(move || start::platform(&root_dir, &kcp, &faros_bin, &work, GATE_POLL))
            .await?
            .with_context(|| format!("starting the platform on real kcp (logs in {})", logs.display()))?;
    let to_quickstart_ready = platform.to_quickstart_ready;
    println!("  start to quickstart Ready        {:>9.0}ms", ms(to_quickstart_ready));
    let pem = std::fs::read(&platform.ca).with_context(|| format!("reading {}", platform.ca.display()))?;
    let http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem)?)
        .pool_max_idle_per_host(256)
        .build()?;
    let Some(kcp_child) = platform.take_kcp() else {
        bail!("the platform has no kcp process");
    };
    let f = Arc::new(Faros {
        hub: platform.hub_url.clone(),
        state: platform.logs.clone(),
        url: platform.kcp_url.clone(),
        token: platform.admin_token.clone(),
        http,
        child: kcp_child,
    });
    let token = platform.reconciler_token.clone();
    let mut one = workspaces_to_ready(&f, &token, "bench-one", 1).await?;
    let one_workspace = one.pop().unwrap_or_default();
    println!(
        "  kcp's own: start to /readyz      {:>9.0}ms, one provider workspace to Ready {:.0}ms",
        ms(platform.kcp_ready),
        ms(one_workspace)
    );
    let metrics = platform.reconciler_metrics.clone();
    let idle_from = (Instant::now(), requests::read(&f.http, &metrics).await?);
    tokio::time::sleep(IDLE).await;
    let idle = requests::read(&f.http, &metrics).await?;
    let idle_per_sec =
        (requests::sum(&idle).saturating_sub(requests::sum(&idle_from.1))) as f64 / idle_from.0.elapsed().as_secs_f64();
    let mut bare = workspaces_to_ready(&f, &token, "bench-ws", p.providers).await?;
    let (bare_p50, bare_p95) = (percentile(&mut bare, 50.0), percentile(&mut bare, 95.0));
    println!(
        "  kcp's own: {} bare provider workspaces at once to Ready  p50 {:>7.0}ms  p95 {:>7.0}ms",
        p.providers,
        ms(bare_p50),
        ms(bare_p95)
    );
    let (before, burst) = (requests::read(&f.http, &metrics).await?, Instant::now());
    let (providers_p50, providers_p95) = providers(&f, p.providers).await?;
    let at_ready = requests::per_provider(
        &before,
        &requests::read(&f.http, &metrics).await?,
        p.providers,
        idle_per_sec,
        burst.elapsed(),
    );
    tokio::time::sleep(SETTLE).await;
    let settled = requests::per_provider(
        &before,
        &requests::read(&f.http, &metrics).await?,
        p.providers,
        idle_per_sec,
        burst.elapsed(),
    );
    let by_verb: Vec<String> = settled.by_verb.iter().map(|(v, n)| format!("{v} {n:.2}")).collect();
    println!(
        "  reconciler's kube requests per Provider: {:.1} at the last Ready, {:.1} {SETTLE:?} later \
         (less {idle_per_sec:.2}/s idle); by verb: {}",
        at_ready.total,
        settled.total,
        by_verb.join(", ")
    );
    let mut rss_mib = f.rss_mib()?;
    for (_, pid) in platform.pids() {
        rss_mib += rss_of(pid)?;
    }
    println!("  RSS of the platform              {rss_mib:>9.1}MiB (kcp, hub reconciler, hub API, quickstart)");
    // The components first (as the plan stops them), then kcp with `f`.
    let on_real = OnRealKcp {
        kcp_ready: platform.kcp_ready,
        one_workspace,
        bare_p95,
        providers_p95,
        to_quickstart_ready,
        requests_per_provider: settled.total,
    };
    drop(platform);
    drop(f);
    Ok(PlatformFigures {
        to_quickstart_ready,
        providers_p50,
        providers_p95,
        rss_mib,
        on_real: Some(on_real),
    })
}
