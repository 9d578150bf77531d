//! Starting and stopping the server: state directory, TLS, store, authenticators, controllers, and
//! the HTTPS listener (HTTP/1.1 and HTTP/2).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use faros_core::coalesce::Coalesce;
use faros_core::status::Status;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::api;
use crate::auth::{Authenticator, RbacIndex, ReloadCounts, ServiceAccountTokens, generate_token, parse_token_file};
use crate::registry::Registry;
use crate::state::ServerState;
use crate::store::{ObjectKey, Store, StoreOptions};
use crate::tls::TlsMaterial;
use faros_core::token_file::{FileStamp, file_stamp};

/// Server settings. Defaults suit `faros dev` and tests.
#[derive(Clone, Debug)]
pub struct Config {
    /// Holds the redb file, CA and serving certificate, admin token and ServiceAccount signing key.
    pub state_dir: PathBuf,
    /// Where to listen; port 0 picks a free port.
    pub listen: SocketAddr,
    /// A kcp/kube-apiserver static token file (`token,user,uid,"group1,group2"`).
    pub token_file: Option<PathBuf>,
    /// More token files of the same format, read and reloaded with `token_file`: tokens that only
    /// this server accepts, e.g. the faros components' own kcp identities when `token_file` is
    /// shared with the hub. A token may appear in one file only.
    pub extra_token_files: Vec<PathBuf>,
    /// Extra DNS names / IPs for the serving certificate.
    pub hostnames: Vec<String>,
    /// The base URL clients reach this server at (kcp's `--shard-base-url`), published in workspace
    /// and endpoint slice URLs and admin kubeconfigs. Unset: `https://<bound address>`, which is
    /// only right when clients connect to the bound address itself (not behind a Service).
    pub external_url: Option<String>,
    /// Watch/continue history length (events).
    pub history_capacity: usize,
    /// Request body limit.
    pub max_body_bytes: usize,
    /// Longest a request other than a watch may take (kube-apiserver's `--request-timeout`);
    /// `?timeout=` may shorten it. Past it the client gets a 504 Status.
    pub request_timeout: Duration,
    /// Batch concurrent writes into one durable commit.
    pub group_commit: bool,
    /// redb page cache. Reads are served from the store's memory image, so the cache only holds
    /// the b-tree pages of the writer's own lookups and inserts: a small one costs a few reads of
    /// the OS page cache per commit, a big one the same memory again as the hottest values.
    pub cache_bytes: usize,
    /// How long each workspace phase (Scheduling, Initializing) stays visible before the lifecycle
    /// controller moves on. kcp itself moves as fast as its controllers run (`Duration::ZERO` here);
    /// the default keeps a short pause so tests catch clients that assume a new workspace is Ready
    /// at once.
    pub phase_delay: Duration,
    /// Accept OIDC ID tokens of this issuer (kcp's and kube-apiserver's `--oidc-*` flags).
    pub oidc: Option<faros_core::oidc::OidcSettings>,
}

impl Config {
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        Self {
            state_dir: state_dir.into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            token_file: None,
            extra_token_files: Vec::new(),
            hostnames: Vec::new(),
            external_url: None,
            history_capacity: 10_000,
            max_body_bytes: 3 * 1024 * 1024,
            request_timeout: Duration::from_secs(60),
            group_commit: true,
            cache_bytes: 8 * 1024 * 1024,
            phase_delay: crate::kcp::tenancy::DEFAULT_PHASE_DELAY,
            oidc: None,
        }
    }
}

/// Errors starting the server; each names the file or setting at fault.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot create or secure the state directory at {path}: {source}")]
    StateDir { path: PathBuf, source: std::io::Error },
    #[error("cannot read or write {path}: {source}")]
    File { path: PathBuf, source: std::io::Error },
    #[error("token file {path}: {message}")]
    TokenFile { path: PathBuf, message: String },
    #[error("TLS setup failed: {0}")]
    Tls(String),
    #[error("store {path}: {message}")]
    Store { path: PathBuf, message: String },
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: SocketAddr, source: std::io::Error },
    #[error("{0}")]
    Auth(String),
}

/// What the APIExport virtual workspace of one export serves, as tests and diagnostics see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportSummary {
    pub identity_hash: String,
    /// The exported resources as consumers see them, `group/version/resource`.
    pub resources: Vec<String>,
    /// Consumer logical clusters with a Bound APIBinding to the export.
    pub bindings: BTreeMap<String, ConsumerSummary>,
}

/// One consumer of an export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerSummary {
    pub binding_name: String,
    /// Permission claims the consumer accepted.
    pub claims: Vec<ClaimSummary>,
}

/// An accepted permission claim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimSummary {
    pub group: String,
    pub resource: String,
    /// Effective verbs: what the export claims intersected with what the binding accepts.
    pub verbs: Vec<String>,
    /// The label selector of the objects covered; None for all of them.
    pub selector: Option<String>,
}

/// A running server. Dropping it does not stop it; call [`Server::shutdown`].
pub struct Server {
    addr: SocketAddr,
    db_path: PathBuf,
    url: String,
    ca_pem: String,
    tls_config: Arc<rustls::ServerConfig>,
    admin_token: String,
    state: Arc<ServerState>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    controllers: Vec<tokio::task::JoinHandle<()>>,
}

fn read_or_create(path: &Path, create: impl FnOnce() -> Vec<u8>) -> Result<Vec<u8>, ServerError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let bytes = create();
            write_private(path, &bytes)?;
            Ok(bytes)
        }
        Err(source) => Err(ServerError::File {
            path: path.into(),
            source,
        }),
    }
}

/// Writes a secret file readable by the owner only.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), ServerError> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    opts.mode(0o600);
    let err = |source| ServerError::File {
        path: path.into(),
        source,
    };
    let mut f = opts.open(&tmp).map_err(err)?;
    f.write_all(bytes).map_err(err)?;
    f.sync_all().map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}

impl Server {
    pub async fn start(config: Config) -> Result<Self, ServerError> {
        crate::state_dir::secure(&config.state_dir).map_err(|e| ServerError::StateDir {
            path: e.path,
            source: e.source,
        })?;
        let dir = &config.state_dir;
        let tls = TlsMaterial::load_or_create(dir, &config.hostnames).map_err(|e| ServerError::Tls(e.to_string()))?;
        let admin_token = String::from_utf8_lossy(&read_or_create(&dir.join("admin.token"), || {
            generate_token().into_bytes()
        })?)
        .trim()
        .to_string();
        let sa_key_bytes = read_or_create(&dir.join("service-account.key"), || {
            ServiceAccountTokens::generate_key().to_vec()
        })?;
        let sa_key: [u8; 32] = sa_key_bytes.as_slice().try_into().map_err(|_| {
            ServerError::Auth(format!(
                "{} must hold exactly 32 bytes",
                dir.join("service-account.key").display()
            ))
        })?;
        let token_files: Vec<PathBuf> = config
            .token_file
            .iter()
            .chain(&config.extra_token_files)
            .cloned()
            .collect();
        let mut token_file_stamps = Vec::new();
        let mut static_tokens = Vec::new();
        for path in &token_files {
            // Stamp before reading: an edit landing in between is then seen by the first poll.
            token_file_stamps.push(file_stamp(path));
            let text = std::fs::read_to_string(path).map_err(|source| ServerError::File {
                path: path.clone(),
                source,
            })?;
            static_tokens.extend(parse_token_file(&text).map_err(|e| ServerError::TokenFile {
                path: path.clone(),
                message: e.to_string(),
            })?);
        }
        let authn = Authenticator::new(
            Some(&admin_token),
            &static_tokens,
            Some(ServiceAccountTokens::new(sa_key)),
        )
        .map_err(|e| ServerError::Auth(e.to_string()))?;
        let oidc = match config.oidc.clone() {
            Some(settings) => Some(crate::oidc::verifier(settings).map_err(|e| ServerError::Auth(e.to_string()))?),
            None => None,
        };
        let db_path = dir.join("kcp.redb");
        // redb creates its file with the umask; an empty file of ours it takes as a new database.
        crate::state_dir::create_private(&db_path).map_err(|e| ServerError::StateDir {
            path: e.path,
            source: e.source,
        })?;
        let store_opts = StoreOptions {
            path: db_path.clone(),
            history_capacity: config.history_capacity,
            cache_bytes: config.cache_bytes,
            group_commit: config.group_commit,
        };
        let store = tokio::task::spawn_blocking(move || Store::open(store_opts))
            .await
            .map_err(|e| ServerError::Store {
                path: db_path.clone(),
                message: e.to_string(),
            })?
            .map_err(|e| ServerError::Store {
                path: db_path.clone(),
                message: e.to_string(),
            })?;
        let (events_tx, events_rx) = tokio::sync::mpsc::unbounded_channel();
        let state = Arc::new(ServerState {
            store,
            registry: Registry::new(
                [
                    crate::builtin::builtin_resources(),
                    crate::kcp::resources::kcp_resources(),
                ]
                .concat(),
            ),
            authn,
            oidc,
            rbac: RwLock::new(RbacIndex::default()),
            clusters: RwLock::default(),
            sa_tokens: ServiceAccountTokens::new(sa_key),
            ca_pem: tls.ca_pem().to_string(),
            max_body_bytes: config.max_body_bytes,
            phase_delay: config.phase_delay,
            events: events_tx,
            metrics: crate::metrics::Metrics::default(),
            server_url: tokio::sync::watch::Sender::new(None),
            apis: Arc::default(),
            protobuf_items: Default::default(),
        });
        state.rebuild_indexes();
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|source| ServerError::Listen {
                addr: config.listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| ServerError::Listen {
            addr: config.listen,
            source,
        })?;
        // Workspace and endpoint slice URLs are built from the external URL, or else from the
        // address actually bound.
        let url = config
            .external_url
            .as_deref()
            .map(|u| u.trim_end_matches('/').to_string())
            .unwrap_or_else(|| format!("https://{addr}"));
        crate::kcp::tenancy::set_server_url(&state, &url);
        crate::bootstrap::ensure_root(&state).await;
        crate::kcp::tenancy::bootstrap(&state).await;
        let mut controllers = vec![tokio::spawn(crate::controllers::run(state.clone(), events_rx))];
        controllers.extend(crate::kcp::spawn_controllers(&state));
        if !token_files.is_empty() {
            controllers.push(tokio::spawn(watch_token_files(
                Arc::downgrade(&state),
                token_files,
                token_file_stamps,
            )));
        }

        let tls_config = tls.server_config();
        let acceptor = tokio_rustls::TlsAcceptor::from(tls_config.clone());
        let router = router(state.clone(), config.request_timeout);
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(serve(listener, acceptor, router, stopped));
        tracing::info!(%addr, state_dir = %dir.display(), "embedded kcp serving");
        Ok(Self {
            addr,
            db_path: dir.join("kcp.redb"),
            url,
            tls_config,
            ca_pem: tls.ca_pem().to_string(),
            admin_token,
            state,
            stop,
            task,
            controllers,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The external URL if configured, else `https://<bound address>` (e.g. `https://127.0.0.1:<port>`).
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The serving TLS configuration (certificate for localhost/127.0.0.1 and the configured hosts,
    /// signed by [`Server::ca_pem`]); other servers of `faros dev` reuse it so one CA covers everything.
    pub fn tls_config(&self) -> Arc<rustls::ServerConfig> {
        self.tls_config.clone()
    }

    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The admin bearer token (user `admin`, group `system:masters`). Never log it.
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// Shared state, for in-process components and the crate's own tests.
    #[cfg(test)]
    pub(crate) fn state(&self) -> &Arc<ServerState> {
        &self.state
    }

    /// What the APIExport virtual workspace serves for `export_cluster`/`export_name` (None when the
    /// export does not exist or has no identity yet).
    pub fn export_view(&self, export_cluster: &str, export_name: &str) -> Option<ExportSummary> {
        let view = crate::kcp::apis::export_view(&self.state, export_cluster, export_name)?;
        Some(ExportSummary {
            identity_hash: view.identity_hash.clone(),
            resources: view
                .resources
                .iter()
                .map(|d| format!("{}/{}/{}", d.group, d.version, d.resource))
                .collect(),
            bindings: view
                .bindings
                .iter()
                .map(|(cluster, consumer)| {
                    let claims = consumer
                        .claims
                        .iter()
                        .map(|c| ClaimSummary {
                            group: c.group.clone(),
                            resource: c.resource.clone(),
                            verbs: c.verbs.clone(),
                            selector: c.selector.as_ref().map(|s| s.to_string()),
                        })
                        .collect();
                    (
                        cluster.clone(),
                        ConsumerSummary {
                            binding_name: consumer.binding_name.clone(),
                            claims,
                        },
                    )
                })
                .collect(),
        })
    }

    /// The keys of every object stored in logical cluster `cluster`.
    pub fn stored_keys(&self, cluster: &str) -> Result<Vec<ObjectKey>, ServerError> {
        self.state.store.scan_cluster(cluster).map_err(|e| ServerError::Store {
            path: self.db_path.clone(),
            message: e.to_string(),
        })
    }

    /// How many token-file reloads were applied and refused since start.
    pub fn token_file_reloads(&self) -> ReloadCounts {
        self.state.authn.reload_counts()
    }

    /// A kubeconfig for `user` with `token` pointing at `cluster` (`root` unless told otherwise).
    pub fn kubeconfig(&self, cluster: &str, user: &str, token: &str) -> String {
        use base64::Engine;
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: faros-kcp\n  cluster:\n    server: {url}/clusters/{cluster}\n    certificate-authority-data: {ca}\nusers:\n- name: {user}\n  user:\n    token: {token}\ncontexts:\n- name: {user}\n  context:\n    cluster: faros-kcp\n    user: {user}\ncurrent-context: {user}\n",
            url = self.url()
        )
    }

    /// The admin kubeconfig for the root workspace.
    pub fn admin_kubeconfig(&self) -> String {
        self.kubeconfig("root", "admin", &self.admin_token)
    }

    /// A kube `Config` for `cluster` as admin, for in-process clients.
    pub fn admin_kube_config_yaml(&self, cluster: &str) -> String {
        self.kubeconfig(cluster, "admin", &self.admin_token)
    }

    /// A kube-rs configuration for `cluster` as admin, for in-process clients.
    pub async fn admin_config(&self, cluster: &str) -> Result<kube::Config, kube::config::KubeconfigError> {
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&self.kubeconfig(cluster, "admin", &self.admin_token))?;
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await
    }

    /// Stops accepting connections and ends open ones.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
        for c in &self.controllers {
            c.abort();
        }
        for c in self.controllers {
            let _ = c.await;
        }
    }
}

/// How often the token files are checked for changes.
const TOKEN_FILE_POLL: Duration = Duration::from_secs(1);

/// Re-reads the token files whenever one's stamp changes, so users can be added to a running `faros
/// dev`; all of them are applied together, or none. A background poll rather than a check on the
/// request path: authentication is synchronous there and cannot await file IO, and one `stat` a
/// second per file is free. A bad edit (or a vanished file) is logged once per change, naming the
/// files, and the previous tokens stay in force. Holds only a weak reference so it never keeps a
/// stopped server's state alive.
async fn watch_token_files(state: Weak<ServerState>, paths: Vec<PathBuf>, mut stamps: Vec<FileStamp>) {
    let mut tick = tokio::time::interval(TOKEN_FILE_POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(state) = state.upgrade() else { return };
        let current = {
            let paths = paths.clone();
            tokio::task::spawn_blocking(move || paths.iter().map(|p| file_stamp(p)).collect::<Vec<_>>())
                .await
                .unwrap_or_default()
        };
        if current.len() != paths.len() || current == stamps {
            continue;
        }
        stamps = current;
        let mut texts = Vec::with_capacity(paths.len());
        for path in &paths {
            match tokio::fs::read_to_string(path).await {
                Ok(text) => texts.push(text),
                Err(e) => {
                    tracing::error!(path = %path.display(), error = %e, "cannot re-read the token file; keeping the previous tokens");
                    break;
                }
            }
        }
        if texts.len() != paths.len() {
            continue;
        }
        let files = paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        match state.authn.reload_static_token_files(&texts) {
            Ok(users) => tracing::info!(files, users, "token files reloaded"),
            Err(e) => {
                tracing::error!(files, error = %e, "token files not reloaded; keeping the previous tokens")
            }
        }
    }
}

fn router(state: Arc<ServerState>, request_timeout: Duration) -> Router {
    let health = || async { "ok" };
    Router::new()
        .route("/healthz", get(health))
        .route("/livez", get(health))
        .route("/readyz", get(health))
        .route("/metrics", get(metrics))
        .fallback(api::handle)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
        .layer(axum::middleware::from_fn_with_state(request_timeout, deadline))
        .layer(axum::middleware::map_request(drain_unread_body))
}

/// An answer given before the body was read (401, 404, 413, …) must still reach the client: an
/// unfinished body is read and discarded after the response instead of resetting the HTTP/2
/// stream or, on HTTP/1.1, closing the connection under a client that is still writing (which
/// then sees a broken pipe instead of the answer).
async fn drain_unread_body(req: axum::extract::Request) -> axum::extract::Request {
    let (parts, body) = req.into_parts();
    axum::extract::Request::from_parts(parts, faros_core::drain::drain_on_drop(body))
}

async fn method_not_allowed() -> Response {
    Status::method_not_allowed("the server does not allow this method on the requested resource").into_response()
}

/// kube-apiserver's deadline for requests that are not long-running: the server's request
/// timeout, or `?timeout=` (a Go duration) when shorter. Past it the client gets kube-apiserver's
/// 504 while the handler runs to its end in the background, as kube-apiserver's timeout filter
/// does, so a write is never cut off halfway.
async fn deadline(
    State(limit): State<Duration>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let params = api::params::Params::parse(req.uri().query());
    if params.watch() {
        return next.run(req).await;
    }
    let asked = params
        .get("timeout")
        .and_then(api::request::go_duration)
        .filter(|t| !t.is_zero());
    let timeout = asked.map_or(limit, |t| t.min(limit));
    let handler = tokio::spawn(next.run(req));
    match tokio::time::timeout(timeout, handler).await {
        Ok(Ok(resp)) => resp,
        Ok(Err(e)) => Status::internal(format!("the request handler failed: {e}")).into_response(),
        Err(_) => {
            Status::timeout("Timeout: request did not complete within requested timeout - context deadline exceeded")
                .into_response()
        }
    }
}

async fn metrics(State(state): State<Arc<ServerState>>, headers: http::HeaderMap) -> Response {
    if let Err(s) = api::authenticate(&state, &headers).await {
        return s.into_response();
    }
    state.metrics.response(state.store.image_size())
}

async fn serve(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    router: Router,
    mut stopped: watch::Receiver<bool>,
) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((tcp, peer)) = accepted else { continue };
                let _ = tcp.set_nodelay(true);
                let acceptor = acceptor.clone();
                let service = hyper_util::service::TowerToHyperService::new(router.clone());
                let stop = stopped.clone();
                connections.spawn(async move {
                    let tls = match acceptor.accept(tcp).await {
                        Ok(tls) => tls,
                        Err(e) => {
                            tracing::debug!(%peer, error = %e, "TLS handshake failed");
                            return;
                        }
                    };
                    if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
                        // HTTP/2 frames are written out per burst, not per frame (see `coalesce`).
                        serve_connection(Coalesce::new(tls), service, stop).await;
                    } else {
                        serve_connection(tls, service, stop).await;
                    }
                });
            }
            _ = stopped.changed() => break,
        }
        // Reap finished connection tasks so the set does not grow without bound.
        while connections.try_join_next().is_some() {}
    }
    connections.shutdown().await;
}

/// Serves one connection, HTTP/2 or HTTP/1.1 told apart by its first bytes, until it ends or the server stops.
async fn serve_connection<IO>(
    io: IO,
    service: hyper_util::service::TowerToHyperService<Router>,
    mut stop: watch::Receiver<bool>,
) where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stop.changed() => {}
    }
}

/// Converts a Status into a response (helper for non-API routes).
pub fn status_response(s: Status) -> Response {
    s.into_response()
}
