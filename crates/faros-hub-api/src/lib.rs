//! `faros-hub-api`: the hub's front door (docs/hub-api.md; its place: docs/architecture.md#request-paths).
//!
//! - **Catalog** ([`catalog`]): CatalogEntries watched through the `providers.faros.sh` virtual
//!   workspace; one authoritative entry per provider name; status written back only when it
//!   changes; heartbeats from the provider's own ServiceAccount only (TokenReview) and backend
//!   health probes, which together decide readiness; `GET /api/providers`.
//! - **Front door** ([`edge`]): request IDs, spans and request metrics for every request, and
//!   dispatch by path prefix to the **proxies** ([`proxy`]: provider UIs, provider backends with a
//!   verified identity and signed assertion instead of the caller's credentials, the kcp
//!   pass-through; per-thread upstream pools) or to the **API router** ([`router`]).
//! - **API router** ([`router`]): built from one table per route group (`GET /api/providers`,
//!   tenancy, Enable/Disable, MCP, the portal, sign-in, health, metrics, the assertion JWKS), each
//!   row a method, a path, who may call it and its handler; the router applies the access, and the
//!   same tables are docs/hub-api.md's route list and what the route tests iterate.
//!
//! Layering: this file, [`router`] and [`state`] are the top; they import the subsystems, never
//! the reverse. Handlers extract only the sub-state they use from [`state::AppState`] (axum
//! `FromRef`: the tenancy routes take `Arc<Tenancy>`, the session API [`portal::login::SessionApi`],
//! …), so a subsystem does not import [`state`] (the proxies and the kubeconfig handler, which read
//! several parts of it, do, and no module [`state`] imports leads back to them). Types shared by
//! several subsystems are leaves ([`workspace`], [`serving`], [`portal::grant`]). No module import
//! circle: two modules never depend on each other, directly or around a circle.
//!
//! Composition: [`Hub::new`] builds everything without IO; [`Hub::service`] is the whole hub as one
//! tower service (for in-process tests or mounting), [`Hub::spawn_background`] starts the kcp-facing
//! loops, and [`Hub::serve`] does both and serves HTTP(S) until shutdown. [`run`] is the binary's
//! entry.

mod as_status;
pub mod auth;
pub mod catalog;
pub use faros_core::drain;
pub mod edge;
pub mod export_urls;
pub mod keys;
pub mod mcp;
pub mod metrics;
pub mod portal;
#[cfg(any(test, feature = "fuzzing"))]
pub mod properties;
#[cfg(test)]
mod proptests;
pub mod proxy;
pub mod readiness;
pub mod records;
pub mod router;
pub mod server;
pub mod serving;
pub mod state;
pub mod tenancy;
pub mod tls_reload;
pub mod workspace;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use faros_core::client::{ClientError, ClientFactory};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use catalog::probe::ProbeSettings;
pub use catalog::{CatalogSettings, Registry, RegistrySettings};
pub use serving::HttpSettings;
pub use state::AppState;

use auth::tokenreview::{CacheSettings, CachedReviewer, KubeTokenReviewer, TokenReviewer};
use auth::{Authenticator, BearerTokenReview};
use catalog::clock::{Clock, SystemClock};
use keys::KeyStore;
use metrics::Metrics;

/// Where the serving certificate comes from.
#[derive(Clone)]
pub enum Tls {
    /// PEM files (`--tls-cert-file`, `--tls-key-file`).
    Files { cert: PathBuf, key: PathBuf },
    /// A ready rustls config (`faros dev` generates one from its CA).
    Config(Arc<rustls::ServerConfig>),
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Files { cert, key } => f.debug_struct("Files").field("cert", cert).field("key", key).finish(),
            Self::Config(_) => f.write_str("Config(..)"),
        }
    }
}

/// Everything the hub API needs; [`Config::new`] fills defaults that work in `faros dev`.
#[derive(Clone)]
pub struct Config {
    /// The hub's kcp identity: its own kcp user with the permissions docs/install.md#kcp-identities
    /// lists, or kcp's admin (any `/clusters/<x>` suffix is ignored). The pass-through uses only its
    /// server URL and CA, never its credentials.
    pub kube: kube::Config,
    pub listen: SocketAddr,
    /// `None`: plain HTTP (behind a TLS-terminating ingress, or tests).
    /// Where `/metrics` is served (plain HTTP, nothing else there); `None`: on the public listener.
    /// A separate port keeps metrics off whatever exposes the public one (Ingress, TLSRoute, NodePort).
    pub metrics_listen: Option<SocketAddr>,
    pub tls: Option<Tls>,
    /// Persisted signing key of identity assertions; `None`: a fresh key per process.
    pub signing_key_file: Option<PathBuf>,
    pub http: HttpSettings,
    pub connect_timeout: Duration,
    pub registry: RegistrySettings,
    pub catalog: CatalogSettings,
    pub probe: ProbeSettings,
    pub token_cache: CacheSettings,
    /// How long in-flight requests may finish after the listener stops accepting.
    pub shutdown_grace: Duration,
    /// How long `/readyz` fails before the listener stops accepting (see [`server`]).
    pub shutdown_delay: Duration,
    pub clock: Arc<dyn Clock>,
    /// Replaces the default chain (static tokens, OIDC, kcp TokenReview) of user authentication.
    pub authenticator: Option<Arc<dyn Authenticator>>,
    /// kcp's token file (`--token-auth-file`): its users authenticate here too; re-read on change.
    pub token_file: Option<PathBuf>,
    /// Bearer ID tokens of this OIDC issuer authenticate users.
    pub oidc: Option<auth::OidcSettings>,
    /// Replaces the kcp TokenReview (tests).
    pub token_reviewer: Option<Arc<dyn TokenReviewer>>,
    /// Organizations, workspaces, Enable/Disable.
    pub tenancy: tenancy::TenancySettings,
    /// MCP federation timeouts and cache lifetimes.
    pub mcp: mcp::McpSettings,
    /// Portal session lifetime.
    pub session: portal::SessionSettings,
    /// Where portal sessions, OIDC sign-ins in flight and MCP sessions are kept (kcp: shared by
    /// every replica and kept across restarts).
    pub records: records::Placement,
    /// Where provider URLs may lead the hub (the public URL's host is added as the hub's own).
    pub upstreams: proxy::UpstreamPolicy,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The kube config holds credentials; show only where it points.
        f.debug_struct("Config")
            .field("kcp", &self.kube.cluster_url.to_string())
            .field("listen", &self.listen)
            .field("tls", &self.tls)
            .field("signing_key_file", &self.signing_key_file)
            .field("http", &self.http)
            .field("registry", &self.registry)
            .field("catalog", &self.catalog)
            .field("probe", &self.probe)
            .field("token_file", &self.token_file)
            .field("oidc", &self.oidc)
            .finish_non_exhaustive()
    }
}

impl Config {
    pub fn new(kube: kube::Config) -> Self {
        Self {
            kube,
            listen: SocketAddr::from(([0, 0, 0, 0], 8443)),
            tls: None,
            metrics_listen: None,
            signing_key_file: None,
            http: HttpSettings::default(),
            connect_timeout: Duration::from_secs(5),
            registry: RegistrySettings::default(),
            catalog: CatalogSettings::default(),
            probe: ProbeSettings::default(),
            token_cache: CacheSettings::default(),
            shutdown_grace: Duration::from_secs(10),
            shutdown_delay: Duration::ZERO,
            clock: Arc::new(SystemClock),
            authenticator: None,
            token_file: None,
            oidc: None,
            token_reviewer: None,
            tenancy: tenancy::TenancySettings::default(),
            mcp: mcp::McpSettings::default(),
            session: portal::SessionSettings::default(),
            records: records::Placement::default(),
            upstreams: proxy::UpstreamPolicy::default(),
        }
    }
}

/// The configured upstream policy with the hub's own public host added: a provider URL naming the
/// hub would make it proxy to itself.
fn upstream_policy(config: &Config) -> proxy::UpstreamPolicy {
    let mut policy = config.upstreams.clone();
    if let Some(host) = config
        .tenancy
        .public_url
        .as_deref()
        .and_then(|u| u.parse::<http::Uri>().ok())
        .and_then(|u| u.host().map(|h| h.trim_end_matches('.').to_ascii_lowercase()))
        .filter(|h| h.parse::<std::net::IpAddr>().is_err() && !policy.hub_hosts.contains(h))
    {
        policy.hub_hosts.push(host);
    }
    policy
}

/// Errors that stop the hub API.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kcp client: {0}")]
    Client(#[from] ClientError),
    #[error(transparent)]
    Proxy(#[from] proxy::ProxyError),
    #[error(transparent)]
    Keys(#[from] keys::KeyError),
    #[error(transparent)]
    Mcp(#[from] mcp::upstream::McpClientError),
    #[error(transparent)]
    Auth(#[from] auth::AuthError),
    #[error(transparent)]
    Tls(#[from] server::TlsError),
    #[error("hub records: {0}")]
    Records(#[from] records::StoreError),
    #[error("listening on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A hub API process, built but not yet running.
pub struct Hub {
    state: AppState,
    config: Config,
    factory: ClientFactory,
    /// The kcp record store's cache, watched by [`Hub::spawn_background`].
    records: Option<Arc<records::kcp::KcpBackend>>,
}

impl Hub {
    /// Builds clients, keys and the registry. No IO beyond reading/creating the key file.
    pub fn new(config: Config) -> Result<Self, Error> {
        let factory = ClientFactory::new(config.kube.clone())?;
        let reviewer: Arc<dyn TokenReviewer> = match &config.token_reviewer {
            Some(r) => r.clone(),
            None => Arc::new(CachedReviewer::new(
                KubeTokenReviewer::new(factory.clone()),
                config.token_cache,
            )),
        };
        let authn: Arc<dyn Authenticator> = Arc::new(auth::Admitting::new(match &config.authenticator {
            Some(a) => a.clone(),
            None => auth_chain(&config, reviewer.clone())?,
        }));
        let keys = match &config.signing_key_file {
            Some(path) => KeyStore::load_or_create(path)?,
            None => KeyStore::ephemeral()?,
        };
        let kcp_base: http::Uri = factory
            .server()
            .parse()
            .map_err(|e: http::uri::InvalidUri| ClientError::Url {
                url: factory.server().to_string(),
                reason: e.to_string(),
            })?;
        let mut http_settings = config.http.clone();
        http_settings.public_proto = if config.tls.is_some() { "https" } else { "http" };
        let upstreams = Arc::new(upstream_policy(&config));
        let registry =
            Arc::new(Registry::new(config.clock.clone(), config.registry).with_upstream_policy(upstreams.clone()));
        let keys = Arc::new(keys);
        let metrics = Arc::new(Metrics::new());
        let tenancy = tenancy::Tenancy::new(factory.clone(), config.tenancy.clone(), metrics.membership.clone());
        let directory = mcp::directory::TenancyDirectory::new(tenancy.clone(), registry.clone());
        let mcp = mcp::Federation::new(
            registry.clone(),
            keys.clone(),
            metrics.clone(),
            tenancy.subscribe_bindings(),
            Arc::new(directory),
            config.mcp,
            upstreams.clone(),
        )?;
        let (record_store, kcp_records) = match config.records {
            records::Placement::Kcp => {
                let (path, namespace) = records::kcp_location();
                let backend = Arc::new(records::kcp::KcpBackend::new(
                    &factory,
                    path,
                    namespace,
                    config.clock.clone(),
                )?);
                (
                    records::Records::new(backend.clone(), config.clock.clone()),
                    Some(backend),
                )
            }
            records::Placement::Process => (records::Records::in_process(config.clock.clone()), None),
        };
        mcp.use_records(record_store.clone());
        let oidc_login = match &config.oidc {
            Some(settings) => Some(Arc::new(
                portal::login::OidcLogin::new(
                    settings.clone(),
                    auth::oidc::http_client(settings, config.connect_timeout)?,
                    config.tenancy.public_url.clone(),
                    record_store.clone(),
                )
                .with_authenticator(authn.clone()),
            )),
            None => None,
        };
        // OIDC sessions renew their ID tokens through the sign-in flow's client.
        let refresher = oidc_login.clone().map(|l| l as Arc<dyn portal::renew::Refresher>);
        let state = AppState::new(state::Shared {
            registry,
            tree: Arc::default(),
            authn,
            reviewer,
            keys,
            metrics,
            providers_http: proxy::provider_client(config.connect_timeout, (*upstreams).clone())?,
            kcp_http: proxy::kcp_client(&config.kube, config.connect_timeout)?,
            kcp_base,
            settings: http_settings,
            tenancy,
            mcp,
            sessions: Arc::new(
                portal::Sessions::new(record_store.clone(), config.session)
                    .with_public_url(config.tenancy.public_url.as_deref())
                    .with_refresher(refresher),
            ),
            oidc_login,
        });
        Ok(Self {
            state,
            config,
            factory,
            records: kcp_records,
        })
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    pub fn registry(&self) -> Arc<Registry> {
        self.state.registry.clone()
    }

    pub fn keys(&self) -> Arc<KeyStore> {
        self.state.keys.clone()
    }

    pub fn metrics(&self) -> Arc<Metrics> {
        self.state.metrics.clone()
    }

    /// The whole hub as one service (proxies, API routes, the layers every request passes).
    pub fn service(&self) -> edge::HubService {
        router::service_with(self.state.clone(), self.config.metrics_listen.is_none())
    }

    /// Starts the kcp-facing loops (workspace tree watch, catalog watch, status writer, sweeper,
    /// backend prober); they
    /// stop when `cancel` fires.
    pub fn spawn_background(&self, cancel: CancellationToken) -> tokio::task::JoinSet<()> {
        let mut tasks = tokio::task::JoinSet::new();
        let catalog = Arc::new(catalog::watch::Catalog {
            factory: self.factory.clone(),
            registry: self.state.registry.clone(),
            resolver: Arc::new(catalog::watch::Resolver::new(
                self.factory.clone(),
                self.state.tenancy.paths.clone(),
            )),
            metrics: self.state.metrics.clone(),
            settings: self.config.catalog,
        });
        tasks.spawn(catalog.run(cancel.clone()));
        tasks.spawn(readiness::watch_tree(
            self.factory.clone(),
            self.state.tree.clone(),
            cancel.clone(),
        ));
        if let Some(records) = &self.records {
            tasks.spawn(records.clone().run(cancel.clone()));
        }
        tasks.spawn(tenancy::index::watch::run(
            self.factory.clone(),
            self.state.tenancy.index.clone(),
            tenancy::index::watch::IndexSettings::default(),
            cancel.clone(),
        ));
        tasks.spawn(tenancy::index::backfill::run(
            self.state.tenancy.clone(),
            tenancy::index::watch::IndexSettings::default(),
            cancel.clone(),
        ));
        tasks.spawn(mcp::bindings::watch(
            self.factory.clone(),
            self.state.tenancy.clone(),
            faros_core::wait::BOOTSTRAP_GRACE,
            cancel.clone(),
        ));
        tasks.spawn(catalog::probe::run(
            self.state.registry.clone(),
            self.state.providers_http.clone(),
            self.config.probe,
            cancel,
        ));
        tasks
    }

    /// Binds `config.listen`.
    pub async fn bind(&self) -> Result<TcpListener, Error> {
        let addr = self.config.listen;
        TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Listen { addr, source })
    }

    /// Runs the background loops and serves on `listener` until `shutdown` completes.
    pub async fn serve(self, listener: TcpListener, shutdown: impl Future<Output = ()> + Send) -> Result<(), Error> {
        let tls = match &self.config.tls {
            None => None,
            Some(Tls::Config(c)) => Some(c.clone()),
            Some(Tls::Files { cert, key }) => Some(server::tls_from_files(cert, key)?),
        };
        let cancel = CancellationToken::new();
        let mut background = self.spawn_background(cancel.clone());
        let addr = listener.local_addr().ok();
        tracing::info!(?addr, tls = tls.is_some(), kcp = %self.factory.server(), "hub API serving");
        if let Some(addr) = self.config.metrics_listen {
            let metrics = TcpListener::bind(addr)
                .await
                .map_err(|source| Error::Listen { addr, source })?;
            let stop = cancel.clone();
            let app = router::metrics_router(self.state.clone());
            background.spawn(async move {
                let served = axum::serve(metrics, app)
                    .with_graceful_shutdown(stop.cancelled_owned())
                    .await;
                if let Err(e) = served {
                    tracing::error!(error = %e, "metrics listener failed");
                }
            });
            tracing::info!(%addr, "metrics serving (plain HTTP)");
        }
        let phases = server::Phases {
            draining: CancellationToken::new(),
            stop: cancel.clone(),
        };
        let serving = tokio::spawn(server::serve_phased(
            listener,
            tls,
            self.service(),
            phases.clone(),
            self.config.shutdown_grace,
        ));
        shutdown.await;
        tracing::info!(delay = ?self.config.shutdown_delay, grace = ?self.config.shutdown_grace, "hub API draining");
        phases.draining.cancel();
        tokio::time::sleep(self.config.shutdown_delay).await;
        tracing::info!("hub API shutting down");
        self.state.mcp.end_streams();
        cancel.cancel();
        let _ = serving.await;
        // MCP sessions end only now. At stop the server already ends their standalone streams
        // (SSE opened by a GET: clients reconnect to another replica, which restores the session
        // from its record); a tool call in flight answers on its POST's own stream, which must
        // outlive stop for the grace period: ending the sessions at stop cut those streams, and
        // the client's resume on another replica (which never had the stream) could not be answered.
        self.state.mcp.shutdown();
        while background.join_next().await.is_some() {}
        Ok(())
    }
}

/// Static tokens (if configured), then OIDC (if configured), then kcp's TokenReview.
fn auth_chain(config: &Config, reviewer: Arc<dyn TokenReviewer>) -> Result<Arc<dyn Authenticator>, Error> {
    let mut chain: Vec<Arc<dyn Authenticator>> = Vec::new();
    if let Some(path) = &config.token_file {
        chain.push(Arc::new(auth::StaticTokens::load(path)?));
    }
    if let Some(settings) = &config.oidc {
        let http = auth::oidc::http_client(settings, config.connect_timeout)?;
        chain.push(Arc::new(
            auth::OidcAuthenticator::new(settings.clone(), http)?.with_clock(config.clock.clone()),
        ));
    }
    chain.push(Arc::new(BearerTokenReview::new(reviewer, faros_core::names::ROOT_PATH)));
    Ok(Arc::new(auth::Chain(chain)))
}

/// Builds a [`Hub`] from `config`, binds `config.listen` and serves until `shutdown`.
pub async fn run(config: Config, shutdown: impl Future<Output = ()> + Send) -> Result<(), Error> {
    let hub = Hub::new(config)?;
    let listener = hub.bind().await?;
    hub.serve(listener, shutdown).await
}
