//! `faros-hub-reconciler`: parse flags (each also a `FAROS_*` env var), set up logging, run the library.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use faros_core::names;
use faros_core::telemetry::{LogArgs, install_crypto_provider};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// jemalloc, as in every faros server binary (docs/benchmarks.md#allocator).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Bootstraps the faros workspace tree in kcp and provisions Providers.
#[derive(Parser, Debug)]
#[command(name = "faros-hub-reconciler", version, about)]
struct Args {
    #[command(flatten)]
    kcp: faros_core::client::KcpArgs,
    /// Base URL written into provider kubeconfigs (`<hub-url>/clusters/<logical cluster>`).
    /// Unset: the kcp server URL from the kubeconfig.
    #[arg(long, env = "FAROS_HUB_URL")]
    hub_url: Option<String>,
    /// PEM CA bundle written into provider kubeconfigs. Unset: the CA of the kcp kubeconfig.
    #[arg(long, env = "FAROS_HUB_CA_FILE")]
    ca_file: Option<PathBuf>,
    /// Write `insecure-skip-tls-verify: true` into provider kubeconfigs instead of a CA (dev only).
    #[arg(long, env = "FAROS_INSECURE_PROVIDER_KUBECONFIGS", value_parser = clap::builder::BoolishValueParser::new())]
    insecure_provider_kubeconfigs: bool,
    /// Address of /healthz, /readyz and /metrics.
    #[arg(long, env = "FAROS_LISTEN", default_value = "0.0.0.0:8080")]
    listen: SocketAddr,
    /// Leader-election Lease name (in faros-system of root:faros:system:controllers).
    #[arg(long, env = "FAROS_LEASE_NAME", default_value = names::RECONCILER_LEASE)]
    lease_name: String,
    /// This replica's identity in the Lease. Unset: $HOSTNAME plus a random suffix.
    #[arg(long, env = "FAROS_LEASE_IDENTITY")]
    lease_identity: Option<String>,
    /// Seconds a Lease stays valid without renewal.
    #[arg(long, env = "FAROS_LEASE_DURATION_SECONDS", default_value_t = 15)]
    lease_duration_seconds: u64,
    /// Seconds a leader keeps acting without a successful renewal (must be below the duration).
    #[arg(long, env = "FAROS_LEASE_RENEW_DEADLINE_SECONDS", default_value_t = 10)]
    lease_renew_deadline_seconds: u64,
    /// Seconds between renewals and standby retries.
    #[arg(long, env = "FAROS_LEASE_RETRY_PERIOD_SECONDS", default_value_t = 2)]
    lease_retry_period_seconds: u64,
    /// Providers reconciled in parallel.
    #[arg(long, env = "FAROS_CONCURRENCY", default_value_t = 64)]
    concurrency: usize,
    /// Seconds between full re-reconciles of a healthy Provider.
    #[arg(long, env = "FAROS_RESYNC_SECONDS", default_value_t = 300)]
    resync_seconds: u64,
    /// Mirror every provider kubeconfig Secret into this namespace of the hosting Kubernetes cluster
    /// (where the providers' pods mount it). Setting it enables the mirror. Needs `secrets` get,
    /// list, watch, create, update, patch, delete in that namespace only.
    #[arg(long, env = "FAROS_MIRROR_NAMESPACE")]
    mirror_namespace: Option<String>,
    /// Kubeconfig of the hosting cluster for the mirror (its current context). Unset: the in-cluster
    /// service account; never $KUBECONFIG.
    #[arg(long, env = "FAROS_MIRROR_KUBECONFIG")]
    mirror_kubeconfig: Option<PathBuf>,
    /// The hub API's own kcp user (docs/install.md#kcp-identities): its roles are written into the
    /// tree on bootstrap and into each provider workspace provisioned. Unset or empty: the hub runs
    /// with kcp's admin kubeconfig and gets no grant.
    #[arg(long, env = "FAROS_HUB_USER")]
    hub_user: Option<String>,
    #[command(flatten)]
    log: LogArgs,
}

/// The mirror's target: `None` unless `--mirror-namespace` is set (an empty value counts as unset,
/// so a chart can always pass the variable).
async fn mirror_config(args: &Args) -> anyhow::Result<Option<faros_hub_reconciler::MirrorConfig>> {
    let namespace = args
        .mirror_namespace
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty());
    let kubeconfig = args.mirror_kubeconfig.as_ref().filter(|p| !p.as_os_str().is_empty());
    let Some(namespace) = namespace else {
        if let Some(path) = kubeconfig {
            anyhow::bail!(
                "--mirror-kubeconfig (FAROS_MIRROR_KUBECONFIG) is set to {} but --mirror-namespace (FAROS_MIRROR_NAMESPACE) is not; set both to enable the kubeconfig mirror",
                path.display()
            );
        }
        return Ok(None);
    };
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .with_context(|| format!("reading --mirror-kubeconfig {}", path.display()))?;
            let kube = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .with_context(|| format!("loading --mirror-kubeconfig {}", path.display()))?;
            faros_hub_reconciler::MirrorConfig {
                namespace: namespace.to_string(),
                kube,
            }
        }
        None => faros_hub_reconciler::MirrorConfig::in_cluster(namespace)?,
    };
    config.validate()?;
    Ok(Some(config))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    args.log.init()?;
    install_crypto_provider();
    let mut config = faros_hub_reconciler::Config::new(args.kcp.load().await?);
    config.hub_url = args.hub_url.clone();
    if let Some(path) = &args.ca_file {
        config.ca_pem =
            Some(std::fs::read_to_string(path).with_context(|| format!("reading CA file {}", path.display()))?);
    }
    config.insecure_provider_kubeconfigs = args.insecure_provider_kubeconfigs;
    config.listen = Some(args.listen);
    config.lease.name = args.lease_name.clone();
    if let Some(identity) = &args.lease_identity {
        config.lease.identity = identity.clone();
    }
    config.lease.duration = Duration::from_secs(args.lease_duration_seconds);
    config.lease.renew_deadline = Duration::from_secs(args.lease_renew_deadline_seconds);
    config.lease.retry_period = Duration::from_secs(args.lease_retry_period_seconds);
    config.controller.concurrency = args.concurrency;
    config.controller.resync = Duration::from_secs(args.resync_seconds);
    config.mirror = mirror_config(&args).await?;
    config.hub_user = args
        .hub_user
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_string);
    tracing::info!(?config, "starting");
    faros_hub_reconciler::run(config, faros_core::telemetry::shutdown_signal()).await?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Args::command().debug_assert();
    }

    fn parse(args: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("faros-hub-reconciler").chain(args.iter().copied())).unwrap()
    }

    #[tokio::test]
    async fn mirror_flags() {
        assert!(mirror_config(&parse(&[])).await.unwrap().is_none());
        assert!(
            mirror_config(&parse(&["--mirror-namespace", " "]))
                .await
                .unwrap()
                .is_none()
        );
        let error = mirror_config(&parse(&["--mirror-kubeconfig", "/x"]))
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("--mirror-namespace"), "{error}");
        let error = mirror_config(&parse(&[
            "--mirror-namespace",
            "p",
            "--mirror-kubeconfig",
            "/nonexistent",
        ]))
        .await
        .unwrap_err()
        .to_string();
        assert!(error.contains("--mirror-kubeconfig /nonexistent"), "{error}");

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hosting.kubeconfig");
        std::fs::write(
            &file,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: h\n  cluster: {server: 'https://hosting.example:6443'}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: c\n  context: {cluster: h, user: u}\ncurrent-context: c\n",
        )
        .unwrap();
        let path = file.to_str().unwrap();
        let config = mirror_config(&parse(&[
            "--mirror-namespace",
            "providers",
            "--mirror-kubeconfig",
            path,
        ]))
        .await
        .unwrap()
        .unwrap();
        assert_eq!(config.namespace, "providers");
        assert_eq!(config.kube.cluster_url.to_string(), "https://hosting.example:6443/");
        let error = mirror_config(&parse(&["--mirror-namespace", "Bad_NS", "--mirror-kubeconfig", path]))
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("--mirror-namespace"), "{error}");
    }
}
