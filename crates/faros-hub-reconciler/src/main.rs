//! `faros-hub-reconciler`: parse flags (each also a `FAROS_*` env var), set up logging, run the library.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use faros_core::names;
use faros_core::telemetry::{LogArgs, install_crypto_provider};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Bootstraps the faros workspace tree in kcp and provisions Providers.
#[derive(Parser, Debug)]
#[command(name = "faros-hub-reconciler", version, about)]
struct Args {
    /// Admin kubeconfig for kcp. Unset: $KUBECONFIG, ~/.kube/config, then in-cluster.
    #[arg(long, env = "FAROS_KCP_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// Context in that kubeconfig (default: its current context).
    #[arg(long, env = "FAROS_KCP_CONTEXT")]
    context: Option<String>,
    /// Base URL written into provider kubeconfigs (`<hub-url>/clusters/<logical cluster>`).
    /// Unset: the kcp server URL from the kubeconfig.
    #[arg(long, env = "FAROS_HUB_URL")]
    hub_url: Option<String>,
    /// PEM CA bundle written into provider kubeconfigs. Unset: the CA of the kcp kubeconfig.
    #[arg(long, env = "FAROS_HUB_CA_FILE")]
    ca_file: Option<PathBuf>,
    /// Write `insecure-skip-tls-verify: true` into provider kubeconfigs instead of a CA (dev only).
    #[arg(long, env = "FAROS_INSECURE_PROVIDER_KUBECONFIGS")]
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
    #[command(flatten)]
    log: LogArgs,
}

async fn kube_config(args: &Args) -> anyhow::Result<kube::Config> {
    let options = KubeConfigOptions {
        context: args.context.clone(),
        ..Default::default()
    };
    match &args.kubeconfig {
        Some(path) => {
            let kubeconfig =
                Kubeconfig::read_from(path).with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .with_context(|| format!("loading kubeconfig {}", path.display()))
        }
        None if args.context.is_some() => kube::Config::from_kubeconfig(&options)
            .await
            .context("loading the default kubeconfig"),
        None => kube::Config::infer()
            .await
            .context("finding kcp credentials (set --kubeconfig)"),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    args.log.init()?;
    install_crypto_provider();
    let mut config = faros_hub_reconciler::Config::new(kube_config(&args).await?);
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
    tracing::info!(?config, "starting");
    faros_hub_reconciler::run(config, faros_core::telemetry::shutdown_signal()).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Args::command().debug_assert();
    }
}
