//! Test harness: upstreams as real HTTP servers on 127.0.0.1:0, and a hub served in-process.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use faros_hub_api::auth::OidcSettings;
use faros_hub_api::auth::tokenreview::{EXTRA_CLUSTER_NAME, ReviewedUser, StaticReviewer};
use faros_hub_api::catalog::clock::ManualClock;
use faros_hub_api::{Config, Hub};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub const WAIT: Duration = Duration::from_secs(60);
pub const T0: &str = "2026-01-01T00:00:00Z";
pub const ALICE: &str = "alice-token";
pub const SA_Q: &str = "sa-token-of-q";
pub const SA_OTHER_CLUSTER: &str = "sa-token-of-another-workspace";
pub const CLUSTER_Q: &str = "cq";

/// Serves `router` on 127.0.0.1:0 and returns its address.
pub async fn serve(router: Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    addr
}

/// A provider upstream. `/stream` sends "first", waits for `release`, then sends "second".
pub struct Upstream {
    pub addr: SocketAddr,
    pub release: Arc<Notify>,
}

impl Upstream {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

async fn echo(req: Request) -> Response {
    let headers: BTreeMap<String, String> = req
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string()))
        .collect();
    let method = req.method().to_string();
    let uri = req.uri().to_string();
    let body = axum::body::to_bytes(req.into_body(), usize::MAX).await.unwrap();
    axum::Json(serde_json::json!({
        "method": method,
        "uri": uri,
        "headers": headers,
        "body": String::from_utf8_lossy(&body),
    }))
    .into_response()
}

async fn upgrade(mut req: Request) -> Response {
    let on = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let upgraded = on.await.unwrap();
        let mut io = TokioIo::new(upgraded);
        let (mut r, mut w) = tokio::io::split(&mut io);
        let _ = tokio::io::copy(&mut r, &mut w).await;
    });
    Response::builder()
        .status(101)
        .header("connection", "upgrade")
        .header("upgrade", "websocket")
        .header("set-cookie", "x=1")
        .body(Body::empty())
        .unwrap()
}

pub async fn upstream() -> Upstream {
    let release = Arc::new(Notify::new());
    let r = release.clone();
    let r2 = release.clone();
    let router = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/ui/main.js",
            get(|| async {
                (
                    [("content-type", "text/javascript"), ("set-cookie", "steal=1")],
                    "customElements.define('faros-quickstart', class extends HTMLElement {});",
                )
            }),
        )
        .route(
            "/ui/",
            get(|| async { ([("content-type", "text/html")], "<html>index</html>") }),
        )
        .route(
            "/ui/page.html",
            get(|| async { ([("content-type", "text/html")], "<html>a page</html>") }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        )
        .route(
            "/api/stream",
            get(move || {
                let r = r.clone();
                async move {
                    let stream = async_stream(r);
                    Body::from_stream(stream)
                }
            }),
        )
        .route(
            "/clusters/x/api/stream",
            get(move || {
                let r = r2.clone();
                async move { Body::from_stream(async_stream(r)) }
            }),
        )
        .route("/ws", any(upgrade))
        .fallback(echo);
    Upstream {
        addr: serve(router).await,
        release,
    }
}

fn async_stream(release: Arc<Notify>) -> impl futures::Stream<Item = Result<bytes::Bytes, std::io::Error>> {
    futures::stream::unfold(0u8, move |state| {
        let release = release.clone();
        async move {
            match state {
                0 => Some((Ok(bytes::Bytes::from_static(b"first\n")), 1)),
                1 => {
                    release.notified().await;
                    Some((Ok(bytes::Bytes::from_static(b"second\n")), 2))
                }
                _ => None,
            }
        }
    })
}

pub fn sa_user(cluster: &str) -> ReviewedUser {
    ReviewedUser {
        username: "system:serviceaccount:default:provider".into(),
        extra: BTreeMap::from([(EXTRA_CLUSTER_NAME.to_string(), vec![cluster.to_string()])]),
        groups: vec!["system:serviceaccounts".into()],
        ..Default::default()
    }
}

/// A hub without kcp: fake TokenReview, manual clock, registry fed by the test.
pub struct TestHub {
    pub addr: SocketAddr,
    pub hub_state: faros_hub_api::AppState,
    pub clock: Arc<ManualClock>,
    pub stop: CancellationToken,
}

impl TestHub {
    pub async fn start(kcp_url: &str, tweak: impl FnOnce(&mut Config)) -> Self {
        faros_core::telemetry::install_crypto_provider();
        let clock = Arc::new(ManualClock::new(T0.parse().unwrap()));
        let reviewer = StaticReviewer::default()
            .with(
                "*",
                ALICE,
                ReviewedUser {
                    username: "alice".into(),
                    groups: vec!["devs".into()],
                    ..Default::default()
                },
            )
            .with("*", SA_Q, sa_user(CLUSTER_Q))
            .with("*", SA_OTHER_CLUSTER, sa_user("c-other"));
        let mut config = Config::new(kube::Config::new(kcp_url.parse().unwrap()));
        config.clock = clock.clone();
        config.token_reviewer = Some(Arc::new(reviewer));
        // The test upstreams listen on loopback, which the hub refuses by default.
        config.upstreams.allow = faros_hub_api::proxy::UpstreamPolicy::loopback();
        // Most tests' kcp is an echo server: sessions stay in this process.
        config.records = faros_hub_api::records::Placement::Process;
        tweak(&mut config);
        let hub = Hub::new(config).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        tokio::spawn(faros_hub_api::server::serve(
            listener,
            None,
            hub.service(),
            stop.clone(),
            Duration::from_secs(1),
        ));
        Self {
            addr,
            hub_state: hub.state().clone(),
            clock,
            stop,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn registry(&self) -> Arc<faros_hub_api::Registry> {
        self.hub_state.registry.clone()
    }
}

/// The crypto provider, and logs captured by the test harness (shown for failures, and with
/// `--nocapture`; level from `FAROS_TEST_LOG`).
pub fn init_tracing_and_crypto() {
    faros_core::telemetry::install_crypto_provider();
    let _ = faros_core::telemetry::LogArgs {
        log_format: faros_core::telemetry::LogFormat::Text,
        log_level: std::env::var("FAROS_TEST_LOG").unwrap_or_else(|_| "info,kube=warn,hyper=warn".into()),
    }
    .init();
}

/// A plain-HTTP client (the shared helper, panicking in a test).
pub fn http() -> reqwest::Client {
    faros_test_support::https::client().unwrap()
}

/// A plain-HTTP client that does not follow redirects (the shared helper, panicking in a test).
#[allow(dead_code)] // not every test binary checks redirects
pub fn no_redirects() -> reqwest::Client {
    faros_test_support::https::not_following_redirects().unwrap()
}

/// Polls until a check yields `Some` (the shared helper, panicking with `what` on timeout).
#[allow(unused_imports)] // not every test binary polls
pub use faros_test_support::eventually::eventually_some as eventually;

/// An embedded kcp with the hub reconciler running on it, for tests that run several hub replicas
/// (a hub process's worth of hub each) on one kcp.
pub struct SharedKcp {
    pub server: faros_embedded_kcp::Server,
    pub dir: tempfile::TempDir,
    reconciler_stop: Option<tokio::sync::oneshot::Sender<()>>,
    reconciler: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

impl SharedKcp {
    /// kcp knowing `tokens` from its static token file, which the replicas read too; with `oidc`,
    /// kcp also authenticates the issuer's ID tokens itself (what `kubectl` through the hub's kcp
    /// pass-through meets).
    pub async fn start(tokens: &[faros_core::token_file::StaticToken], oidc: Option<OidcSettings>) -> Self {
        init_tracing_and_crypto();
        let dir = tempfile::tempdir().unwrap();
        let mut config = faros_embedded_kcp::Config::new(dir.path().join("state"));
        let token_file = dir.path().join("tokens.csv");
        faros_test_support::users::write_token_file(&token_file, tokens).unwrap();
        config.token_file = Some(token_file);
        config.oidc = oidc;
        let server = faros_embedded_kcp::Server::start(config).await.unwrap();
        let mut kcp = Self {
            server,
            dir,
            reconciler_stop: None,
            reconciler: None,
        };
        let rc = faros_hub_reconciler::Config::new(kcp.admin().await);
        let (stop, rx) = tokio::sync::oneshot::channel::<()>();
        kcp.reconciler = Some(tokio::spawn(async move {
            faros_hub_reconciler::run(rc, async {
                let _ = rx.await;
            })
            .await
            .map_err(anyhow::Error::from)
        }));
        kcp.reconciler_stop = Some(stop);
        kcp
    }

    /// The static token file kcp and the replicas read.
    pub fn token_file(&self) -> std::path::PathBuf {
        self.dir.path().join("tokens.csv")
    }

    pub async fn admin(&self) -> kube::Config {
        faros_test_support::kubeconfig::config_from_yaml(&self.server.admin_kubeconfig())
            .await
            .unwrap()
    }

    /// Stops the reconciler (waiting for it) and kcp.
    pub async fn shutdown(mut self) {
        let _ = self.reconciler_stop.take().map(|s| s.send(()));
        if let Some(r) = self.reconciler.take() {
            let _ = tokio::time::timeout(WAIT, r).await;
        }
        self.server.shutdown().await;
    }
}

/// A hub replica on a [`SharedKcp`]: its own state, listener and background loops, serving plain
/// HTTP, sessions kept in kcp.
pub struct Replica {
    pub addr: SocketAddr,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Replica {
    /// Serves on `addr` (a stopped replica's, to restart it) or a fresh port, with the kcp's token
    /// file, a 2 s shutdown grace and what `tweak` sets; returns once `/readyz` answers 200 (the
    /// tree bootstrapped, the catalog listed).
    pub async fn start(kcp: &SharedKcp, addr: Option<SocketAddr>, tweak: impl FnOnce(&mut Config)) -> Self {
        let mut config = Config::new(kcp.admin().await);
        config.token_file = Some(kcp.token_file());
        config.shutdown_grace = Duration::from_secs(2);
        tweak(&mut config);
        let hub = Hub::new(config).unwrap();
        let listener = TcpListener::bind(addr.unwrap_or_else(|| "127.0.0.1:0".parse().unwrap()))
            .await
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = CancellationToken::new();
        let shutdown = stop.clone().cancelled_owned();
        let task = tokio::spawn(async move { hub.serve(listener, shutdown).await.unwrap() });
        let replica = Self { addr, stop, task };
        let url = replica.url("/readyz");
        eventually("replica /readyz", WAIT, || {
            let url = url.clone();
            async move {
                let r = http().get(&url).send().await.ok()?;
                (r.status() == 200).then_some(())
            }
        })
        .await;
        replica
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops the replica and waits until it has; its address, to start it again there.
    pub async fn stop(self) -> SocketAddr {
        self.stop.cancel();
        tokio::time::timeout(WAIT, self.task).await.unwrap().unwrap();
        self.addr
    }
}
