//! The provider binary's command line: `<bin> init` publishes the API and exits, `<bin> [serve]`
//! runs everything (the default, so a container needs no arguments).
//!
//! | `serve` flag | env | default |
//! |---|---|---|
//! | `--listen` | `FAROS_LISTEN` | `0.0.0.0:8081` |
//! | `--hub-url` | `FAROS_HUB_URL` | unset: no heartbeats, every `/api` and `/mcp` call refused |
//! | `--provider-name` | `FAROS_PROVIDER_NAME` | the app's name |
//! | `--hub-token-file` | `FAROS_HUB_TOKEN_FILE` | the token in the provider kubeconfig |
//! | `--hub-ca-file` | `FAROS_HUB_CA_FILE` | system roots |
//! | `--jwks-url` | `FAROS_HUB_JWKS_URL` | `<hub-url>/.well-known/faros/jwks.json` |
//! | `--allow-foreign-workspace` | `FAROS_ALLOW_FOREIGN_WORKSPACE` | false |
//!
//! `init` takes `--allow-prune` (`FAROS_INIT_ALLOW_PRUNE`) and `--allow-foreign-workspace`; both
//! take `--log-format`, `--log-level` (`FAROS_LOG_FORMAT`, `FAROS_LOG_LEVEL`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::builder::BoolishValueParser;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use faros_core::identity::Jwks;
use faros_core::names;
use faros_core::telemetry::{LogArgs, install_crypto_provider};

use super::{App, ServeOptions, shutdown_signal};
use crate::heartbeat::{self, HeartbeatConfig, TokenSource};
use crate::identity::IdentityVerifier;
use crate::{bootstrap, config, workspace};

/// The variable naming the listen address of `serve`.
pub const ENV_LISTEN: &str = "FAROS_LISTEN";

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    log: LogArgs,
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Publish the provider's API from inside its provider workspace, then exit.
    Init(InitArgs),
    /// Run the controllers, backend, MCP tools, UI assets and heartbeats (the default).
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
    #[arg(long, env = ENV_LISTEN, default_value = "0.0.0.0:8081")]
    listen: SocketAddr,
    /// Hub base URL for heartbeats and its JWKS; unset disables heartbeats.
    #[arg(long, env = names::ENV_HUB_URL)]
    hub_url: Option<String>,
    /// Provider name as registered with the hub (default: the provider's own name).
    #[arg(long, env = names::ENV_PROVIDER_NAME)]
    provider_name: Option<String>,
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

impl ServeArgs {
    /// `serve`'s defaults and environment when no subcommand is given.
    fn from_env() -> anyhow::Result<Self> {
        #[derive(Parser)]
        struct Only {
            #[command(flatten)]
            args: ServeArgs,
        }
        Ok(Only::try_parse_from(["serve"])?.args)
    }
}

impl App {
    /// The provider binary: `init` or `serve` (this module's command line), returning the process
    /// exit code. Here rather than in [`crate::app`] so that the app does not import its own command
    /// line, which imports the app.
    pub fn main(self) -> ExitCode {
        main(self)
    }
}

/// Parses the command line and runs `init` or `serve` on a new tokio runtime.
pub fn main(app: App) -> ExitCode {
    install_crypto_provider();
    // clap wants 'static strings; these live as long as the process anyway.
    let about: &'static str = Box::leak(format!("The faros {} provider", app.name()).into_boxed_str());
    let version: &'static str = Box::leak(app.version().to_string().into_boxed_str());
    let matches = Cli::command().about(about).version(version).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")
        .and_then(|rt| {
            rt.block_on(async move {
                cli.log.init()?;
                match cli.cmd {
                    Some(Cmd::Init(args)) => init(app, args).await,
                    Some(Cmd::Serve(args)) => serve(app, args).await,
                    None => serve(app, ServeArgs::from_env()?).await,
                }
            })
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e:?}");
            ExitCode::FAILURE
        }
    }
}

async fn init(app: App, args: InitArgs) -> anyhow::Result<()> {
    let source = config::source();
    tracing::info!(kubeconfig = %source, "{} init", app.name());
    let kube = config::provider_config()
        .await
        .context("init needs a kubeconfig (set FAROS_PROVIDER_KUBECONFIG)")?;
    let mut opts = app.init_options();
    opts.allow_prune |= args.allow_prune;
    opts.allow_foreign_workspace |= args.allow_foreign_workspace;
    let report = app
        .init(kube, &opts)
        .await
        .with_context(|| format!("provider workspace bootstrap (kubeconfig: {source})"))?;
    tracing::info!(
        export = app.export_name(),
        objects = report.applied.len(),
        unchanged = report.unchanged(),
        pruned = report.pruned.len(),
        "{} init: workspace bootstrapped",
        app.name()
    );
    Ok(())
}

async fn serve(app: App, args: ServeArgs) -> anyhow::Result<()> {
    let provider = args.provider_name.clone().unwrap_or_else(|| app.name().to_string());
    let source = config::source();
    let kube = match config::provider_config().await {
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
    let jwks_url = args
        .jwks_url
        .clone()
        .or(args.hub_url.as_deref().map(IdentityVerifier::hub_jwks_url));
    let verifier = match jwks_url {
        Some(url) => IdentityVerifier::from_url(&provider, &url, ca_pem.as_deref())?,
        // Without a hub nothing can be verified: every /api and /mcp call is refused.
        None => IdentityVerifier::with_jwks(&provider, Jwks::default()),
    };
    let heartbeat = args.hub_url.as_ref().map(|hub| {
        let mut hb = HeartbeatConfig::new(hub, &provider, app.version());
        hb.ca_pem = ca_pem.clone();
        // The revision is what this binary's `init` publishes; a provider whose inputs cannot be
        // read still beats (with its version), as one from before revisions did.
        hb.revision = heartbeat::serving_revision(&provider, &app.init_options()).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "heartbeats name no revision");
            None
        });
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
    let options = ServeOptions {
        provider,
        verifier: Arc::new(verifier),
        kube,
        heartbeat,
        stats: Default::default(),
    };
    app.serve(
        options,
        listener,
        shutdown_signal(faros_core::telemetry::shutdown_signal()),
    )
    .await?;
    Ok(())
}
