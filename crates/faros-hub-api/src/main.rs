//! `faros-hub-api`: parse flags, set up tracing, run the hub API until SIGINT/SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use faros_core::telemetry::{LogArgs, install_crypto_provider};
use faros_hub_api::auth::OidcSettings;
use faros_hub_api::{Config, Tls};

/// jemalloc, as in every faros server binary (docs/benchmarks.md#allocator).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser, Debug)]
#[command(
    version,
    about = "The faros hub API: catalog, heartbeats, provider proxies, kcp pass-through."
)]
struct Args {
    #[command(flatten)]
    kcp: faros_core::client::KcpArgs,
    /// Listen address.
    #[arg(long, env = "FAROS_LISTEN", default_value = "0.0.0.0:8443")]
    listen: SocketAddr,
    /// Serve `/metrics` (plain HTTP) on this address instead of on the public listener, so that
    /// whatever exposes the public port (Ingress, TLSRoute, NodePort) never exposes metrics.
    #[arg(long, env = "FAROS_METRICS_LISTEN")]
    metrics_listen: Option<std::net::SocketAddr>,
    /// PEM certificate chain; with --tls-key-file serves HTTPS.
    #[arg(long, env = "FAROS_TLS_CERT_FILE", requires = "tls_key_file")]
    tls_cert_file: Option<PathBuf>,
    /// PEM private key.
    #[arg(long, env = "FAROS_TLS_KEY_FILE", requires = "tls_cert_file")]
    tls_key_file: Option<PathBuf>,
    /// Persisted identity-assertion signing key (created if absent; share it between replicas).
    #[arg(long, env = "FAROS_SIGNING_KEY_FILE")]
    signing_key_file: Option<PathBuf>,
    /// Longest wait for a provider upstream's response headers, in seconds.
    #[arg(long, env = "FAROS_UPSTREAM_TIMEOUT", default_value_t = 30)]
    upstream_timeout: u64,
    /// Longest wait for kcp's response headers on the pass-through, in seconds.
    #[arg(long, env = "FAROS_KCP_TIMEOUT", default_value_t = 30)]
    kcp_timeout: u64,
    /// Largest proxied request body, in bytes.
    #[arg(long, env = "FAROS_BODY_LIMIT", default_value_t = 10 * 1024 * 1024)]
    body_limit: usize,
    /// Backend health probe interval, in seconds.
    #[arg(long, env = "FAROS_PROBE_INTERVAL", default_value_t = 10)]
    probe_interval: u64,
    /// Backend health probe timeout, in seconds.
    #[arg(long, env = "FAROS_PROBE_TIMEOUT", default_value_t = 2)]
    probe_timeout: u64,
    /// The hub's public base URL, written into tenant kubeconfigs (default: as the request reached it).
    #[arg(long, env = "FAROS_PUBLIC_URL")]
    public_url: Option<String>,
    /// PEM CA bundle clients need to trust the hub, put into tenant kubeconfigs.
    #[arg(long, env = "FAROS_PUBLIC_CA_FILE")]
    public_ca_file: Option<PathBuf>,
    /// How long Enable waits for the APIBinding to be Bound before answering 202, in seconds.
    #[arg(long, env = "FAROS_ENABLE_WAIT", default_value_t = 10)]
    enable_wait: u64,
    /// Longest wait for one provider's MCP `tools/list`, in seconds (then it is left out).
    #[arg(long, env = "FAROS_MCP_DISCOVERY_TIMEOUT", default_value_t = 8)]
    mcp_discovery_timeout: u64,
    /// Longest wait for one provider's MCP `tools/call`, in seconds.
    #[arg(long, env = "FAROS_MCP_CALL_TIMEOUT", default_value_t = 90)]
    mcp_call_timeout: u64,
    /// Lifetime of a portal session from sign-in, in seconds.
    #[arg(long, env = "FAROS_SESSION_TTL", default_value_t = 8 * 3600)]
    session_ttl: u64,
    /// On SIGTERM: seconds `/readyz` answers 503 while everything is still served (a balancer's
    /// health check takes the replica out), before connections stop being accepted.
    #[arg(long, env = "FAROS_SHUTDOWN_DELAY", default_value_t = 0)]
    shutdown_delay: u64,
    /// Then: seconds in-flight requests may finish before the remaining connections are closed.
    #[arg(long, env = "FAROS_SHUTDOWN_GRACE", default_value_t = 10)]
    shutdown_grace: u64,
    /// An address range (CIDR, e.g. `127.0.0.0/8`) provider URLs may lead to even where the hub
    /// refuses them by default (loopback, link-local, its own host) or with
    /// `--deny-private-upstreams`. Repeatable; comma-separated in the environment.
    #[arg(long = "allow-upstream", env = "FAROS_ALLOW_UPSTREAMS", value_delimiter = ',')]
    allow_upstreams: Vec<ipnet::IpNet>,
    /// Also refuse provider URLs on private, unique-local and shared (CGNAT) addresses (when
    /// providers are reached over public addresses, not cluster Services).
    #[arg(long, env = "FAROS_DENY_PRIVATE_UPSTREAMS", value_parser = clap::builder::BoolishValueParser::new(), default_value = "false", num_args = 0..=1, default_missing_value = "true")]
    deny_private_upstreams: bool,
    #[command(flatten)]
    auth: AuthArgs,
    #[command(flatten)]
    log: LogArgs,
}

/// User authentication besides kcp's TokenReview (which always comes last).
#[derive(clap::Args, Debug)]
struct AuthArgs {
    /// kcp's static token file (`token,user,uid,"group1,group2"`); re-read when it changes.
    #[arg(long, env = "FAROS_TOKEN_AUTH_FILE")]
    token_auth_file: Option<PathBuf>,
    #[command(flatten)]
    oidc: faros_core::oidc::OidcArgs,
}

impl AuthArgs {
    fn oidc(&self) -> anyhow::Result<Option<OidcSettings>> {
        let ca_pem = match self.oidc.ca_file() {
            Some(path) => Some(
                std::fs::read_to_string(path).with_context(|| format!("reading --oidc-ca-file {}", path.display()))?,
            ),
            None => None,
        };
        Ok(self.oidc.settings(ca_pem)?)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    args.log.init()?;
    install_crypto_provider();
    let kube = args.kcp.load().await?;
    let mut config = Config::new(kube);
    config.listen = args.listen;
    config.metrics_listen = args.metrics_listen;
    config.tls = match (args.tls_cert_file, args.tls_key_file) {
        (Some(cert), Some(key)) => Some(Tls::Files { cert, key }),
        _ => None,
    };
    config.signing_key_file = args.signing_key_file;
    config.http.upstream_timeout = Duration::from_secs(args.upstream_timeout);
    config.http.kcp_timeout = Duration::from_secs(args.kcp_timeout);
    config.http.body_limit = args.body_limit;
    config.probe.interval = Duration::from_secs(args.probe_interval);
    config.probe.timeout = Duration::from_secs(args.probe_timeout);
    config.oidc = args.auth.oidc()?;
    config.token_file = args.auth.token_auth_file;
    config.tenancy.public_url = args.public_url;
    config.tenancy.ca_pem = match &args.public_ca_file {
        Some(path) => Some(std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?),
        None => None,
    };
    config.tenancy.enable_wait = Some(Duration::from_secs(args.enable_wait));
    config.mcp.discovery_timeout = Duration::from_secs(args.mcp_discovery_timeout);
    config.mcp.call_timeout = Duration::from_secs(args.mcp_call_timeout);
    config.session.ttl = Duration::from_secs(args.session_ttl);
    config.shutdown_delay = Duration::from_secs(args.shutdown_delay);
    config.shutdown_grace = Duration::from_secs(args.shutdown_grace);
    config.upstreams.allow = args.allow_upstreams;
    config.upstreams.deny_private = args.deny_private_upstreams;
    faros_hub_api::run(config, faros_core::telemetry::shutdown_signal()).await?;
    Ok(())
}
