//! `faros-provider-quickstart [init|serve]`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::builder::BoolishValueParser;
use clap::{Parser, Subcommand};
use faros_core::identity::Jwks;
use faros_core::names;
use faros_core::telemetry::{LogArgs, install_crypto_provider};
use faros_provider_quickstart as quickstart;
use faros_sdk::heartbeat::{self, HeartbeatConfig, TokenSource};
use faros_sdk::identity::IdentityVerifier;
use faros_sdk::{bootstrap, workspace};

#[derive(Parser)]
#[command(version, about = "The faros quickstart provider")]
struct Cli {
    #[command(flatten)]
    log: LogArgs,
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Publish the Greeting API from inside the provider workspace, then exit.
    Init(InitArgs),
    /// Run the controller, backend, MCP tools, UI assets and heartbeats (the default).
    Serve(ServeArgs),
}

#[derive(clap::Args)]
struct InitArgs {
    /// Remove export resources that no schema in FAROS_SCHEMAS_DIR defines any more (tenants lose them).
    #[arg(long, env = bootstrap::ENV_ALLOW_PRUNE, value_parser = BoolishValueParser::new())]
    allow_prune: bool,
    /// Act even when the kubeconfig is not the provider's ServiceAccount in its provider workspace.
    #[arg(long, env = workspace::ENV_ALLOW_FOREIGN_WORKSPACE, value_parser = BoolishValueParser::new())]
    allow_foreign_workspace: bool,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Listen address.
    #[arg(long, env = "FAROS_LISTEN", default_value = "0.0.0.0:8081")]
    listen: SocketAddr,
    /// Hub base URL for heartbeats and its JWKS; unset disables heartbeats.
    #[arg(long, env = names::ENV_HUB_URL)]
    hub_url: Option<String>,
    /// Provider name as registered with the hub.
    #[arg(long, env = names::ENV_PROVIDER_NAME, default_value = quickstart::PROVIDER)]
    provider_name: String,
    /// File holding the heartbeat bearer token; default: the token in the provider kubeconfig.
    #[arg(long, env = "FAROS_HUB_TOKEN_FILE")]
    hub_token_file: Option<PathBuf>,
    /// Extra CA (PEM) to trust for the hub (`faros dev` writes its CA to `<state-dir>/ca.crt`).
    #[arg(long, env = heartbeat::ENV_HUB_CA_FILE)]
    hub_ca_file: Option<PathBuf>,
    /// JWKS of the hub's identity assertions; default `<hub-url>/.well-known/faros/jwks.json`.
    #[arg(long, env = "FAROS_HUB_JWKS_URL")]
    jwks_url: Option<String>,
    /// Run even when the kubeconfig is not the provider's ServiceAccount in its provider workspace.
    #[arg(long, env = workspace::ENV_ALLOW_FOREIGN_WORKSPACE, value_parser = BoolishValueParser::new())]
    allow_foreign_workspace: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    install_crypto_provider();
    let cli = Cli::parse();
    cli.log.init()?;
    match cli.cmd {
        Some(Cmd::Init(args)) => init(args).await,
        Some(Cmd::Serve(args)) => serve(args).await,
        None => serve(ServeArgs::parse_from_env()?).await,
    }
}

impl ServeArgs {
    /// `serve`'s defaults and environment when no subcommand is given.
    fn parse_from_env() -> anyhow::Result<Self> {
        #[derive(Parser)]
        struct Only {
            #[command(flatten)]
            args: ServeArgs,
        }
        Ok(Only::try_parse_from(["serve"])?.args)
    }
}

async fn init(args: InitArgs) -> anyhow::Result<()> {
    let source = faros_sdk::config::source();
    tracing::info!(kubeconfig = %source, "quickstart init");
    let config = faros_sdk::config::provider_config()
        .await
        .context("init needs a kubeconfig (set FAROS_PROVIDER_KUBECONFIG)")?;
    let mut opts = quickstart::init_options();
    opts.allow_prune |= args.allow_prune;
    opts.allow_foreign_workspace |= args.allow_foreign_workspace;
    let report = quickstart::init(config, &opts)
        .await
        .with_context(|| format!("provider workspace bootstrap (kubeconfig: {source})"))?;
    tracing::info!(
        export = quickstart::EXPORT,
        objects = report.applied.len(),
        unchanged = report.unchanged(),
        pruned = report.pruned.len(),
        "quickstart init: workspace bootstrapped"
    );
    Ok(())
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let source = faros_sdk::config::source();
    let kube = match faros_sdk::config::provider_config().await {
        Ok(c) => {
            tracing::info!(kubeconfig = %source, "provider kubeconfig");
            workspace::locate(&c, args.allow_foreign_workspace)
                .await
                .with_context(|| format!("kubeconfig: {source}"))?;
            Some(c)
        }
        Err(e) => {
            tracing::warn!(error = %e, "running without a provider kubeconfig");
            None
        }
    };
    let ca_pem = match &args.hub_ca_file {
        Some(p) => Some(
            std::fs::read(p)
                .with_context(|| format!("{}={}: reading the hub's CA", heartbeat::ENV_HUB_CA_FILE, p.display()))?,
        ),
        None => None,
    };
    let verifier = match (&args.jwks_url, &args.hub_url) {
        (Some(url), _) => IdentityVerifier::from_url(&args.provider_name, url, ca_pem.as_deref())?,
        (None, Some(hub)) => IdentityVerifier::from_url(
            &args.provider_name,
            &IdentityVerifier::hub_jwks_url(hub),
            ca_pem.as_deref(),
        )?,
        // Without a hub nothing can be verified: every /api and /mcp call is refused.
        (None, None) => IdentityVerifier::with_jwks(&args.provider_name, Jwks::default()),
    };
    let heartbeat = args.hub_url.as_ref().map(|hub| {
        let mut hb = HeartbeatConfig::new(hub, &args.provider_name, quickstart::VERSION);
        hb.ca_pem = ca_pem.clone();
        hb.token = match &args.hub_token_file {
            Some(p) => TokenSource::File(p.clone()),
            None => TokenSource::Kubeconfig(
                std::env::var(names::ENV_PROVIDER_KUBECONFIG)
                    .ok()
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| names::DEFAULT_PROVIDER_KUBECONFIG.into())
                    .into(),
            ),
        };
        hb
    });
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    let shutdown = quickstart::shutdown_signal(faros_core::telemetry::shutdown_signal());
    quickstart::serve(
        quickstart::ServeOptions {
            provider: args.provider_name,
            verifier: Arc::new(verifier),
            kube,
            heartbeat,
            stats: Default::default(),
        },
        listener,
        shutdown,
    )
    .await?;
    Ok(())
}
