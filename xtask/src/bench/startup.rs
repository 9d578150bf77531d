//! `cargo xtask bench startup`: how long `faros dev` takes until the README's tenant flow works —
//! the moment it prints its banner (hub serving with the workspace tree bootstrapped and the catalog
//! synced, demo tenant created, quickstart Ready) — cold (empty state directory) and on restart
//! (state from a clean stop). The baseline is the embedded kcp's own time to serve (`faros kcp` until
//! `/readyz` answers 200), measured the same way in the same run. Medians of [`Profile::startup_runs`] each.
//!
//! Targets: cold start under 1 s, restart under 0.5 s.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::profile::Profile;
use super::stats::{ms, percentile};

const DEADLINE: Duration = Duration::from_secs(120);

pub async fn run(p: &Profile) -> anyhow::Result<String> {
    let faros = p.faros.clone();
    let runs = p.startup_runs;
    let http = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .timeout(Duration::from_secs(2))
        .build()?;

    let mut kcp_cold = Vec::new();
    let mut kcp_warm = Vec::new();
    for _ in 0..runs {
        let dir = tempfile::tempdir()?;
        kcp_cold.push(kcp_to_serve(&faros, dir.path(), &http).await?);
        kcp_warm.push(kcp_to_serve(&faros, dir.path(), &http).await?);
    }
    let mut dev_cold = Vec::new();
    let mut dev_warm = Vec::new();
    for _ in 0..runs {
        let dir = tempfile::tempdir()?;
        dev_cold.push(dev_to_banner(&faros, dir.path())?);
        dev_warm.push(dev_to_banner(&faros, dir.path())?);
    }

    let median = |s: &mut Vec<Duration>| percentile(s, 50.0);
    let (kc, kw) = (median(&mut kcp_cold), median(&mut kcp_warm));
    let (dc, dw) = (median(&mut dev_cold), median(&mut dev_warm));
    println!("startup (median of {runs}, {}):", p.build());
    println!(
        "  embedded kcp alone to /readyz:  cold {:>7.1} ms   restart {:>7.1} ms   (baseline)",
        ms(kc),
        ms(kw)
    );
    println!(
        "  faros dev to ready (banner):    cold {:>7.1} ms   restart {:>7.1} ms",
        ms(dc),
        ms(dw)
    );
    let summary = format!(
        "summary: faros dev to ready vs the embedded kcp alone: cold {:.1}x, restart {:.1}x",
        dc.as_secs_f64() / kc.as_secs_f64(),
        dw.as_secs_f64() / kw.as_secs_f64()
    );
    println!(
        "  targets: cold < 1000 ms ({}), restart < 500 ms ({})",
        verdict(dc < Duration::from_secs(1)),
        verdict(dw < Duration::from_millis(500))
    );
    Ok(summary)
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "missed" }
}

/// Stops `child` with SIGTERM (a clean shutdown, as Kubernetes and Ctrl-C do) and waits for it.
fn terminate(mut child: Child) -> anyhow::Result<()> {
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .context("kill -TERM")?;
    child.wait()?;
    Ok(())
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Starts `faros kcp` on `state` and returns the time until `/readyz` answers 200.
async fn kcp_to_serve(faros: &Path, state: &Path, http: &reqwest::Client) -> anyhow::Result<Duration> {
    let port = free_port()?;
    let started = Instant::now();
    let mut child = Command::new(faros)
        .args(["kcp", "--listen", &format!("127.0.0.1:{port}"), "--state-dir"])
        .arg(state)
        .env("FAROS_LOG_LEVEL", "warn")
        .stdout(Stdio::null())
        .spawn()
        .context("starting faros kcp")?;
    let url = format!("https://127.0.0.1:{port}/readyz");
    let took = loop {
        if let Ok(r) = http.get(&url).send().await
            && r.status().is_success()
        {
            break started.elapsed();
        }
        if let Some(status) = child.try_wait()? {
            bail!("faros kcp exited early: {status}");
        }
        if started.elapsed() > DEADLINE {
            bail!("faros kcp did not serve within {DEADLINE:?}");
        }
        // Polling granularity bounds the measurement's resolution, not its accuracy.
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    terminate(child)?;
    Ok(took)
}

/// Starts `faros dev` on `state` and returns the time until it prints its banner.
fn dev_to_banner(faros: &Path, state: &Path) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut child = Command::new(faros)
        .args([
            "dev",
            "--kcp-port",
            "0",
            "--hub-port",
            "0",
            "--quickstart-port",
            "0",
            "--state-dir",
        ])
        .arg(state)
        .env("FAROS_LOG_LEVEL", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting faros dev")?;
    let stdout = child.stdout.take().context("stdout is piped")?;
    // Keep reading after the banner: faros dev prints more, and a closed pipe would kill it.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("faros dev is running") {
                let _ = tx.send(started.elapsed());
            }
        }
    });
    let Ok(took) = rx.recv_timeout(DEADLINE) else {
        let status = child.try_wait()?;
        bail!("faros dev did not announce itself within {DEADLINE:?} (exit: {status:?})");
    };
    terminate(child)?;
    Ok(took)
}
