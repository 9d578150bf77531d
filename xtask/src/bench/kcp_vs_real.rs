//! `cargo xtask bench kcp-vs-real`: the embedded kcp (`faros kcp`) and real kcp (one shard, embedded
//! etcd, `target/kcp/<pinned version>/kcp` or `--kcp-binary`) under the same workload, one after the
//! other in one run on this machine, each from a fresh directory:
//! - time from start to `/readyz` 200;
//! - resident memory idle and at N ConfigMaps (the list collection), from /proc of the process;
//! - creates/s of 1 KiB ConfigMaps from 8 and 64 concurrent clients;
//! - list latency p50 of those N objects (JSON and protobuf, unpaged and paged);
//! - watch event latency p99 with 100 watchers ([`watch`]: every watcher must get every event, or
//!   the figure is not given and why is);
//! - workspace create-to-Ready p50/p95, created one after the other by a tenant with a grant (kcp
//!   binds a workspace's default APIs as its creator and records none for `system:masters`, so an
//!   admin's workspace never becomes Ready there).
//!
//! Then the platform on each ([`platform`]): `faros dev` against the hub reconciler, the hub API and
//! quickstart as processes on real kcp (the kcp e2e target's plan): time from start to quickstart
//! Ready, N Providers at once to Ready (p50/p95), the platform's memory; on real kcp also kcp's own
//! figures on the same kcp (bare provider workspaces, its start) and the reconciler's requests per
//! Provider, and the targets judged from them ([`targets`]).
//!
//! Each figure is printed for both with the ratio embedded/real. The load is the `kcp` suite's
//! ([`super::kcp`], [`super::faros`]); the servers start as `cargo xtask kcp diff` starts them.

mod baseline;
mod platform;
mod requests;
mod targets;
mod watch;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::faros::Faros;
use super::profile::Profile;
use super::stats::{ms, percentile};
use crate::kcp::diff::servers::{Launch, embedded_launch, real_kcp_launch, tokens};
use platform::PlatformFigures;

/// `--kcp-binary`, set by the command before the suite runs.
static KCP_BINARY: OnceLock<PathBuf> = OnceLock::new();

/// Remembers `--kcp-binary` for [`run`] (the suites share one signature).
pub(super) fn use_kcp_binary(binary: Option<&Path>) {
    if let Some(b) = binary {
        let _ = KCP_BINARY.set(b.to_path_buf());
    }
}

fn kcp_binary(root: &Path) -> PathBuf {
    KCP_BINARY
        .get()
        .cloned()
        .unwrap_or_else(|| crate::kcp::build::bin_dir(root, crate::kcp::gomod::PINNED_VERSION).join("kcp"))
}

/// How long a server may take to answer `/readyz`, and a workspace to become Ready.
const START_TIMEOUT: Duration = Duration::from_secs(180);
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// The tenant that creates the workspaces (granted by the admin).
const TENANT: &str = "bob";

/// One server's figures.
struct Figures {
    readyz: Duration,
    rss_idle: f64,
    rss_loaded: f64,
    creates: Vec<(usize, f64)>,
    lists: Vec<(String, Duration)>,
    /// Why not, when the server did not serve every watcher every event.
    watch_p99: Result<Duration, String>,
    workspace_p50: Duration,
    workspace_p95: Duration,
    platform: PlatformFigures,
}

/// The rows of the comparison: name, embedded, real, unit; lower is better except for rates.
fn rows(embedded: &Figures, real: &Figures) -> Vec<(String, f64, f64, &'static str)> {
    let mut rows = vec![
        (
            "time to /readyz".to_string(),
            ms(embedded.readyz),
            ms(real.readyz),
            "ms",
        ),
        ("RSS idle".to_string(), embedded.rss_idle, real.rss_idle, "MiB"),
        (
            "RSS at the list's objects".to_string(),
            embedded.rss_loaded,
            real.rss_loaded,
            "MiB",
        ),
    ];
    for ((clients, e), (_, r)) in embedded.creates.iter().zip(&real.creates) {
        rows.push((format!("creates/s, {clients} clients"), *e, *r, "/s"));
    }
    for ((form, e), (_, r)) in embedded.lists.iter().zip(&real.lists) {
        rows.push((format!("list p50, {form}"), ms(*e), ms(*r), "ms"));
    }
    let watch = |f: &Figures| f.watch_p99.as_ref().map_or(f64::NAN, |d| ms(*d));
    rows.push(("watch p99".to_string(), watch(embedded), watch(real), "ms"));
    rows.push((
        "workspace create-to-Ready p50".to_string(),
        ms(embedded.workspace_p50),
        ms(real.workspace_p50),
        "ms",
    ));
    rows.push((
        "workspace create-to-Ready p95".to_string(),
        ms(embedded.workspace_p95),
        ms(real.workspace_p95),
        "ms",
    ));
    let (e, r) = (&embedded.platform, &real.platform);
    rows.extend([
        (
            "platform: start to quickstart Ready".to_string(),
            ms(e.to_quickstart_ready),
            ms(r.to_quickstart_ready),
            "ms",
        ),
        (
            "platform: Providers to Ready p50".to_string(),
            ms(e.providers_p50),
            ms(r.providers_p50),
            "ms",
        ),
        (
            "platform: Providers to Ready p95".to_string(),
            ms(e.providers_p95),
            ms(r.providers_p95),
            "ms",
        ),
        (
            "platform: RSS after the Providers".to_string(),
            e.rss_mib,
            r.rss_mib,
            "MiB",
        ),
    ]);
    rows
}

/// embedded / real, `NaN` when real measured nothing.
fn ratio(embedded: f64, real: f64) -> f64 {
    if real == 0.0 { f64::NAN } else { embedded / real }
}

/// A client of the servers this run starts on loopback with fresh self-signed certificates.
fn loopback_client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .tls_danger_accept_invalid_certs(true)
        .pool_max_idle_per_host(256)
        .build()
}

/// Starts a server and waits for `/readyz`; returns it as the load functions take it, and how long
/// it took to be ready.
async fn start(launch: Launch, tokens: &BTreeMap<String, String>) -> anyhow::Result<(Arc<Faros>, Duration)> {
    let base = launch.base.clone();
    let log = launch.log.clone();
    let state = log.parent().map(Path::to_path_buf).unwrap_or_default();
    let http = loopback_client()?;
    let started = Instant::now();
    let mut child = launch.spawn()?;
    loop {
        let ready = http.get(format!("{base}/readyz")).send().await;
        if ready.is_ok_and(|r| r.status().is_success()) {
            break;
        }
        if let Some(status) = child.try_wait()? {
            bail!(
                "{} exited with {status} before /readyz answered; see {}",
                base,
                log.display()
            );
        }
        if started.elapsed() > START_TIMEOUT {
            let _ = child.kill();
            bail!("/readyz not 200 after {START_TIMEOUT:?}; see {}", log.display());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let readyz = started.elapsed();
    let server = Faros {
        hub: String::new(),
        state,
        // Both serve the root workspace under its path; the load's paths follow it.
        url: format!("{base}/clusters/root"),
        token: tokens["admin"].clone(),
        http,
        child,
    };
    Ok((Arc::new(server), readyz))
}

/// Lets the tenant create and read workspaces in root (kcp's own way to let a user create them).
async fn grant_workspaces(f: &Faros) -> anyhow::Result<()> {
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "bench-workspaces"},
        "rules": [{"apiGroups": ["tenancy.kcp.io"], "resources": ["workspaces"], "verbs": ["create", "get"]}]});
    f.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", &role).await?;
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "bench-workspaces"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "bench-workspaces"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": TENANT}]});
    f.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", &binding)
        .await
}

/// Waits until kcp lets the tenant create workspaces in root: real kcp's authorizer sees a new
/// binding a moment after the write answered, and a create in that moment is refused (403), so the
/// grant is asked about (SelfSubjectAccessReview, every 50 ms) before any create is timed.
async fn until_granted(f: &Faros, tenant: &str) -> anyhow::Result<()> {
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"group": "tenancy.kcp.io", "resource": "workspaces", "verb": "create"}}});
    let url = format!("{}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", f.url);
    let started = Instant::now();
    loop {
        let answer: Value = f
            .http
            .post(&url)
            .bearer_auth(tenant)
            .json(&review)
            .send()
            .await?
            .json()
            .await?;
        if answer.pointer("/status/allowed").and_then(Value::as_bool) == Some(true) {
            return Ok(());
        }
        if started.elapsed() > READY_TIMEOUT {
            bail!(
                "the tenant may still not create workspaces after {READY_TIMEOUT:?}: {}",
                answer["status"]
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Creates `count` universal workspaces one after the other as the tenant; each one's time from
/// the create to `status.phase: Ready` (polled every 10 ms).
async fn workspace_ready(f: &Faros, tenant: &str, count: usize) -> anyhow::Result<Vec<Duration>> {
    grant_workspaces(f).await?;
    until_granted(f, tenant).await?;
    let collection = format!("{}/apis/tenancy.kcp.io/v1alpha1/workspaces", f.url);
    let mut samples = Vec::with_capacity(count);
    for i in 0..count {
        let name = format!("bench-{i}");
        let body = json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name},
            "spec": {"type": {"name": "universal", "path": "root"}}});
        let started = Instant::now();
        let resp = f.http.post(&collection).bearer_auth(tenant).json(&body).send().await?;
        if !resp.status().is_success() {
            bail!("creating workspace {name}: {} {}", resp.status(), resp.text().await?);
        }
        resp.bytes().await?;
        loop {
            let ws: Value = f
                .http
                .get(format!("{collection}/{name}"))
                .bearer_auth(tenant)
                .send()
                .await?
                .json()
                .await?;
            if ws.pointer("/status/phase").and_then(Value::as_str) == Some("Ready") {
                samples.push(started.elapsed());
                break;
            }
            if started.elapsed() > READY_TIMEOUT {
                bail!("workspace {name} not Ready after {READY_TIMEOUT:?}: {}", ws["status"]);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    Ok(samples)
}

/// The whole workload against one server.
async fn measure_one(
    name: &str,
    launch: Launch,
    tokens: &BTreeMap<String, String>,
    p: &Profile,
) -> anyhow::Result<Figures> {
    println!("\n{name}:");
    let (f, readyz) = start(launch, tokens).await?;
    println!("  time to /readyz                 {:>9.0}ms", ms(readyz));
    f.namespace("idle").await?;
    let rss_idle = f.rss_mib()?;
    println!("  RSS idle                        {rss_idle:>9.1}MiB");
    let lists = super::kcp::list_latency(&f, p).await?;
    let rss_loaded = f.rss_mib()?;
    println!("  RSS at {:>6} objects           {rss_loaded:>9.1}MiB", p.list_objects);
    let mut list_p50 = Vec::new();
    for (form, mut samples) in lists {
        let p50 = percentile(&mut samples, 50.0);
        println!(
            "  list of {} objects, {:<22} p50 {:>7.1}ms",
            p.list_objects,
            form.label(),
            ms(p50)
        );
        list_p50.push((form.label(), p50));
    }
    // Every watcher must get every event; when some do not, why is the figure.
    let terminated_before = watch::terminated_watchers(&f).await.unwrap_or_default();
    let outcomes = watch::watch_latency(&f, loopback_client, "watch", p.watchers, p.watch_events).await?;
    let mut watch_p99 = watch::summarize(outcomes).map(|mut latencies| {
        let p99 = percentile(&mut latencies, 99.0);
        println!(
            "  watch p99, {} watchers, {} events {:>7.2}ms",
            p.watchers,
            latencies.len(),
            ms(p99)
        );
        p99
    });
    if let Err(why) = &mut watch_p99
        && let Some(closed) = watch::terminated_watchers(&f).await
    {
        why.push_str(&format!(
            "; the server closed {} watchers as unresponsive meanwhile (apiserver_terminated_watchers_total)",
            closed - terminated_before
        ));
    }
    if let Err(why) = &watch_p99 {
        println!("  watch p99, {} watchers: not measured: {why}", p.watchers);
    }
    let mut creates = Vec::new();
    for clients in [8, 64] {
        let ns = format!("creates-{clients}");
        f.namespace(&ns).await?;
        let elapsed = f.create_many(&ns, "c", p.creates, clients).await?;
        let rate = p.creates as f64 / elapsed.as_secs_f64();
        println!("  creates/s, {clients:>2} clients             {rate:>9.0}");
        creates.push((clients, rate));
    }
    let mut ready = workspace_ready(&f, &tokens[TENANT], if p.smoke { 2 } else { 20 }).await?;
    let (workspace_p50, workspace_p95) = (percentile(&mut ready, 50.0), percentile(&mut ready, 95.0));
    println!(
        "  workspace create-to-Ready, {} workspaces: p50 {:.0}ms  p95 {:.0}ms",
        ready.len(),
        ms(workspace_p50),
        ms(workspace_p95)
    );
    Ok(Figures {
        readyz,
        rss_idle,
        rss_loaded,
        creates,
        lists: list_p50,
        watch_p99,
        workspace_p50,
        workspace_p95,
        platform: PlatformFigures::default(),
    })
}

/// The components the platform on real kcp runs as processes (`faros` for `faros grant`), built
/// as the measured `faros` is: [`super::profile::MEASURED_PROFILE`], or debug for a smoke run.
fn build_components(root: &Path, smoke: bool) -> anyhow::Result<()> {
    let sh = xshell::Shell::new()?;
    sh.change_dir(root);
    let profile: &[&str] = if smoke {
        &[]
    } else {
        &["--profile", super::profile::MEASURED_PROFILE]
    };
    xshell::cmd!(
        sh,
        "cargo build {profile...} -p faros -p faros-hub-api -p faros-hub-reconciler -p faros-provider-quickstart --bins"
    )
    .run()
    .context("building the platform's components")
}

/// Runs the comparison; returns the summary line. Without a kcp binary a smoke run is skipped (a
/// machine without Go, or whose Go module proxy refuses a module kcp needs) and a measuring run fails.
pub async fn run(root: &Path, p: &Profile) -> anyhow::Result<String> {
    let kcp = kcp_binary(root);
    if !kcp.is_file() {
        if p.smoke {
            return Ok(format!("skipped: no kcp binary ({} is absent)", kcp.display()));
        }
        bail!(
            "no real kcp binary at {}: build it with `cargo xtask kcp build`, or name one with --kcp-binary",
            kcp.display()
        );
    }
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let work = root.join("target/bench-kcp-vs-real");
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    println!(
        "embedded kcp vs real kcp ({}, {} CPUs)\n  embedded: {} kcp\n  real:     {}",
        p.build(),
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        p.faros.display(),
        kcp.display()
    );
    // A build given with `--faros` is measured as it is (a copy from before a change, run while the
    // tree builds the change); otherwise the components are built as the measured `faros` is.
    if p.smoke || p.faros == super::profile::measured_dir(root).join("faros") {
        build_components(root, p.smoke)?;
    }
    let tokens = tokens()?;
    let mut real = measure_one(
        "real kcp",
        real_kcp_launch(&kcp, &work.join("real"), &tokens)?,
        &tokens,
        p,
    )
    .await?;
    let mut embedded = measure_one(
        "embedded kcp",
        embedded_launch(&p.faros, &work.join("embedded"), &tokens)?,
        &tokens,
        p,
    )
    .await?;
    real.platform = platform::real(root, &kcp, p, work.join("platform-real")).await?;
    let state = work.join("platform-embedded");
    let _ = std::fs::remove_dir_all(&state);
    embedded.platform = platform::embedded(p, state).await?;
    println!("\n{:<40} {:>12} {:>12} {:>9}", "", "embedded", "real kcp", "emb/real");
    let mut summary = Vec::new();
    for (name, e, r, unit) in rows(&embedded, &real) {
        println!("{name:<40} {e:>10.1}{unit:<2} {r:>10.1}{unit:<2} {:>9.2}", ratio(e, r));
        summary.push(format!("{name} {:.2}", ratio(e, r)));
    }
    if let Some(on_real) = &real.platform.on_real {
        println!("\nthe platform on real kcp against real kcp's own figures, same kcp, same run:");
        for target in targets::targets(on_real) {
            println!("{}", target.line());
            summary.push(format!(
                "real: {} {:.2} {}",
                target.name,
                target.value,
                if target.met() { "met" } else { "not met" }
            ));
        }
    }
    Ok(format!("\nsummary (embedded/real): {}", summary.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_is_a_row_with_its_ratio() {
        let figures = |scale: f64| Figures {
            readyz: Duration::from_millis((100.0 * scale) as u64),
            rss_idle: 10.0 * scale,
            rss_loaded: 20.0 * scale,
            creates: vec![(8, 1000.0 * scale), (64, 2000.0 * scale)],
            lists: vec![("JSON, unpaged".into(), Duration::from_millis((30.0 * scale) as u64))],
            watch_p99: Ok(Duration::from_millis((4.0 * scale) as u64)),
            workspace_p50: Duration::from_millis((500.0 * scale) as u64),
            workspace_p95: Duration::from_millis((900.0 * scale) as u64),
            platform: PlatformFigures {
                to_quickstart_ready: Duration::from_millis((1000.0 * scale) as u64),
                providers_p50: Duration::from_millis((300.0 * scale) as u64),
                providers_p95: Duration::from_millis((600.0 * scale) as u64),
                rss_mib: 100.0 * scale,
                on_real: None,
            },
        };
        let rows = rows(&figures(1.0), &figures(2.0));
        let names: Vec<&str> = rows.iter().map(|(n, ..)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "time to /readyz",
                "RSS idle",
                "RSS at the list's objects",
                "creates/s, 8 clients",
                "creates/s, 64 clients",
                "list p50, JSON, unpaged",
                "watch p99",
                "workspace create-to-Ready p50",
                "workspace create-to-Ready p95",
                "platform: start to quickstart Ready",
                "platform: Providers to Ready p50",
                "platform: Providers to Ready p95",
                "platform: RSS after the Providers",
            ]
        );
        for (name, e, r, _) in rows {
            assert!((ratio(e, r) - 0.5).abs() < 1e-9, "{name}: {e} / {r}");
        }
        assert!(ratio(1.0, 0.0).is_nan());
    }
}
