//! `cargo xtask bench scale`: growth curves. Tenant workspaces (organizations with team workspaces,
//! created through the hub API as users create them) and Providers are added to one `faros dev` in
//! steps of growing size (default 1k, 5k, 10k team workspaces in organizations of 10, then 100, 500,
//! 1 000 Providers); each step reports its wall time, time per created object against the first
//! step's (~1.0 = linear), and the RSS of the `faros dev` process tree. At each tenant size the warm
//! latency of `/api/me`, the organization list and an organization's workspace list is sampled for
//! a user who belongs to a few workspaces and for the platform admin, and Enable and Disable of the
//! quickstart provider (which `faros dev` runs here) by the organizations' owner. Targets (issue 29): linear or
//! better, RSS < 1 GiB at the largest size.
//!
//! This module sequences the steps and prints; planning, creating, sampling and reading memory are
//! its submodules'.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::faros::Faros;
use super::profile::Profile;

mod enable;
mod latency;
mod plan;
mod providers;
pub(super) mod rss;
mod tenants;

/// The user who creates every organization (and so administers them all).
const OWNER: &str = "scale-owner";
/// The user who is a member of a few workspaces only: the common case `/api/me` serves.
const MEMBER: &str = "scale-member";

const START_TIMEOUT: Duration = Duration::from_secs(300);

/// `faros dev`'s flags: the platform and the quickstart provider (for Enable, [`enable`]).
const ARGS: &[&str] = &["--hub-port", "0"];

/// Writes the two bench users into `faros dev`'s token file before it starts (it adds its own
/// dev user to an existing file); returns their tokens.
fn write_users(state: &Path) -> anyhow::Result<(String, String)> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    // Private from the start, as `faros dev` wants its state (it tightens and warns otherwise).
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(state)?;
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos();
    let owner = format!("scale-owner-{nonce:x}");
    let member = format!("scale-member-{nonce:x}");
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(state.join("tokens.csv"))?
        .write_all(format!("{owner},{OWNER},{OWNER}\n{member},{MEMBER},{MEMBER}\n").as_bytes())?;
    Ok((owner, member))
}

/// Waits until the hub serves tenants and the Provider collection exists (the reconciler's
/// bootstrap is done).
async fn wait_ready(f: &Faros) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        let hub = f.http.get(format!("{}/readyz", f.hub)).send().await.map(|r| r.status());
        let providers = f
            .http
            .get(format!("{}{}", f.url, providers::PROVIDERS))
            .bearer_auth(&f.token)
            .send()
            .await
            .map(|r| r.status());
        if matches!((hub, providers), (Ok(h), Ok(p)) if h == 200 && p == 200) {
            return Ok(());
        }
        if started.elapsed() > START_TIMEOUT {
            bail!("faros dev was not ready after {START_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The window over which [`settle`] judges the platform quiet.
const SETTLE_WINDOW: Duration = Duration::from_secs(1);
/// The longest [`settle`] waits in a measured run.
const SETTLE_MAX: Duration = Duration::from_secs(120);
/// Quiet: `faros dev` used less than this share of one core over a window.
const QUIET_SHARE: f64 = 0.1;

/// Whether `cpu` spent over `window` is quiet.
fn quiet(cpu: Duration, window: Duration) -> bool {
    cpu.as_secs_f64() < window.as_secs_f64() * QUIET_SHARE
}

/// Waits until `faros dev` (process `pid` and its children) is quiet; how long that took, or `None`
/// if it did not within `most`.
async fn settle(pid: u32, most: Duration) -> anyhow::Result<Option<Duration>> {
    let started = Instant::now();
    let mut last = rss::tree_usage(pid)?;
    while started.elapsed() < most {
        tokio::time::sleep(SETTLE_WINDOW).await;
        let now = rss::tree_usage(pid)?;
        if quiet(cpu_between(last, now), SETTLE_WINDOW) {
            return Ok(Some(started.elapsed()));
        }
        last = now;
    }
    Ok(None)
}

fn cpu_between(before: rss::Usage, after: rss::Usage) -> Duration {
    Duration::from_secs_f64((after.cpu_secs - before.cpu_secs).max(0.0))
}

fn latency_table(rows: &[(usize, latency::Sampled)]) -> String {
    let mut out = format!(
        "{:>12} {:<8} {:<32} {:>9} {:>9} {:>6} {:>10}\n",
        "workspaces", "caller", "route", "p50 ms", "p95 ms", "calls", "bytes"
    );
    for (size, s) in rows {
        out.push_str(&format!(
            "{size:>12} {:<8} {:<32} {:>9.1} {:>9.1} {:>6} {:>10}\n",
            s.who, s.path, s.p50_ms, s.p95_ms, s.calls, s.bytes
        ));
    }
    out
}

pub async fn run(root: &Path, p: &Profile) -> anyhow::Result<String> {
    let sizes = &p.scale;
    let tenant_steps = plan::tenant_steps(&sizes.workspaces, sizes.per_org)?;
    let provider_steps = plan::provider_steps(&sizes.providers)?;
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let dir = tempfile::tempdir_in(root.join("target"))?;
    let state = dir.path().join("scale");
    let (owner_token, member_token) = write_users(&state)?;
    println!(
        "faros growth curves ({}; team workspaces {:?} in organizations of {}, then Providers {:?}; \
         {} created at a time; faros {})",
        p.build(),
        sizes.workspaces,
        sizes.per_org,
        sizes.providers,
        tenants::IN_FLIGHT,
        p.faros.display()
    );

    let f = Faros::start(p, state, ARGS)?;
    wait_ready(&f).await?;
    let pid = f.child.id();
    let mut usage = rss::tree_usage(pid)?;
    let idle_rss = usage.rss_mib;
    println!("ready; RSS idle {idle_rss:.0} MiB");

    let owner = tenants::HubClient::new(&f, &owner_token);
    let mut tenant_rows = Vec::new();
    let mut latencies = Vec::new();
    for (n, step) in tenant_steps.iter().enumerate() {
        // From here, not from the last step's end: the latency sampling between is not this step's.
        usage = rss::tree_usage(pid)?;
        let t0 = Instant::now();
        owner
            .create(step)
            .await
            .with_context(|| format!("creating tenants up to {} workspaces", step.workspaces))?;
        let wall = t0.elapsed();
        let now = rss::tree_usage(pid)?;
        let row = plan::Row {
            size: step.workspaces,
            created: step.created(),
            wall,
            cpu: cpu_between(usage, now),
            rss_mib: now.rss_mib,
        };
        println!(
            "{} workspaces in {} organizations: {} created in {:.1?} (faros CPU {:.1?}), RSS {:.0} MiB",
            step.workspaces, step.orgs.end, row.created, wall, row.cpu, row.rss_mib
        );
        tenant_rows.push(row);
        if n == 0 {
            // The member belongs to one organization (org role only) and to one team workspace in
            // each of two others: a handful of memberships among thousands of workspaces.
            let last = step.orgs.end - 1;
            owner.grant_org(0, MEMBER).await?;
            owner.grant_workspace(last.min(1), 0, MEMBER).await?;
            owner.grant_workspace(last, step.per_org - 1, MEMBER).await?;
        }
        // Warm latency is the platform's at rest: the hub's index and kcp's controllers catch up
        // on thousands of new workspaces after the last create answered, and sampling meanwhile
        // measures that backlog instead.
        // The smoke run only checks that the suite runs: it waits briefly.
        let most = if p.smoke { SETTLE_WINDOW * 3 } else { SETTLE_MAX };
        match settle(pid, most).await? {
            Some(after) => {
                println!("  quiet {after:.1?} after the last create (faros CPU under {QUIET_SHARE} of a core)")
            }
            None => println!("  not quiet within {most:?} of the last create: latency sampled under load"),
        }
        let org0 = format!("/api/orgs/{}/workspaces", tenants::org_name(0));
        for (who, token) in [("member", member_token.as_str()), ("admin", f.token.as_str())] {
            for path in ["/api/me", "/api/orgs", org0.as_str()] {
                let s = latency::sample(&f, who, token, path, sizes.latency_calls, sizes.latency_budget).await?;
                println!(
                    "  {who:<7} {path:<32} p50 {:>8.1}ms  p95 {:>8.1}ms  ({} calls, {} bytes)",
                    s.p50_ms, s.p95_ms, s.calls, s.bytes
                );
                latencies.push((step.workspaces, s));
            }
        }
        for s in enable::sample(&f, &owner_token, step, sizes.latency_calls, sizes.latency_budget).await? {
            println!(
                "  {:<7} {:<32} p50 {:>8.1}ms  p95 {:>8.1}ms  ({} calls)",
                s.who, s.path, s.p50_ms, s.p95_ms, s.calls
            );
            latencies.push((step.workspaces, s));
        }
    }
    let retries = owner.retries.load(std::sync::atomic::Ordering::Relaxed);

    let mut provider_rows = Vec::new();
    // Latency sampling between tenant steps is not the next step's work.
    usage = rss::tree_usage(pid)?;
    for step in provider_steps {
        let size = step.end;
        let created = step.len();
        let wall = providers::apply_step(&f, step)
            .await
            .with_context(|| format!("applying Providers up to {size}"))?;
        let now = rss::tree_usage(pid)?;
        let row = plan::Row {
            size,
            created,
            wall,
            cpu: cpu_between(usage, now),
            rss_mib: now.rss_mib,
        };
        usage = now;
        println!(
            "{size} Providers: {created} Ready in {wall:.1?} (faros CPU {:.1?}), RSS {:.0} MiB",
            row.cpu, row.rss_mib
        );
        provider_rows.push(row);
    }

    println!(
        "\ntenants (organizations and team workspaces through the hub API; 'created' counts both), \
         RSS idle {idle_rss:.0} MiB, {retries} creations retried after a 503:"
    );
    print!("{}", plan::table("workspaces", "item", &tenant_rows));
    println!(
        "\nwarm latency at each tenant size (member: 1 org + 2 workspaces; admin: the platform admin; \
         owner: the organizations' creator, enabling in the step's organizations):"
    );
    print!("{}", latency_table(&latencies));
    println!("\nProviders (applied to kcp, Ready=True seen on one watch; tenants above still present):");
    print!("{}", plan::table("providers", "provider", &provider_rows));

    let tenant_growth = plan::growth(&tenant_rows);
    let provider_growth = plan::growth(&provider_rows);
    let me_member = latencies
        .iter()
        .rev()
        .find(|(_, s)| s.who == "member" && s.path == "/api/me")
        .map_or(0.0, |(_, s)| s.p50_ms);
    let largest_rss = provider_rows
        .iter()
        .chain(&tenant_rows)
        .map(|r| r.rss_mib)
        .fold(0.0, f64::max);
    Ok(format!(
        "\nsummary: per-item time at the largest step vs the first: tenants {:.2}x, Providers {:.2}x \
         (~1.0 = linear); member /api/me p50 {me_member:.1}ms at {} workspaces; largest RSS {largest_rss:.0} MiB \
         ({:.2} of the 1 GiB target)",
        tenant_growth.last().copied().unwrap_or(f64::NAN),
        provider_growth.last().copied().unwrap_or(f64::NAN),
        sizes.workspaces.last().copied().unwrap_or(0),
        largest_rss / 1024.0
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_is_under_a_tenth_of_a_core() {
        let ms = Duration::from_millis;
        for (cpu, window, want) in [
            (ms(0), ms(1000), true),
            (ms(99), ms(1000), true),
            (ms(100), ms(1000), false),
            (ms(1500), ms(1000), false),
            (ms(150), ms(2000), true),
        ] {
            assert_eq!(quiet(cpu, window), want, "{cpu:?} over {window:?}");
        }
    }
}
