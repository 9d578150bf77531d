//! `cargo xtask bench proxy-instructions`: what one proxied request costs in instructions, counted
//! by callgrind (valgrind), for the hub and for nginx, each with the upstream it forwards to.
//!
//! The `proxy` suite's requests/s share two cores between wrk, the proxy and the upstream, and on
//! a shared VM they vary by ±10 % from run to run, more than most changes to the hub move them.
//! Instruction counts do not vary: the same build under the same requests counts the same within a
//! fraction of a percent, so a change of a few hundred instructions per request shows. They are not
//! time (the kernel's TCP path, cache misses and SHA instructions, which valgrind runs in software,
//! are not counted alike), so the `proxy` suite stays the measure of the target; this one says where
//! a change moved the hub's own work, and how far that work is from nginx's.
//!
//! Both run under callgrind with instrumentation off until the load starts, then the counters are
//! zeroed, wrk runs a fixed time and the counters are dumped: first through the hub, then through
//! nginx (one process, master and worker in one). The hub and the quickstart upstream share
//! `faros dev`'s process; its threads are told apart by what they ran (the hub's connection threads
//! run `faros_hub_api::server::connection`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, anyhow, bail};

use super::callgrind_groups::{Group, SelfCost};
use super::faros::Faros;
use super::profile::Profile;
use super::proxy::{free_port, nginx_under, wait_ok, wrk_with};

/// wrk's load while counting: one thread, four connections, as the hub's connection threads and
/// nginx's worker each serve several.
const WRK: [&str; 4] = ["-t1", "-c4", "-d", "10s"];

/// The symbol of the hub's connection threads (`faros_hub_api::server::connection`).
const HUB_THREAD_SYMBOL: &str = "faros_hub_api::server::connection";

/// Instructions one dump of a callgrind output counted, per thread file.
#[derive(Debug, Default)]
struct Dump {
    threads: Vec<Thread>,
}

/// One thread's file of a dump, read once.
#[derive(Debug)]
struct Thread {
    path: PathBuf,
    instructions: u64,
    /// Whether the thread ran the hub's connections.
    hub: bool,
    cost: SelfCost,
}

impl Dump {
    fn total(&self) -> u64 {
        self.threads.iter().map(|t| t.instructions).sum()
    }

    fn hub(&self) -> u64 {
        self.threads.iter().filter(|t| t.hub).map(|t| t.instructions).sum()
    }

    /// The self cost of the hub's connection threads only, or of all of them.
    fn self_cost(&self, hub_only: bool) -> SelfCost {
        let mut cost = SelfCost::default();
        for thread in self.threads.iter().filter(|t| t.hub || !hub_only) {
            cost.add(&thread.cost);
        }
        cost
    }
}

/// The instructions in one callgrind output file: its `totals:` line (events since the last zero),
/// else its `summary:` line.
fn instructions(text: &str) -> Option<u64> {
    let line = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
    };
    line("totals:").or_else(|| line("summary:"))
}

/// Dump number `n` of the callgrind output `out`: `<out>.<n>` or, one per thread,
/// `<out>.<n>-<thread>`.
fn read_dump(out: &Path, n: u32) -> anyhow::Result<Dump> {
    let dir = out
        .parent()
        .ok_or_else(|| anyhow!("{} has no directory", out.display()))?;
    let base = out
        .file_name()
        .and_then(|f| f.to_str())
        .ok_or_else(|| anyhow!("{} has no file name", out.display()))?;
    let (whole, per_thread) = (format!("{base}.{n}"), format!("{base}.{n}-"));
    let mut dump = Dump::default();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|f| f.to_str()) else {
            continue;
        };
        if name != whole && !name.starts_with(&per_thread) {
            continue;
        }
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let instructions = instructions(&text).ok_or_else(|| anyhow!("{}: no totals", path.display()))?;
        let mut cost = SelfCost::default();
        cost.add_file(&text);
        dump.threads.push(Thread {
            hub: text.contains(HUB_THREAD_SYMBOL),
            path,
            instructions,
            cost,
        });
    }
    if dump.threads.is_empty() {
        bail!("callgrind wrote no dump {n} of {}", out.display());
    }
    dump.threads.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(dump)
}

fn valgrind(out: &Path, per_thread: bool) -> Vec<String> {
    vec![
        "valgrind".into(),
        "--tool=callgrind".into(),
        "--instr-atstart=no".into(),
        format!("--separate-threads={}", if per_thread { "yes" } else { "no" }),
        format!("--callgrind-out-file={}", out.display()),
        // Valgrind's own report goes beside the counts, not into the suite's output.
        format!("--log-file={}.log", out.display()),
    ]
}

/// `callgrind_control <args> <pid>`: `-i on` (instrument), `-z` (zero), `-d` (dump; returns once
/// written).
fn control(pid: u32, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("callgrind_control")
        .args(args)
        .arg(pid.to_string())
        .output()
        .context("running callgrind_control (apt-get install -y valgrind)")?;
    if !out.status.success() {
        bail!(
            "callgrind_control {args:?} {pid}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

fn per_request(instructions: u64, requests: u64) -> f64 {
    instructions as f64 / requests.max(1) as f64
}

pub async fn run(root: &Path, p: &Profile) -> anyhow::Result<String> {
    if p.smoke {
        // Callgrind runs a debug build a hundred times slower than CI's budget allows; the parsing is
        // unit-tested, the servers and wrk are the `proxy` suite's.
        return Ok("skipped: instruction counts are taken of optimized builds only".into());
    }
    if Command::new("valgrind").arg("--version").output().is_err() {
        bail!("the proxy-instructions benchmark needs valgrind (apt-get install -y valgrind)");
    }
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let dir = tempfile::tempdir_in(root.join("target"))?;
    let faros_out = dir.path().join("faros.callgrind");
    let nginx_out = dir.path().join("nginx.callgrind");
    let backend_port = free_port()?;
    let backend_port_arg = backend_port.to_string();
    let f = Faros::start_under(
        p,
        dir.path().join("state"),
        &["--hub-port", "0", "--quickstart-port", &backend_port_arg],
        &valgrind(&faros_out, true),
    )?;
    let faros_pid = f.child.id();
    let via_hub = format!("{}/services/providers/quickstart/healthz", f.hub);
    wait_ok(&f.http, &format!("http://127.0.0.1:{backend_port}/healthz"), None).await?;
    wait_ok(&f.http, &via_hub, Some(&f.token)).await?;
    let nginx_port = free_port()?;
    let nginx_dir = dir.path().join("nginx");
    std::fs::create_dir_all(&nginx_dir)?;
    let set_headers = super::proxy_headers::directives(&super::proxy_headers::for_the_admin(&f).await?)?;
    let nginx = nginx_under(
        &nginx_dir,
        &f.state,
        nginx_port,
        &format!("127.0.0.1:{backend_port}"),
        &set_headers,
        &valgrind(&nginx_out, false),
    )?;
    let nginx_pid = nginx.child.id();
    let via_nginx = format!("https://localhost:{nginx_port}/healthz");
    wait_ok(&f.http, &via_nginx, None).await?;

    let auth = vec![format!("Authorization: Bearer {}", f.token)];
    let warm = ["-t1", "-c4", "-d", "3s"];
    control(faros_pid, &["-i", "on"])?;
    control(nginx_pid, &["-i", "on"])?;
    // Warm with instrumentation on: caches, pools and callgrind's own translations settle first.
    wrk_with(&warm, &via_hub, &auth, None)?;
    wrk_with(&warm, &via_nginx, &[], None)?;

    control(faros_pid, &["-z"])?;
    let hub_requests = wrk_with(&WRK, &via_hub, &auth, None)?.requests;
    control(faros_pid, &["-d"])?;
    control(faros_pid, &["-z"])?;
    control(nginx_pid, &["-z"])?;
    let nginx_requests = wrk_with(&WRK, &via_nginx, &[], None)?.requests;
    control(nginx_pid, &["-d"])?;
    control(faros_pid, &["-d"])?;

    let behind_hub = read_dump(&faros_out, 1)?;
    let behind_nginx = read_dump(&faros_out, 2)?;
    let nginx_dump = read_dump(&nginx_out, 1)?;
    drop(nginx);
    drop(f);

    let hub = per_request(behind_hub.hub(), hub_requests);
    let hub_upstream = per_request(behind_hub.total() - behind_hub.hub(), hub_requests);
    let ngx = per_request(nginx_dump.total(), nginx_requests);
    let ngx_upstream = per_request(behind_nginx.total(), nginx_requests);
    println!(
        "instructions per proxied request (callgrind; wrk {}; {} requests through the hub, {} through nginx)\n",
        WRK.join(" "),
        hub_requests,
        nginx_requests
    );
    let row = |name: &str, v: f64| println!("{name:<48} {v:>10.0}");
    row("nginx (HTTPS, one process)", ngx);
    row("  faros dev behind nginx (upstream, background)", ngx_upstream);
    row("hub's connection threads", hub);
    row("  faros dev's other threads (upstream, background)", hub_upstream);
    println!();
    print_groups(&behind_hub, hub_requests, &nginx_dump, nginx_requests);
    Ok(format!(
        "summary: instructions per request, hub's threads {hub:.0} vs nginx {ngx:.0}: {:.2}x; with the upstream: hub path {:.0} vs nginx path {:.0}: {:.2}x (the upstream, which reads the same headers from both, {:+.0} behind the hub)",
        hub / ngx,
        hub + hub_upstream,
        ngx + ngx_upstream,
        (hub + hub_upstream) / (ngx + ngx_upstream),
        hub_upstream - ngx_upstream,
    ))
}

/// What the hub's connection threads and nginx ran, by kind of work, per request; and the hub's
/// own functions that ran the most.
fn print_groups(hub_dump: &Dump, hub_requests: u64, nginx_dump: &Dump, nginx_requests: u64) {
    let hub = hub_dump.self_cost(true);
    let nginx = nginx_dump.self_cost(false);
    let nginx_groups: std::collections::HashMap<Group, u64> = nginx.by_group().into_iter().collect();
    let hub_groups = hub.by_group();
    println!(
        "{:<48} {:>10} {:>10}",
        "by kind of work (self cost per request)", "hub", "nginx"
    );
    let mut shown = std::collections::HashSet::new();
    let row = |g: Group, h: u64, n: u64| {
        println!(
            "  {:<46} {:>10.0} {:>10.0}",
            g.label(),
            per_request(h, hub_requests),
            per_request(n, nginx_requests)
        )
    };
    for (g, h) in &hub_groups {
        shown.insert(*g);
        row(*g, *h, nginx_groups.get(g).copied().unwrap_or(0));
    }
    for (g, n) in nginx.by_group() {
        if !shown.contains(&g) {
            row(g, 0, n);
        }
    }
    println!(
        "  {:<46} {:>10.0} {:>10.0}",
        "all",
        per_request(hub.total(), hub_requests),
        per_request(nginx.total(), nginx_requests)
    );
    println!("\nthe hub's own functions that ran the most (self cost per request)");
    for (function, cost) in hub.top(Group::Proxy, 8) {
        let name: String = function.chars().take(100).collect();
        println!("  {:>8.0}  {name}", per_request(cost, hub_requests));
    }
    println!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_totals_then_summary() {
        assert_eq!(instructions("events: Ir\nsummary: 12\ntotals: 34\n"), Some(34));
        assert_eq!(instructions("events: Ir\nsummary: 12\n"), Some(12));
        assert_eq!(instructions("events: Ir\n"), None);
    }

    #[test]
    fn reads_one_dump_per_thread_and_finds_the_hub_threads() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("x.callgrind");
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write("x.callgrind.1-01", "fn=(1) tokio::park\n3 10\ntotals: 10\n");
        write(
            "x.callgrind.1-02",
            "fn=(2) faros_hub_api::server::connection::{{closure}}\n5 100\ntotals: 100\n",
        );
        write(
            "x.callgrind.1-03",
            "fn=(2) faros_hub_api::server::connection::{{closure}}\n5 200\ntotals: 200\n",
        );
        write("x.callgrind.2-01", "totals: 7\n");
        write("x.callgrind", "");
        let one = read_dump(&out, 1).unwrap();
        assert_eq!((one.total(), one.hub(), one.threads.len()), (310, 300, 3));
        // Self costs come from the same reading: the hub's threads alone, or every thread.
        assert_eq!((one.self_cost(true).total(), one.self_cost(false).total()), (300, 310));
        let two = read_dump(&out, 2).unwrap();
        assert_eq!((two.total(), two.hub()), (7, 0));
        assert!(read_dump(&out, 3).is_err());
        // Without per-thread files: the dump is one file.
        write("y.callgrind.1", "summary: 5\ntotals: 5\n");
        assert_eq!(read_dump(&dir.path().join("y.callgrind"), 1).unwrap().total(), 5);
    }
}
