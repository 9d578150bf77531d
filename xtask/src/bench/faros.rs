//! The system under test: a release `faros dev` child process (embedded kcp, hub API, hub reconciler)
//! and an HTTPS client holding its admin token.

use super::profile::Profile;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use base64::Engine;
use serde_json::{Value, json};

/// Concurrent clients for bulk creates that only fill a collection.
pub(super) const CLIENTS: usize = 8;

/// A `faros dev` child process and a client for it.
pub(super) struct Faros {
    /// The hub API's URL.
    pub(super) hub: String,
    /// The state directory.
    pub(super) state: PathBuf,
    pub(super) url: String,
    pub(super) token: String,
    pub(super) http: reqwest::Client,

    pub(super) child: Child,
}

impl Drop for Faros {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Faros {
    /// Only the platform core: embedded kcp, hub API on a free port, reconciler, no provider.
    pub(super) const CORE: &'static [&'static str] = &["--hub-port", "0", "--no-quickstart"];

    pub(super) fn start(profile: &Profile, state: PathBuf, extra: &[&str]) -> anyhow::Result<Self> {
        Self::start_under(profile, state, extra, &[])
    }

    /// [`Self::start`] with `faros` run by `wrapper` (a program and its arguments, e.g. valgrind's),
    /// which must keep the process ID and the standard output of the program it runs.
    pub(super) fn start_under(
        profile: &Profile,
        state: PathBuf,
        extra: &[&str],
        wrapper: &[String],
    ) -> anyhow::Result<Self> {
        let mut command = match wrapper {
            [] => Command::new(&profile.faros),
            [program, args @ ..] => {
                let mut c = Command::new(program);
                c.args(args).arg(&profile.faros);
                c
            }
        };
        command.args(["dev", "--kcp-port", "0"]);
        // Measured as shipped: at the default log level, unless `BENCH_SERVER_LOG` says otherwise.
        // The logs go to a file beside the state directory, not into the suite's output.
        if let Ok(level) = std::env::var("BENCH_SERVER_LOG") {
            command.args(["--log-level", &level]);
        }
        let log = state.with_extension("log");
        let stderr = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut child = command
            .arg("--state-dir")
            .arg(&state)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("starting {}", profile.faros.display()))?;
        let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
        let mut kubeconfig = None;
        let mut hub = String::new();
        for line in BufReader::new(stdout).lines() {
            let line = line?;
            if let Some(h) = line.trim().strip_prefix("hub API:") {
                hub = h.trim().to_string();
            }
            if let Some(p) = line.trim().strip_prefix("admin kubeconfig:") {
                kubeconfig = Some(PathBuf::from(p.trim()));
            }
            if line.starts_with("Press Ctrl-C") {
                break;
            }
        }
        let Some(path) = kubeconfig else {
            let logs = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = logs.lines().rev().take(20).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            bail!(
                "faros dev did not print its kubeconfig; the end of {}:\n{}",
                log.display(),
                tail.join("\n")
            );
        };
        let kc: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path)?)?;
        let server = kc
            .pointer("/clusters/0/cluster/server")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("no server"))?;
        let ca = kc
            .pointer("/clusters/0/cluster/certificate-authority-data")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("no CA"))?;
        let token = kc
            .pointer("/users/0/user/token")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("no token"))?;
        let ca = base64::engine::general_purpose::STANDARD.decode(ca)?;
        let http = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(&ca)?)
            .pool_max_idle_per_host(256)
            .build()?;
        let url = server.trim_end_matches("/clusters/root").to_string();
        Ok(Self {
            child,
            hub,
            state,
            url,
            token: token.to_string(),
            http,
        })
    }

    pub(super) fn rss_mib(&self) -> anyhow::Result<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let kb: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| anyhow!("no VmRSS in /proc status"))?;
        Ok(kb / 1024.0)
    }

    /// The embedded kcp's `/metrics` (OpenMetrics text).
    pub(super) async fn kcp_metrics(&self) -> anyhow::Result<String> {
        Ok(self
            .http
            .get(format!("{}/metrics", self.url))
            .bearer_auth(&self.token)
            .send()
            .await?
            .error_for_status()?
            .text()
            .await?)
    }

    /// One unlabelled sample of the embedded kcp's `/metrics` (`faros_kcp_…`).
    pub(super) async fn kcp_metric(&self, name: &str) -> anyhow::Result<f64> {
        self.kcp_metrics()
            .await?
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| anyhow!("no {name} in the embedded kcp's /metrics"))
    }

    pub(super) async fn post(&self, path: &str, body: &Value) -> anyhow::Result<()> {
        let resp = self
            .http
            .post(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await?;
        if !resp.status().is_success() {
            bail!(
                "POST {path}: {} {}",
                resp.status(),
                resp.text().await.unwrap_or_default()
            );
        }
        // Read the body: dropping it cancels the HTTP/2 stream, and a client that cancels thousands of
        // streams is (rightly) cut off by the server's rapid-reset protection.
        resp.bytes().await?;
        Ok(())
    }

    pub(super) async fn namespace(&self, name: &str) -> anyhow::Result<()> {
        self.post("/api/v1/namespaces", &json!({"metadata": {"name": name}}))
            .await
    }

    /// Creates `count` 1 KiB ConfigMaps in `ns` from `clients` concurrent clients; returns elapsed time.
    pub(super) async fn create_many(
        self: &Arc<Self>,
        ns: &str,
        prefix: &str,
        count: usize,
        clients: usize,
    ) -> anyhow::Result<Duration> {
        let next = Arc::new(AtomicUsize::new(0));
        let payload = "x".repeat(1024);
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..clients {
            let (me, next, payload, ns, prefix) = (
                self.clone(),
                next.clone(),
                payload.clone(),
                ns.to_string(),
                prefix.to_string(),
            );
            tasks.push(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        return anyhow::Ok(());
                    }
                    let body = json!({"metadata": {"name": format!("{prefix}-{i}")}, "data": {"payload": payload}});
                    me.post(&format!("/api/v1/namespaces/{ns}/configmaps"), &body).await?;
                }
            }));
        }
        for t in tasks {
            t.await??;
        }
        Ok(started.elapsed())
    }
}

impl Faros {
    /// Sum of the embedded kcp's request counter (`faros_kcp_apiserver_requests_total`).
    pub(super) async fn requests_total(&self) -> anyhow::Result<u64> {
        Ok(self
            .kcp_metrics()
            .await?
            .lines()
            .filter(|l| l.starts_with("faros_kcp_apiserver_requests_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as u64)
    }
}
