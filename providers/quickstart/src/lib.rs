//! The quickstart provider: the reference for everything the SDK offers.
//!
//! - [`init`]: publish the Greeting API (schema, export with the `configmaps` claim, endpoint slice,
//!   bind grant, CatalogEntry) from inside the provider workspace.
//! - [`serve`]: the Greeting controller over the export's virtual workspace, the backend
//!   (`/healthz`, `/api/hello`, `/api/greetings`, `/api/stream`), MCP tools at `/mcp`, the UI
//!   assets and heartbeats. Every part is optional so `faros dev` and tests can compose it.

pub mod backend;
pub mod greeting;
pub mod tools;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use faros_core::client::ClientFactory;
use faros_core::kcp::apis::v1alpha2::PermissionClaim;
use faros_sdk::bootstrap::{self, InitError, InitOptions, InitReport};
use faros_sdk::controller::{self, Controller, ControllerStats};
use faros_sdk::heartbeat::{Heartbeat, HeartbeatConfig};
use faros_sdk::identity::IdentityVerifier;
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};

use crate::backend::{AppState, Tenants};

/// The provider's name (Provider, CatalogEntry, hub routes).
pub const PROVIDER: &str = "quickstart";
/// The APIExport (and its endpoint slice).
pub const EXPORT: &str = greeting::GROUP;
/// Version reported in heartbeats.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// Optional explicit `spec.export.path` for the endpoint slice.
pub const ENV_WORKSPACE_PATH: &str = "QUICKSTART_WORKSPACE_PATH";

/// The claims tenants accept on Enable: read their ConfigMaps.
pub fn claims() -> Vec<PermissionClaim> {
    vec![PermissionClaim::new("", "configmaps", &["get", "list", "watch"])]
}

/// `init` options from the environment (`FAROS_SCHEMAS_DIR`, `FAROS_CATALOGENTRY_FILE`,
/// `FAROS_INIT_ALLOW_PRUNE`, `FAROS_ALLOW_FOREIGN_WORKSPACE`, `QUICKSTART_WORKSPACE_PATH`).
pub fn init_options() -> InitOptions {
    let mut opts = InitOptions::from_env(EXPORT);
    opts.claims = claims();
    opts.workspace_path = opts.env.get(ENV_WORKSPACE_PATH).filter(|p| !p.is_empty()).cloned();
    opts
}

/// Runs the SDK bootstrap with quickstart's export and claims, as `config`'s identity, which must be
/// quickstart's ServiceAccount in its own workspace unless `opts.allow_foreign_workspace`.
pub async fn init(config: kube::Config, opts: &InitOptions) -> Result<InitReport, InitError> {
    bootstrap::init(config, opts).await
}

/// The `Provider` manifest an admin applies to register quickstart with the hub.
pub fn provider_manifest_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("provider.yaml")
}

/// The files shipped next to the crate: schemas directory and CatalogEntry manifest.
pub fn bundled_paths() -> (PathBuf, PathBuf) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    (root.join("schemas"), root.join("manifest.yaml"))
}

/// What `serve` runs.
pub struct ServeOptions {
    pub provider: String,
    /// Verifies the hub's identity assertions on `/api/*` and `/mcp`.
    pub verifier: Arc<IdentityVerifier>,
    /// Provider workspace access; `None` runs without controller and tenant APIs.
    pub kube: Option<kube::Config>,
    /// Heartbeats; `None` disables them.
    pub heartbeat: Option<HeartbeatConfig>,
    /// Greeting controller counters (reconciles, failures).
    pub stats: Arc<ControllerStats>,
}

/// A clonable shutdown signal.
pub type Shutdown = Shared<BoxFuture<'static, ()>>;

/// Turns any future into a [`Shutdown`] that every task can await.
pub fn shutdown_signal(f: impl Future<Output = ()> + Send + 'static) -> Shutdown {
    f.boxed().shared()
}

/// Errors of `serve`.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("serving HTTP: {0}")]
    Http(#[source] std::io::Error),
    #[error("provider kubeconfig: {0}")]
    Kube(#[source] kube::Error),
    #[error(transparent)]
    Client(#[from] faros_core::client::ClientError),
    #[error(transparent)]
    Heartbeat(#[from] faros_sdk::heartbeat::BeatError),
}

/// Serves on `listener` until `shutdown` completes.
pub async fn serve(
    opts: ServeOptions,
    listener: tokio::net::TcpListener,
    shutdown: Shutdown,
) -> Result<(), ServeError> {
    let tenants = Tenants::default();
    let state = AppState {
        provider: opts.provider.clone(),
        tenants: tenants.clone(),
    };
    let mut background = tokio::task::JoinSet::new();
    if let Some(config) = opts.kube {
        let workspace = kube::Client::try_from(config.clone()).map_err(ServeError::Kube)?;
        let factory = ClientFactory::new(config)?;
        background.spawn(run_controller(
            workspace,
            factory,
            tenants,
            opts.stats.clone(),
            shutdown.clone(),
        ));
    } else {
        tracing::warn!("no provider kubeconfig: Greetings are not reconciled and tenant APIs answer 503");
    }
    if let Some(config) = opts.heartbeat {
        let hb = Heartbeat::http(&config)?;
        let stop = shutdown.clone();
        background.spawn(async move { hb.run(stop).await });
    } else {
        tracing::info!("heartbeat disabled (set FAROS_HUB_URL to enable)");
    }
    let app = backend::router(state, opts.verifier);
    tracing::info!(addr = ?listener.local_addr().ok(), "quickstart serving");
    let result = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown.clone())
        .await
        .map_err(ServeError::Http);
    background.abort_all();
    result
}

/// Waits for the export's virtual workspace URL, then reconciles Greetings until shutdown.
async fn run_controller(
    workspace: kube::Client,
    factory: ClientFactory,
    tenants: Tenants,
    stats: Arc<ControllerStats>,
    shutdown: Shutdown,
) {
    let url = loop {
        // kcp publishes the URL only once a tenant has bound the export, which may take days.
        let wait = controller::endpoint_url(workspace.clone(), EXPORT, Duration::from_secs(300));
        tokio::select! {
            _ = shutdown.clone() => return,
            found = wait => match found {
                Ok(url) => break url,
                Err(e) => tracing::info!(error = %e, "no virtual workspace URL yet; still waiting"),
            }
        }
    };
    tracing::info!(%url, "reconciling Greetings through the virtual workspace");
    tenants.set(factory.clone(), url.clone()).await;
    let controller = Controller::new(factory, &url, greeting::api_resource()).stats(stats);
    if let Err(e) = controller.run(greeting::reconcile, shutdown).await {
        tracing::error!(error = %e, "Greeting controller stopped");
    }
}
