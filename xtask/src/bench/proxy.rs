//! `cargo xtask bench proxy`: the hub's backend proxy under load, with wrk (Debian package) as the load
//! generator. In one run, against the same upstream (the quickstart backend's `/healthz`):
//! direct (plain HTTP), through the hub (`/services/providers/quickstart/healthz`, HTTPS, authenticated),
//! through nginx (Debian package) as an HTTPS reverse proxy with the same certificate, forwarding the
//! same headers the hub adds ([`super::proxy_headers`]), and through
//! the bare stack's proxy ([`super::bare_proxy`]: the hub's libraries without the hub's work).
//! Also the system calls the hub's and nginx's threads make per unloaded request
//! ([`super::proxy_syscalls`]), and heartbeats/s with a warm TokenReview cache. The one-connection
//! rounds run with wrk and the servers on separate CPUs ([`super::placement`]), the two proxies
//! taking turns to go first, and count each proxy's CPU time per request ([`super::proxy_cpu`]).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use serde_json::Value;

use super::faros::Faros;
use super::placement::Placement;
use super::profile::Profile;
use super::proxy_cpu::{Spent, Threads};
use super::stats::median;

const CONNECTIONS: &str = "32";

pub(super) struct Result {
    pub(super) requests: u64,
    pub(super) requests_per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
}

pub(super) fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// A wrk script that only adds a `done` hook printing the median and 99th percentile latency in
/// microseconds ("latency-us 50 87.0"): wrk's own summary rounds them to 10 µs, coarser than the
/// difference between two proxies' added latency. Without `request` or `response` functions wrk
/// still sends its prepared request, so the script costs nothing per request.
const LATENCY_SCRIPT: &str = r#"done = function(summary, latency, requests)
  for _, p in ipairs({50, 99}) do
    io.write(string.format("latency-us %d %.1f\n", p, latency:percentile(p)))
  end
end
"#;

/// The `latency-us` line of [`LATENCY_SCRIPT`] for percentile `pct`, in milliseconds.
fn parse_latency_us(text: &str, pct: u32) -> Option<f64> {
    text.lines().find_map(|l| {
        let mut words = l.strip_prefix("latency-us ")?.split_whitespace();
        let p: u32 = words.next()?.parse().ok()?;
        let us: f64 = words.next()?.parse().ok()?;
        (p == pct).then_some(us / 1000.0)
    })
}

/// wrk's latency figures ("50%    1.23ms") in milliseconds.
fn parse_latency(text: &str, pct: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.trim_start().starts_with(pct))?;
    let value = line.split_whitespace().nth(1)?;
    let (num, unit) = value.split_at(value.find(|c: char| c.is_alphabetic())?);
    let n: f64 = num.parse().ok()?;
    Some(match unit {
        "us" => n / 1000.0,
        "ms" => n,
        "s" => n * 1000.0,
        _ => return None,
    })
}

/// wrk's count of completed requests ("  12345 requests in 5.00s, 1.23MB read").
fn parse_requests(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.trim().split_once(" requests in ").and_then(|(n, _)| n.parse().ok()))
}

/// Saturating load (`-t2 -c32`): requests/s. Latency here is mostly queueing behind other requests.
fn wrk(d: &str, url: &str, headers: &[String], script: Option<&Path>) -> anyhow::Result<Result> {
    wrk_with(&["-t2", "-c", CONNECTIONS, "-d", d], url, headers, script)
}

/// One connection, one request at a time: the latency a request pays for each hop, without queueing;
/// wrk on the placement's client CPU.
fn wrk_unloaded(d: &str, url: &str, headers: &[String], placement: Option<&Placement>) -> anyhow::Result<Result> {
    wrk_run(
        placement.map(|p| p.client.as_str()),
        &["-t1", "-c1", "-d", d],
        url,
        headers,
        None,
    )
}

/// The round with the median hub throughput (the hub is each round's last).
fn median_round<const N: usize>(mut rounds: Vec<[Result; N]>) -> Option<[Result; N]> {
    rounds.sort_by(|a, b| a[N - 1].requests_per_sec.total_cmp(&b[N - 1].requests_per_sec));
    let mid = rounds.len() / 2;
    rounds.into_iter().nth(mid)
}

/// What the two proxies add to the direct path's unloaded latency, in milliseconds: one round's,
/// or the median of several rounds' (each figure's own median; the difference is the median of the
/// rounds' differences, so a round that moved both proxies alike moves it little).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Added {
    hub_p50: f64,
    nginx_p50: f64,
    hub_p99: f64,
    nginx_p99: f64,
    hub_minus_nginx_p50: f64,
}

impl Added {
    fn of(direct: &Result, nginx: &Result, hub: &Result) -> Self {
        Self {
            hub_p50: hub.p50_ms - direct.p50_ms,
            nginx_p50: nginx.p50_ms - direct.p50_ms,
            hub_p99: hub.p99_ms - direct.p99_ms,
            nginx_p99: nginx.p99_ms - direct.p99_ms,
            hub_minus_nginx_p50: hub.p50_ms - nginx.p50_ms,
        }
    }

    fn median(rounds: &[Added]) -> Option<Self> {
        // The lower middle for an even count, as `median_round` takes.
        let median = |f: fn(&Added) -> f64| median(&rounds.iter().map(f).collect::<Vec<_>>());
        Some(Self {
            hub_p50: median(|a| a.hub_p50)?,
            nginx_p50: median(|a| a.nginx_p50)?,
            hub_p99: median(|a| a.hub_p99)?,
            nginx_p99: median(|a| a.nginx_p99)?,
            hub_minus_nginx_p50: median(|a| a.hub_minus_nginx_p50)?,
        })
    }
}

pub(super) fn wrk_with(args: &[&str], url: &str, headers: &[String], script: Option<&Path>) -> anyhow::Result<Result> {
    wrk_run(None, args, url, headers, script)
}

/// [`wrk_with`], on CPU `cpu` when given.
fn wrk_run(
    cpu: Option<&str>,
    args: &[&str],
    url: &str,
    headers: &[String],
    script: Option<&Path>,
) -> anyhow::Result<Result> {
    let mut cmd = match cpu {
        Some(cpu) => {
            let mut c = Command::new("taskset");
            c.args(["-c", cpu, "wrk"]);
            c
        }
        None => Command::new("wrk"),
    };
    cmd.args(args).arg("--latency");
    for h in headers {
        cmd.args(["-H", h]);
    }
    // Kept until wrk has read it.
    let mut latency_script = None;
    match script {
        Some(s) => {
            cmd.arg("-s").arg(s);
        }
        None => {
            let mut f = tempfile::NamedTempFile::new().context("writing wrk's latency script")?;
            std::io::Write::write_all(&mut f, LATENCY_SCRIPT.as_bytes())?;
            cmd.arg("-s").arg(f.path());
            latency_script = Some(f);
        }
    }
    let out = cmd.arg(url).output().context("running wrk (apt-get install -y wrk)")?;
    drop(latency_script);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() || text.contains("Non-2xx") {
        bail!(
            "wrk against {url} failed or saw errors:\n{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let requests = parse_requests(&text).ok_or_else(|| anyhow!("no request count in wrk output:\n{text}"))?;
    let rps = text
        .lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| anyhow!("no Requests/sec in wrk output:\n{text}"))?;
    Ok(Result {
        requests,
        requests_per_sec: rps,
        p50_ms: parse_latency_us(&text, 50)
            .or_else(|| parse_latency(&text, "50%"))
            .unwrap_or(f64::NAN),
        p99_ms: parse_latency_us(&text, 99)
            .or_else(|| parse_latency(&text, "99%"))
            .unwrap_or(f64::NAN),
    })
}

/// A running nginx; dropping it stops master and workers (a SIGKILL to the master alone would
/// leave the workers serving the port).
pub(super) struct Nginx {
    pub(super) child: Child,
    conf: std::path::PathBuf,
    dir: std::path::PathBuf,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let stopped = Command::new("nginx")
            .arg("-c")
            .arg(&self.conf)
            .arg("-p")
            .arg(&self.dir)
            .args(["-s", "stop"])
            .stderr(Stdio::null())
            .status();
        if !stopped.is_ok_and(|s| s.success()) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// nginx as an HTTPS reverse proxy to `upstream`, with the hub's certificate and its TLS policy
/// (`faros_core::server_tls`: the server's suite order, AES-128-GCM first), so that both proxies
/// encrypt wrk's traffic with the same suite, adding `set_headers` (`proxy_set_header` directives:
/// [`super::proxy_headers`], the headers the hub adds) so that the upstream reads the same.
fn nginx(dir: &Path, state: &Path, port: u16, upstream: &str, set_headers: &str) -> anyhow::Result<Nginx> {
    nginx_under(dir, state, port, upstream, set_headers, &[])
}

/// [`nginx`] run by `wrapper` (valgrind's): then as one process, master and worker in one, so that
/// the wrapper sees all of nginx's work.
pub(super) fn nginx_under(
    dir: &Path,
    state: &Path,
    port: u16,
    upstream: &str,
    set_headers: &str,
    wrapper: &[String],
) -> anyhow::Result<Nginx> {
    let processes = if wrapper.is_empty() {
        "worker_processes 2;"
    } else {
        "master_process off; worker_processes 1;"
    };
    let conf = dir.join("nginx.conf");
    let cert = state.join("apiserver.crt");
    let key = state.join("apiserver.key");
    std::fs::write(
        &conf,
        format!(
            "daemon off; {processes} pid {pid}; error_log {err} warn;\n\
             events {{ worker_connections 1024; }}\n\
             http {{ access_log off; client_body_temp_path {tmp}; proxy_temp_path {tmp};\n\
               upstream backend {{ server {upstream}; keepalive 64; }}\n\
               server {{ listen 127.0.0.1:{port} ssl; ssl_certificate {cert}; ssl_certificate_key {key};\n\
                 ssl_protocols TLSv1.2 TLSv1.3; ssl_prefer_server_ciphers on;\n\
                 ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256;\n\
                 location / {{ proxy_http_version 1.1; proxy_set_header Connection \"\"; {set_headers}proxy_pass http://backend; }} }} }}\n",
            pid = dir.join("nginx.pid").display(),
            err = dir.join("nginx.err").display(),
            tmp = dir.display(),
            cert = cert.display(),
            key = key.display(),
        ),
    )?;
    let mut command = match wrapper {
        [] => Command::new("nginx"),
        [program, args @ ..] => {
            let mut c = Command::new(program);
            c.args(args).arg("nginx");
            c
        }
    };
    let child = command
        .arg("-c")
        .arg(&conf)
        .arg("-p")
        .arg(dir)
        .stdout(Stdio::null())
        .spawn()
        .context("starting nginx (apt-get install -y nginx-light)")?;
    Ok(Nginx {
        child,
        conf,
        dir: dir.to_path_buf(),
    })
}

pub(super) async fn wait_ok(http: &reqwest::Client, url: &str, token: Option<&str>) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        let mut req = http.get(url);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Ok(r) = req.send().await
            && r.status().is_success()
        {
            return Ok(());
        }
        if started.elapsed() > Duration::from_secs(120) {
            bail!("{url} did not become available");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub async fn run(root: &Path, p: &Profile) -> anyhow::Result<String> {
    let dur = p.wrk_duration;
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let dir = tempfile::tempdir_in(root.join("target"))?;
    let backend_port = free_port()?;
    let backend_port_arg = backend_port.to_string();
    let f = Faros::start(
        p,
        dir.path().join("state"),
        &["--hub-port", "0", "--quickstart-port", &backend_port_arg],
    )?;
    let direct = format!("http://127.0.0.1:{backend_port}/healthz");
    let via_hub = format!("{}/services/providers/quickstart/healthz", f.hub);
    wait_ok(&f.http, &direct, None).await?;
    // The hub routes to the provider once its CatalogEntry is Ready in the registry.
    wait_ok(&f.http, &via_hub, Some(&f.token)).await?;
    let nginx_port = free_port()?;
    let nginx_dir = dir.path().join("nginx");
    std::fs::create_dir_all(&nginx_dir)?;
    let set_headers = super::proxy_headers::directives(&super::proxy_headers::for_the_admin(&f).await?)?;
    let nginx = nginx(
        &nginx_dir,
        &f.state,
        nginx_port,
        &format!("127.0.0.1:{backend_port}"),
        &set_headers,
    )?;
    let via_nginx = format!("https://localhost:{nginx_port}/healthz");
    wait_ok(&f.http, &via_nginx, None).await?;
    let bare = super::bare_proxy::start(
        &f.state.join("apiserver.crt"),
        &f.state.join("apiserver.key"),
        ([127, 0, 0, 1], backend_port).into(),
    )?;
    let via_bare = format!("https://localhost:{}/healthz", bare.port);
    wait_ok(&f.http, &via_bare, None).await?;

    println!(
        "faros hub proxy benchmark ({}; wrk -t2 -c{CONNECTIONS} -d{dur}, median of {} rounds; \
         unloaded latency with wrk -t1 -c1 -d{dur}, medians of {} rounds)\n",
        p.build(),
        p.proxy_rounds,
        p.unloaded_rounds
    );
    let auth = format!("Authorization: Bearer {}", f.token);
    // Throughput rounds; each runs direct, nginx, the bare stack and the hub back to back, and the
    // median round counts, so a burst of other load on the machine hits all of them alike.
    let mut rounds = Vec::with_capacity(p.proxy_rounds);
    for _ in 0..p.proxy_rounds {
        rounds.push([
            wrk(dur, &direct, &[], None)?,
            wrk(dur, &via_nginx, &[], None)?,
            wrk(dur, &via_bare, &[], None)?,
            wrk(dur, &via_hub, std::slice::from_ref(&auth), None)?,
        ]);
    }
    let [d, n, b, h] = median_round(rounds).ok_or_else(|| anyhow!("no rounds"))?;
    let row = |name: &str, r: &Result| {
        println!(
            "{name:<32} {:>10.0} req/s   p50 {:>7.3}ms   p99 {:>7.3}ms",
            r.requests_per_sec, r.p50_ms, r.p99_ms
        )
    };
    row("baseline: direct upstream", &d);
    row("baseline: nginx (HTTPS)", &n);
    row("baseline: bare stack (HTTPS)", &b);
    row("hub backend proxy (HTTPS)", &h);
    let mut summary = format!(
        "\nsummary: hub vs nginx: {:.2}x req/s (target >= 1.00), bare stack vs nginx {:.2}x, hub vs bare stack {:.2}x; under load, p50 vs direct: hub +{:.2}ms, nginx +{:.2}ms; \
         p99: hub +{:.2}ms, nginx +{:.2}ms",
        h.requests_per_sec / n.requests_per_sec,
        b.requests_per_sec / n.requests_per_sec,
        h.requests_per_sec / b.requests_per_sec,
        h.p50_ms - d.p50_ms,
        n.p50_ms - d.p50_ms,
        h.p99_ms - d.p99_ms,
        n.p99_ms - d.p99_ms,
    );

    // Unloaded rounds alternate direct, nginx and hub too: one connection's latency moves by tens
    // of microseconds with where the scheduler puts the threads, more than the difference judged,
    // and a round's three runs share one placement far more often than runs minutes apart.
    println!();
    // The threads the rounds measure, found once: the hub's connection threads and nginx's workers.
    let hub_threads = super::proxy_syscalls::threads_named(f.child.id(), "hub-http-");
    let nginx_workers = super::scale::rss::children_of(nginx.child.id())?;
    let mut servers = vec![f.child.id(), nginx.child.id()];
    servers.extend(&nginx_workers);
    let placement = match Placement::pin(&servers) {
        Ok(p) => {
            println!(
                "unloaded rounds: wrk on CPU {}, faros dev and nginx on CPU {}",
                p.client, p.servers
            );
            Some(p)
        }
        Err(e) => {
            println!("unloaded rounds: not pinned ({e})");
            None
        }
    };
    // Each proxy's own CPU time per request, user and kernel, beside its latency.
    let hub_cpu = match &hub_threads {
        Ok(tids) => Threads::of(tids),
        Err(e) => Err(anyhow!("{e:#}")),
    };
    let nginx_cpu = Threads::of_processes(&nginx_workers);
    for (name, threads) in [("hub connection threads", &hub_cpu), ("nginx workers", &nginx_cpu)] {
        if let Err(e) = threads {
            println!("CPU time per request, {name}: not counted ({e:#})");
        }
    }
    let unloaded_via = |url: &str, headers: &[String], threads: &anyhow::Result<Threads>| match threads {
        Ok(t) => t
            .while_running(|| {
                let r = wrk_unloaded(dur, url, headers, placement.as_ref())?;
                let n = r.requests;
                Ok((r, n))
            })
            .map(|(r, spent, requests)| (r, Some((spent, requests)))),
        Err(_) => wrk_unloaded(dur, url, headers, placement.as_ref()).map(|r| (r, None)),
    };
    let per_request_us = |spent: &Spent, requests: u64| spent.on_cpu_ns as f64 / 1000.0 / requests.max(1) as f64;
    let mut unloaded = Vec::with_capacity(p.unloaded_rounds);
    let (mut hub_cpu_us, mut nginx_cpu_us) = (Vec::new(), Vec::new());
    let (mut hub_spent, mut nginx_spent) = (Spent::default(), Spent::default());
    for round in 1..=p.unloaded_rounds {
        let ud = wrk_unloaded(dur, &direct, &[], placement.as_ref())?;
        // The proxies take turns going first, so neither always runs right after the direct path.
        let nginx_first = round % 2 == 1;
        let mut un = None;
        if nginx_first {
            un = Some(unloaded_via(&via_nginx, &[], &nginx_cpu)?);
        }
        let (uh, hub_cpu) = unloaded_via(&via_hub, std::slice::from_ref(&auth), &hub_cpu)?;
        let (un, nginx_cpu) = match un {
            Some(un) => un,
            None => unloaded_via(&via_nginx, &[], &nginx_cpu)?,
        };
        let added = Added::of(&ud, &un, &uh);
        let cpu = match (hub_cpu, nginx_cpu) {
            (Some((hs, hr)), Some((ns, nr))) => {
                let (h, n) = (per_request_us(&hs, hr), per_request_us(&ns, nr));
                hub_cpu_us.push(h);
                nginx_cpu_us.push(n);
                hub_spent += hs;
                nginx_spent += ns;
                format!("; CPU per request: hub {h:.1}us, nginx {n:.1}us")
            }
            _ => String::new(),
        };
        println!(
            "unloaded round {round} ({} first): direct p50 {:.3}ms, p99 {:.3}ms; added p50: hub +{:.3}ms, nginx +{:.3}ms; \
             added p99: hub +{:.3}ms, nginx +{:.3}ms{cpu}",
            if nginx_first { "nginx" } else { "hub" },
            ud.p50_ms,
            ud.p99_ms,
            added.hub_p50,
            added.nginx_p50,
            added.hub_p99,
            added.nginx_p99
        );
        unloaded.push(added);
    }
    drop(placement);
    let added = Added::median(&unloaded).ok_or_else(|| anyhow!("no unloaded rounds"))?;
    println!(
        "added latency, unloaded (median of {} rounds): hub p50 +{:.3}ms (target <= 0.30), p99 +{:.3}ms; \
         nginx p50 +{:.3}ms, p99 +{:.3}ms; hub minus nginx, p50 {:+.1}us\n",
        unloaded.len(),
        added.hub_p50,
        added.hub_p99,
        added.nginx_p50,
        added.nginx_p99,
        added.hub_minus_nginx_p50 * 1000.0,
    );
    summary.push_str(&format!(
        "; unloaded p50 added (median of {} rounds): hub +{:.3}ms, nginx +{:.3}ms, hub minus nginx {:+.1}us (target: hub <= nginx)",
        unloaded.len(),
        added.hub_p50,
        added.nginx_p50,
        added.hub_minus_nginx_p50 * 1000.0,
    ));
    if let (Some(h), Some(n)) = (median(&hub_cpu_us), median(&nginx_cpu_us)) {
        // The tick-sampled user share of all rounds together, applied to the exact median.
        let split = |us: f64, spent: &Spent| match spent.user_share() {
            Some(share) => format!(" (user {:.1}, kernel {:.1})", us * share, us * (1.0 - share)),
            None => String::new(),
        };
        println!(
            "CPU time per request, unloaded, user and kernel by the ticks of all rounds: hub{}, nginx{}",
            split(h, &hub_spent),
            split(n, &nginx_spent)
        );
        println!(
            "CPU time per request, unloaded (median of {} rounds): hub connection threads {h:.1}us, nginx workers {n:.1}us: {:.2}x\n",
            hub_cpu_us.len(),
            h / n
        );
        summary.push_str(&format!(
            "; CPU per request, unloaded: hub {h:.1}us, nginx {n:.1}us ({:.2}x)",
            h / n
        ));
    }

    // What each proxy's threads ask of the kernel per request, one connection (not a timing).
    let mut per_request = Vec::new();
    for (name, threads, url, headers) in [
        (
            "hub connection threads",
            hub_threads,
            &via_hub,
            std::slice::from_ref(&auth),
        ),
        ("nginx workers", Ok(nginx_workers), &via_nginx, &[][..]),
    ] {
        let counted = threads.and_then(|tids| {
            super::proxy_syscalls::count(
                &tids,
                dir.path(),
                || Ok(wrk_unloaded(dur, url, headers, None)?.requests),
            )
        });
        match counted {
            Ok(c) => {
                println!("system calls, unloaded, {name}: {}", c.describe());
                per_request.push(format!("{name} {:.1}", c.per_request()));
            }
            Err(e) => println!("system calls, unloaded, {name}: not counted ({e:#})"),
        }
    }
    println!();
    if !per_request.is_empty() {
        summary.push_str(&format!(
            "; system calls per request, unloaded: {}",
            per_request.join(", ")
        ));
    }

    // Heartbeats with the provider's own ServiceAccount token (TokenReview cached after the first).
    let kc: Value = serde_saphyr::from_str(&std::fs::read_to_string(f.state.join("quickstart.kubeconfig"))?)?;
    let sa_token = kc
        .pointer("/users/0/user/token")
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("no provider token"))?;
    let script = dir.path().join("heartbeat.lua");
    std::fs::write(
        &script,
        "wrk.method = \"POST\"\nwrk.body = '{\"version\":\"bench\",\"status\":\"ok\"}'\nwrk.headers[\"Content-Type\"] = \"application/json\"\n",
    )?;
    let beat = wrk(
        dur,
        &format!("{}/api/providers/quickstart/heartbeat", f.hub),
        &[format!("Authorization: Bearer {sa_token}")],
        Some(&script),
    )?;
    println!(
        "heartbeats/s (warm TokenReview cache)  {:>10.0}   p99 {:.2}ms   ratio to 20 000 target {:.2}",
        beat.requests_per_sec,
        beat.p99_ms,
        beat.requests_per_sec / 20_000.0
    );
    drop(nginx);
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_wrk_latency() {
        let text = "  Latency Distribution\n     50%  412.00us\n     75%    1.20ms\n     99%    2.50s\n";
        assert_eq!(parse_latency(text, "50%"), Some(0.412));
        assert_eq!(parse_latency(text, "75%"), Some(1.2));
        assert_eq!(parse_latency(text, "99%"), Some(2500.0));
        assert_eq!(parse_latency(text, "90%"), None);
    }

    #[test]
    fn reads_the_latency_scripts_microseconds() {
        let text = "Requests/sec:  9000.00\nlatency-us 50 87.0\nlatency-us 99 412.5\n";
        assert_eq!(parse_latency_us(text, 50), Some(0.087));
        assert_eq!(parse_latency_us(text, 99), Some(0.4125));
        assert_eq!(parse_latency_us(text, 75), None);
        assert_eq!(parse_latency_us("  50%  87.00us\n", 50), None);
    }

    #[test]
    fn unloaded_rounds_take_each_figures_median() {
        let run = |p50_us: f64, p99_us: f64| Result {
            requests: 1,
            requests_per_sec: 1.0,
            p50_ms: p50_us / 1000.0,
            p99_ms: p99_us / 1000.0,
        };
        let us = |ms: f64| (ms * 1000.0 * 10.0).round() / 10.0;
        // (direct, nginx, hub) p50/p99 per round, then the medians in µs: hub p50, nginx p50, hub
        // p99, nginx p99, hub minus nginx p50.
        type Case = (&'static str, Vec<[(f64, f64); 3]>, Option<[f64; 5]>);
        let cases: Vec<Case> = vec![
            ("no rounds", vec![], None),
            (
                "one round is its own median",
                vec![[(70.0, 90.0), (92.0, 130.0), (97.0, 150.0)]],
                Some([27.0, 22.0, 60.0, 40.0, 5.0]),
            ),
            (
                // The second round's placement slowed the proxies; no median is its figure, and
                // the difference's median (3) is not the difference of the medians (5).
                "an outlier round does not move the medians",
                vec![
                    [(70.0, 90.0), (92.0, 130.0), (97.0, 150.0)],
                    [(75.0, 95.0), (140.0, 400.0), (110.0, 300.0)],
                    [(72.0, 91.0), (93.0, 120.0), (96.0, 140.0)],
                ],
                Some([27.0, 22.0, 60.0, 40.0, 3.0]),
            ),
            (
                "an even count takes the lower middle",
                vec![
                    [(70.0, 90.0), (90.0, 110.0), (100.0, 120.0)],
                    [(70.0, 90.0), (95.0, 115.0), (90.0, 110.0)],
                ],
                Some([20.0, 20.0, 20.0, 20.0, -5.0]),
            ),
        ];
        for (name, rounds, want) in cases {
            let added: Vec<Added> = rounds
                .iter()
                .map(|[d, n, h]| Added::of(&run(d.0, d.1), &run(n.0, n.1), &run(h.0, h.1)))
                .collect();
            let got = Added::median(&added)
                .map(|a| [a.hub_p50, a.nginx_p50, a.hub_p99, a.nginx_p99, a.hub_minus_nginx_p50].map(us));
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn parses_wrk_request_counts() {
        let text = "Running 5s test @ https://x\n  40 requests in 5.00s, 7.29MB read\nRequests/sec: 8.00\n";
        assert_eq!(parse_requests(text), Some(40));
        assert_eq!(parse_requests("Requests/sec: 8.00\n"), None);
    }
}
