//! The provider app builder: what a provider's `main` is made of.
//!
//! ```no_run
//! use std::process::ExitCode;
//! use std::sync::Arc;
//!
//! use faros_sdk::axum::{Router, routing::get};
//! use faros_sdk::prelude::*;
//!
//! fn note() -> ApiResource {
//!     ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("notes.example.dev", "v1alpha1", "Note"), "notes")
//! }
//!
//! async fn reconcile(_note: Arc<DynamicObject>, _tenant: Tenant) -> Result<Action, kube::Error> {
//!     Ok(Action::AwaitChange)
//! }
//!
//! async fn list(caller: Caller) -> Result<Value, Status> {
//!     let notes = Api::<DynamicObject>::all_with(caller.client, &note()).list(&ListParams::default()).await?;
//!     Ok(json!({"items": notes.items.len()}))
//! }
//!
//! pub fn app() -> App {
//!     App::new("notes", env!("CARGO_PKG_VERSION"))
//!         .files(env!("CARGO_MANIFEST_DIR"))                     // schemas/, manifest.yaml, provider.yaml
//!         .controller(note(), reconcile)
//!         .routes(Router::new().route("/api/notes", get(|| async { "[]" }))) // behind the identity check
//!         .tool(Tool::no_input("list_notes", "List the Notes.", list))
//! }
//!
//! fn main() -> ExitCode {
//!     app().main()
//! }
//! ```
//!
//! [`App::main`] is the binary: `init` (publish the API, then exit) and `serve` (the default) with
//! their flags and environment ([`cli`]). [`App::serve`] and [`App::init`] are the same steps for
//! in-process callers (`faros dev`, tests). `serve` checks where it acts, verifies the hub's identity
//! assertions on every route given to [`App::routes`] and on `/mcp`, heartbeats, waits for kcp to
//! publish the export's virtual workspace URL, then runs the controllers and hands handlers and
//! tools a [`Caller`] for the caller's workspace; it serves `/healthz` and `/metrics` (open) and stops
//! gracefully on the shutdown signal.
//!
//! What it must not do: hide a step a provider must be able to replace; every piece it wires is also
//! public on its own (bootstrap, heartbeat, identity, controller, mcp).

pub mod cli;

use std::path::PathBuf;
use std::sync::Arc;

use axum::routing::get;
use axum::{Extension, Json, Router};
use faros_core::client::ClientFactory;
use faros_core::kcp::apis::v1alpha2::PermissionClaim;
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use kube::api::{ApiResource, DynamicObject};
use serde_json::json;

pub use crate::tenants::{Caller, ProviderInfo, Tenants};

use crate::bootstrap::{self, InitError, InitOptions, InitReport};
use crate::controller::{Action, Controller, ControllerStats, Endpoints, Tenant};
use crate::heartbeat::{Heartbeat, HeartbeatConfig};
use crate::identity::{IdentityVerifier, require_identity};
use crate::tools::{Tool, ToolServer};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Reconcile = dyn Fn(Arc<DynamicObject>, Tenant) -> BoxFuture<'static, Result<Action, BoxError>> + Send + Sync;

#[derive(Clone)]
struct ControllerDef {
    resource: ApiResource,
    reconcile: Arc<Reconcile>,
}

/// A provider: its name, API, controllers, routes and tools. See the module docs.
#[derive(Clone)]
pub struct App {
    name: String,
    version: String,
    export: String,
    groups: Vec<String>,
    claims: Vec<PermissionClaim>,
    files: Option<PathBuf>,
    workspace_path_env: Option<String>,
    controllers: Vec<ControllerDef>,
    routes: Router,
    public: Router,
    tools: Vec<Tool>,
    instructions: Option<String>,
}

impl App {
    /// Provider `name` (as registered with the hub) at `version` (reported in heartbeats); its
    /// export is `<name>.providers.faros.sh` unless [`App::export`] says otherwise.
    pub fn new(name: &str, version: &str) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            export: format!("{name}.providers.faros.sh"),
            groups: Vec::new(),
            claims: Vec::new(),
            files: None,
            workspace_path_env: None,
            controllers: Vec::new(),
            routes: Router::new(),
            public: Router::new(),
            tools: Vec::new(),
            instructions: None,
        }
    }

    /// The APIExport (and endpoint slice) name, which is also the API group schemas must use unless
    /// [`App::group`] adds more.
    pub fn export(mut self, export: &str) -> Self {
        self.export = export.into();
        self
    }

    /// Another API group this provider's schemas may use.
    pub fn group(mut self, group: &str) -> Self {
        if self.groups.is_empty() {
            self.groups.push(self.export.clone());
        }
        self.groups.push(group.into());
        self
    }

    /// A permission claim tenants accept on Enable (its verbs must match the CatalogEntry's).
    pub fn claim(mut self, claim: PermissionClaim) -> Self {
        self.claims.push(claim);
        self
    }

    /// The crate directory holding `schemas/`, `manifest.yaml` and `provider.yaml`
    /// (`env!("CARGO_MANIFEST_DIR")`), for [`App::bundled_paths`] and [`App::provider_manifest_path`].
    pub fn files(mut self, dir: &str) -> Self {
        self.files = Some(dir.into());
        self
    }

    /// An environment variable that, when set, is the endpoint slice's explicit `spec.export.path`.
    pub fn workspace_path_env(mut self, var: &str) -> Self {
        self.workspace_path_env = Some(var.into());
        self
    }

    /// Reconciles `resource` (exported or claimed) in every tenant through the virtual workspace.
    pub fn controller<F, Fut, E>(mut self, resource: ApiResource, reconcile: F) -> Self
    where
        F: Fn(Arc<DynamicObject>, Tenant) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        let reconcile = Arc::new(reconcile);
        let boxed = move |obj, tenant| -> BoxFuture<'static, Result<Action, BoxError>> {
            let fut = reconcile(obj, tenant);
            Box::pin(async move { fut.await.map_err(|e| Box::new(e) as BoxError) })
        };
        self.controllers.push(ControllerDef {
            resource,
            reconcile: Arc::new(boxed),
        });
        self
    }

    /// Backend routes, each behind the identity check: handlers may extract [`Caller`],
    /// [`VerifiedIdentity`](crate::identity::VerifiedIdentity) and [`ProviderInfo`].
    pub fn routes(mut self, routes: Router) -> Self {
        self.routes = self.routes.merge(routes);
        self
    }

    /// Routes anyone may call (UI assets): no identity, no [`Caller`].
    pub fn public_routes(mut self, routes: Router) -> Self {
        self.public = self.public.merge(routes);
        self
    }

    /// An MCP tool at `/mcp`.
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// What the MCP server tells clients about its tools.
    pub fn instructions(mut self, text: &str) -> Self {
        self.instructions = Some(text.into());
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    pub fn export_name(&self) -> &str {
        &self.export
    }

    /// `init` options from the environment (`FAROS_SCHEMAS_DIR`, `FAROS_CATALOGENTRY_FILE`,
    /// `FAROS_INIT_ALLOW_PRUNE`, `FAROS_ALLOW_FOREIGN_WORKSPACE`, [`App::workspace_path_env`]) with
    /// this provider's export, groups and claims.
    pub fn init_options(&self) -> InitOptions {
        let mut opts = InitOptions::from_env(&self.export);
        opts.groups = self.groups.clone();
        opts.claims = self.claims.clone();
        opts.workspace_path = self
            .workspace_path_env
            .as_ref()
            .and_then(|var| opts.env.get(var))
            .filter(|p| !p.is_empty())
            .cloned();
        opts
    }

    /// Publishes the API as `config`'s identity ([`bootstrap::init`]).
    pub async fn init(&self, config: kube::Config, opts: &InitOptions) -> Result<InitReport, InitError> {
        bootstrap::init(config, opts).await
    }

    /// The schemas directory and CatalogEntry manifest next to the crate ([`App::files`]).
    pub fn bundled_paths(&self) -> (PathBuf, PathBuf) {
        let root = self.files.clone().unwrap_or_default();
        (root.join("schemas"), root.join("manifest.yaml"))
    }

    /// The `Provider` manifest that registers this provider with the hub ([`App::files`]).
    pub fn provider_manifest_path(&self) -> PathBuf {
        self.files.clone().unwrap_or_default().join("provider.yaml")
    }

    /// The whole HTTP surface: `/healthz`, `/metrics` and the public routes (open); the routes and
    /// `/mcp` (verified identity required), reaching tenants through `tenants`.
    pub fn router(&self, verifier: Arc<IdentityVerifier>, tenants: Tenants, stats: Arc<ControllerStats>) -> Router {
        let info = ProviderInfo {
            name: self.name.clone(),
            version: self.version.clone(),
        };
        let mut app = Router::new()
            .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
            .route("/metrics", get(move || std::future::ready(metrics(&stats))))
            .merge(self.public.clone())
            .merge(
                self.routes
                    .clone()
                    .route_layer(axum::middleware::from_fn_with_state(verifier.clone(), require_identity)),
            );
        if !self.tools.is_empty() {
            let (tools, instructions) = (Arc::new(self.tools.clone()), self.instructions.clone());
            let tenants = tenants.clone();
            app = app.merge(crate::mcp::router(verifier, move || {
                ToolServer::new(tools.clone(), tenants.clone(), instructions.clone())
            }));
        }
        app.layer(Extension(tenants)).layer(Extension(info))
    }

    /// Serves on `listener` until `shutdown` completes: controllers (with `opts.kube`), heartbeats
    /// (with `opts.heartbeat`) and the HTTP surface of [`App::router`].
    pub async fn serve(
        self,
        opts: ServeOptions,
        listener: tokio::net::TcpListener,
        shutdown: Shutdown,
    ) -> Result<(), ServeError> {
        let tenants = Tenants::new(&opts.provider);
        let mut background = tokio::task::JoinSet::new();
        if let Some(config) = opts.kube {
            let workspace = kube::Client::try_from(config.clone()).map_err(ServeError::Kube)?;
            let factory = ClientFactory::new(config)?;
            background.spawn(run_controllers(
                Owner {
                    provider: self.name.clone(),
                    export: self.export.clone(),
                },
                self.controllers.clone(),
                workspace,
                factory,
                tenants.clone(),
                opts.stats.clone(),
                shutdown.clone(),
            ));
        } else {
            tracing::warn!("no provider kubeconfig: nothing is reconciled and tenant APIs answer 503");
        }
        if let Some(config) = opts.heartbeat {
            let hb = Heartbeat::http(&config)?;
            let stop = shutdown.clone();
            background.spawn(async move { hb.run(stop).await });
        } else {
            tracing::info!("heartbeat disabled (set FAROS_HUB_URL to enable)");
        }
        let app = self.router(opts.verifier, tenants, opts.stats);
        tracing::info!(provider = %opts.provider, addr = ?listener.local_addr().ok(), "serving");
        let result = axum::serve(listener, app)
            .with_graceful_shutdown(shutdown.clone())
            .await
            .map_err(ServeError::Http);
        background.abort_all();
        result
    }
}

/// What [`App::serve`] runs with.
pub struct ServeOptions {
    /// The provider's name as registered with the hub (the identity assertions' audience).
    pub provider: String,
    /// Verifies the hub's identity assertions on the routes and `/mcp`.
    pub verifier: Arc<IdentityVerifier>,
    /// Provider workspace access; `None` runs without controllers and tenant APIs.
    pub kube: Option<kube::Config>,
    /// Heartbeats; `None` disables them.
    pub heartbeat: Option<HeartbeatConfig>,
    /// Controller counters (reconciles, failures), also served at `/metrics`.
    pub stats: Arc<ControllerStats>,
}

/// A clonable shutdown signal.
pub type Shutdown = Shared<BoxFuture<'static, ()>>;

/// Turns any future into a [`Shutdown`] that every task can await.
pub fn shutdown_signal(f: impl Future<Output = ()> + Send + 'static) -> Shutdown {
    f.boxed().shared()
}

/// Errors of [`App::serve`].
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("serving HTTP: {0}")]
    Http(#[source] std::io::Error),
    #[error("provider kubeconfig: {0}")]
    Kube(#[source] kube::Error),
    #[error(transparent)]
    Client(#[from] faros_core::client::ClientError),
    #[error(transparent)]
    Heartbeat(#[from] crate::heartbeat::BeatError),
}

/// `/metrics`: the controller counters, in the exposition every faros server uses.
fn metrics(stats: &ControllerStats) -> axum::response::Response {
    use prometheus_client::metrics::counter::Counter;
    let mut registry = prometheus_client::registry::Registry::with_prefix("faros_provider");
    for (name, help, value) in [
        ("reconciles", "Reconciles run.", stats.reconciles()),
        (
            "reconcile_failures",
            "Reconciles that failed (retried with backoff).",
            stats.failures(),
        ),
    ] {
        let counter = Counter::<u64>::default();
        counter.inc_by(value);
        registry.register(name, help, counter);
    }
    faros_core::metrics::response(&registry)
}

/// Whom the controllers run for: the provider, whose name is their writes' field manager, and its
/// export, whose virtual workspace URLs they follow.
struct Owner {
    provider: String,
    export: String,
}

/// Follows the export's virtual workspace URLs and runs every controller over all of them until
/// shutdown. kcp publishes a URL only once a tenant has bound the export, which may take days.
async fn run_controllers(
    owner: Owner,
    controllers: Vec<ControllerDef>,
    workspace: kube::Client,
    factory: ClientFactory,
    tenants: Tenants,
    stats: Arc<ControllerStats>,
    shutdown: Shutdown,
) {
    let (endpoints, follower) = Endpoints::follow(workspace, &owner.export, shutdown.clone());
    let probe = controllers.first().map(|def| def.resource.clone());
    tenants.set(factory.clone(), endpoints.clone(), probe).await;
    let runs = controllers.into_iter().map(|def| {
        let kind = def.resource.kind.clone();
        let controller = Controller::new(factory.clone(), endpoints.clone(), def.resource)
            .stats(stats.clone())
            .field_manager(&owner.provider);
        let reconcile = def.reconcile;
        let shutdown = shutdown.clone();
        async move {
            if let Err(e) = controller
                .run(move |obj, tenant| reconcile(obj, tenant), shutdown)
                .await
            {
                tracing::error!(error = %e, kind, "controller stopped");
            }
        }
    });
    futures::future::join_all(runs).await;
    follower.abort();
}
