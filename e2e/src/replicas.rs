//! The hub as a replicated service: several `faros-hub-api` processes on the kcp of one `faros
//! dev` (which also runs the reconciler and quickstart, once), with the same flags, serving
//! certificate and signing key, behind a round-robin balancer on 127.0.0.1
//! ([`faros_test_support::balancer`]: nginx terminating TLS and re-encrypting to the replicas).
//!
//! Scenarios reach the replicas only through the balancer's URL ([`Replicas::target`]); the test
//! restarts replicas one by one ([`Replicas::stop`], [`Replicas::start_replica`]) and reads each
//! replica's own `/metrics` to see that requests were spread.
//!
//! `faros dev`'s own hub keeps running beside them: quickstart's heartbeats and the provider
//! kubeconfigs the reconciler writes name it, and it signs with the same key file, so an identity
//! assertion any of them makes verifies against the JWKS quickstart fetches from it.
//!
//! The `faros-hub-api` binary is the one `cargo build -p faros-hub-api` (or `cargo test
//! --workspace`) put next to the test executable; this module never builds it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use anyhow::{Context, bail};
use faros_test_support::balancer::{Balancer, Settings};
use faros_test_support::child::{ChildProcess, Spec};
use faros_test_support::devproc::DevProcess;
use faros_test_support::eventually;
use faros_test_support::https::client_trusting;
use faros_test_support::ports::free_port;

use crate::target::{External, UserSource};

/// Overrides where the `faros-hub-api` binary is looked for.
pub const ENV_HUB_API_BIN: &str = "FAROS_E2E_HUB_API_BIN";
/// How long a started replica may take to answer `/readyz` (it lists the catalog and the records).
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// `--shutdown-grace`: what the chart gives in-flight requests on SIGTERM.
const SHUTDOWN_GRACE_SECS: &str = "20";
/// `--shutdown-delay`: the chart's preStop sleep. Taking a replica out of nginx's rotation is a
/// reload, which takes effect when nginx's old workers have finished, as an endpoint removal takes
/// a moment to reach every kube-proxy: without it a request could still be sent to a replica that
/// had closed its listener, and a heartbeat POST (which nginx does not send again) got its 502.
const SHUTDOWN_DELAY_SECS: &str = "1";

/// One replica: how to start it, and the running process.
pub struct Replica {
    pub addr: SocketAddr,
    /// Its `--metrics-listen` (plain HTTP), as the chart runs the hub: the public port serves
    /// `/metrics` only to authenticated callers.
    pub metrics: SocketAddr,
    spec: Spec,
    process: Option<ChildProcess>,
}

/// The replicas and the balancer in front of them; every process is killed when dropped.
pub struct Replicas {
    replicas: Vec<Replica>,
    balancer: Balancer,
    /// Trusts the platform CA; talks to each replica directly (`/readyz`, `/metrics`).
    http: reqwest::Client,
    /// Replicas out of the balancer's rotation (stopped, or not ready yet).
    down: Vec<SocketAddr>,
}

impl Replicas {
    /// Starts `count` replicas on `dev`'s kcp and the balancer, and waits until each replica and
    /// the balancer answer `/readyz`. Logs go to `dir/replica-<i>.log` and `dir/nginx.log`.
    pub async fn start(dev: &DevProcess, count: usize, dir: &Path) -> anyhow::Result<Self> {
        let bin = crate::devproc::workspace_binary("faros-hub-api", ENV_HUB_API_BIN, "faros-hub-api")?;
        let state = &dev.state_dir;
        let cert = state.join("apiserver.crt");
        let key = state.join("apiserver.key");
        let ca = dev.ca_path();
        // The balancer's address goes into every replica's --public-url, so it is picked first.
        let listen = SocketAddr::from(([127, 0, 0, 1], free_port()?));
        let public_url = format!("https://{listen}");
        let mut replicas = Vec::with_capacity(count);
        for i in 0..count {
            let addr = SocketAddr::from(([127, 0, 0, 1], free_port()?));
            let metrics = SocketAddr::from(([127, 0, 0, 1], free_port()?));
            let spec = replica_spec(
                &bin,
                dir.join(format!("replica-{i}.log")),
                &ReplicaFiles {
                    kubeconfig: dev.kubeconfig.clone(),
                    cert: cert.clone(),
                    key: key.clone(),
                    ca: ca.clone(),
                    signing_key: state.join("hub-signing-key.json"),
                    token_file: dev.token_file.clone(),
                },
                addr,
                metrics,
                &public_url,
            );
            replicas.push(Replica {
                addr,
                metrics,
                spec,
                process: None,
            });
        }
        let balancer = Balancer::start(
            &Settings {
                listen,
                upstreams: replicas.iter().map(|r| r.addr).collect(),
                cert,
                key,
                upstream_ca: ca,
                // The serving certificate covers localhost and 127.0.0.1; nginx checks DNS names only.
                upstream_name: "localhost".into(),
            },
            dir,
        )
        .await?;
        let mut this = Self {
            replicas,
            balancer,
            http: client_trusting(&dev.ca_pem()?)?,
            down: Vec::new(),
        };
        for i in 0..count {
            this.start_replica(i).await?;
        }
        let url = format!("{}/readyz", this.url());
        let http = this.http.clone();
        eventually("the balancer to answer /readyz", READY_TIMEOUT, || async {
            Ok((http.get(&url).send().await?.status() == 200).then_some(()))
        })
        .await?;
        Ok(this)
    }

    /// The balancer's URL: the hub's public URL.
    pub fn url(&self) -> &str {
        &self.balancer.url
    }

    pub fn len(&self) -> usize {
        self.replicas.len()
    }

    pub fn is_empty(&self) -> bool {
        self.replicas.is_empty()
    }

    /// The external target the replicas are: `dev`'s kcp, CA and token file, the balancer's URL.
    pub fn target(&self, dev: &DevProcess, destructive: bool) -> External {
        let mut target = crate::devproc::target(dev, destructive);
        target.hub_url = self.url().to_string();
        target.users = UserSource::TokenFile(dev.token_file.clone());
        target
    }

    /// Starts replica `i` (again), waits until it answers `/readyz` itself (as a Service's endpoints
    /// controller does) and puts it in the balancer's rotation.
    pub async fn start_replica(&mut self, i: usize) -> anyhow::Result<()> {
        let replica = &mut self.replicas[i];
        if replica.process.is_some() {
            bail!("replica {i} is running already");
        }
        replica.process = Some(replica.spec.spawn()?);
        let url = format!("https://{}/readyz", replica.addr);
        let http = self.http.clone();
        let ready = eventually(&format!("replica {i} to answer /readyz"), READY_TIMEOUT, || async {
            Ok((http.get(&url).send().await?.status() == 200).then_some(()))
        })
        .await;
        if let Err(e) = ready {
            bail!("{e}; its log ends:\n{}", self.log_tail(i));
        }
        self.down.retain(|a| *a != self.replicas[i].addr);
        self.balancer.set_down(&self.down).await?;
        Ok(())
    }

    /// Takes replica `i` out of the balancer's rotation, then SIGTERM (what a rolling update does:
    /// endpoint removal, then the signal), and its exit status once it has exited.
    pub async fn stop(&mut self, i: usize) -> anyhow::Result<ExitStatus> {
        let Some(mut process) = self.replicas[i].process.take() else {
            bail!("replica {i} is not running");
        };
        self.down.push(self.replicas[i].addr);
        self.balancer.set_down(&self.down).await?;
        process
            .terminate()
            .await?
            .with_context(|| format!("replica {i} had no process"))
    }

    /// How many requests of metrics route `route` replica `i` has answered since it started.
    pub async fn requests(&self, i: usize, route: &str) -> anyhow::Result<u64> {
        let url = format!("http://{}/metrics", self.replicas[i].metrics);
        let text = self.http.get(&url).send().await?.error_for_status()?.text().await?;
        Ok(requests_of(&text, route))
    }

    /// The last lines of replica `i`'s log.
    pub fn log_tail(&self, i: usize) -> String {
        faros_test_support::child::tail(&self.replicas[i].spec.log)
    }

    /// Every replica's and the balancer's last log lines, for a failure message.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for i in 0..self.replicas.len() {
            out.push_str(&format!(
                "--- replica {i} ({}):\n{}\n",
                self.replicas[i].addr,
                self.log_tail(i)
            ));
        }
        out.push_str(&format!("--- nginx:\n{}\n", self.balancer.log_tail()));
        out
    }
}

/// The files every replica is started with: `faros dev`'s.
struct ReplicaFiles {
    kubeconfig: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    ca: PathBuf,
    signing_key: PathBuf,
    token_file: PathBuf,
}

/// One replica's command line: identical for all but the listen address.
fn replica_spec(
    bin: &Path,
    log: PathBuf,
    files: &ReplicaFiles,
    addr: SocketAddr,
    metrics: SocketAddr,
    public_url: &str,
) -> Spec {
    let mut spec = Spec::new(bin, log)
        .arg("--kubeconfig")
        .arg(&files.kubeconfig)
        .arg("--listen")
        .arg(addr.to_string())
        .arg("--metrics-listen")
        .arg(metrics.to_string())
        .arg("--tls-cert-file")
        .arg(&files.cert)
        .arg("--tls-key-file")
        .arg(&files.key)
        .arg("--signing-key-file")
        .arg(&files.signing_key)
        .arg("--public-url")
        .arg(public_url)
        .arg("--public-ca-file")
        .arg(&files.ca)
        .arg("--token-auth-file")
        .arg(&files.token_file)
        // quickstart listens on this machine, as every `faros dev` provider does.
        .arg("--allow-upstream")
        .arg("127.0.0.0/8")
        .arg("--shutdown-grace")
        .arg(SHUTDOWN_GRACE_SECS)
        .arg("--shutdown-delay")
        .arg(SHUTDOWN_DELAY_SECS);
    if std::env::var_os("FAROS_LOG_LEVEL").is_none() {
        spec = spec.env("FAROS_LOG_LEVEL", "warn");
    }
    spec
}

/// The sum of `faros_hub_api_requests_total{route="<route>",…}` over every code, from `/metrics`.
/// IO-free.
pub fn requests_of(metrics: &str, route: &str) -> u64 {
    let prefix = format!("faros_hub_api_requests_total{{route=\"{route}\"");
    metrics
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|n| n as u64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::requests_of;

    #[test]
    fn requests_of_sums_every_code_of_one_route() {
        let metrics = "# TYPE faros_hub_api_requests_total counter\n\
                       faros_hub_api_requests_total{route=\"mcp\",code=\"200\"} 7\n\
                       faros_hub_api_requests_total{route=\"mcp\",code=\"202\"} 3\n\
                       faros_hub_api_requests_total{route=\"mcp_other\",code=\"200\"} 100\n\
                       faros_hub_api_requests_total{route=\"tenancy\",code=\"200\"} 5\n";
        for (route, want) in [("mcp", 10), ("tenancy", 5), ("portal", 0)] {
            assert_eq!(requests_of(metrics, route), want, "{route}");
        }
    }
}
