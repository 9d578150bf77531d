//! Serving the router over HTTP or HTTPS (HTTP/1.1 and HTTP/2, upgrades allowed), with graceful
//! shutdown: stop accepting, let in-flight requests finish for a grace period, then close.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use std::convert::Infallible;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::response::Response;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

pub use crate::tls_reload::TlsError;

/// A rustls server config serving the PEM files `cert` and `key` (certificate chain, private
/// key), offering h2 and http/1.1. The pair is loaded now (an error if it does not load) and
/// again when the files change (cert-manager renewals): see [`crate::tls_reload`].
pub fn tls_from_files(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    tls_reloading(cert, key, crate::tls_reload::CHECK_INTERVAL)
}

/// [`tls_from_files`], looking at the files at most every `interval`.
pub fn tls_reloading(cert: &Path, key: &Path, interval: Duration) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let resolver = crate::tls_reload::ReloadingCert::new(cert, key, interval)?;
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(resolver));
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// What the server can serve: the hub's [`crate::edge::HubService`], or any axum `Router`.
pub trait HttpService:
    tower::Service<http::Request<Body>, Response = Response, Error = Infallible, Future: Send + 'static>
    + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> HttpService for S where
    S: tower::Service<http::Request<Body>, Response = Response, Error = Infallible, Future: Send + 'static>
        + Clone
        + Send
        + Sync
        + 'static
{
}

/// Serves `router` on `listener` until `stop` is cancelled, then drains for up to `grace`.
///
/// Connections are handed to one single-threaded runtime per core (as nginx hands them to its
/// worker processes): every hop of a request (TLS, handler, the upstream client connection the
/// handler spawns) then runs on one thread, instead of bouncing between the caller's runtime's
/// workers with a cross-thread wake-up at each hop. Without threads to spare (a one-core machine,
/// or a runtime that cannot be built) connections are served on the caller's runtime.
pub async fn serve(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    router: impl HttpService,
    stop: CancellationToken,
    grace: Duration,
) {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut workers = Vec::new();
    if threads > 1 {
        for i in 0..threads {
            match Worker::start(i, acceptor.clone(), router.clone(), stop.clone(), grace) {
                Ok(w) => workers.push(w),
                Err(error) => {
                    tracing::warn!(%error, "cannot start a connection thread; serving on the caller's runtime");
                    break;
                }
            }
        }
    }
    if workers.len() < 2 {
        for w in workers {
            w.finish().await;
        }
        return serve_here(listener, acceptor, router, stop, grace).await;
    }
    let mut next = 0usize;
    loop {
        let Some((tcp, peer)) = accept(&listener, &stop).await else {
            break;
        };
        // The socket leaves this runtime's I/O driver and joins the worker's.
        match tcp.into_std() {
            Ok(std) => {
                let _ = workers[next % workers.len()].connections.send((std, peer));
                next = next.wrapping_add(1);
            }
            Err(error) => tracing::debug!(%peer, %error, "cannot hand over a connection"),
        }
    }
    for w in workers {
        w.finish().await;
    }
}

/// A connection thread: a current-thread runtime serving the connections it is sent.
struct Worker {
    connections: tokio::sync::mpsc::UnboundedSender<(std::net::TcpStream, SocketAddr)>,
    done: tokio::sync::oneshot::Receiver<()>,
}

impl Worker {
    fn start(
        index: usize,
        acceptor: Option<tokio_rustls::TlsAcceptor>,
        router: impl HttpService,
        stop: CancellationToken,
        grace: Duration,
    ) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (connections, mut incoming) = tokio::sync::mpsc::unbounded_channel::<(std::net::TcpStream, SocketAddr)>();
        let (done_tx, done) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name(format!("hub-http-{index}"))
            .spawn(move || {
                runtime.block_on(async move {
                    let mut tasks = tokio::task::JoinSet::new();
                    loop {
                        let (std, peer) = tokio::select! {
                            _ = stop.cancelled() => break,
                            next = incoming.recv() => match next {
                                Some(c) => c,
                                None => break,
                            },
                        };
                        match TcpStream::from_std(std) {
                            Ok(tcp) => {
                                tasks.spawn(connection(tcp, peer, acceptor.clone(), router.clone(), stop.clone()));
                            }
                            Err(error) => tracing::debug!(%peer, %error, "cannot register a connection"),
                        }
                        while tasks.try_join_next().is_some() {}
                    }
                    drain(tasks, grace).await;
                });
                // Ends what the connections left behind (pooled upstream connections, upgrades).
                drop(runtime);
                let _ = done_tx.send(());
            })?;
        Ok(Self { connections, done })
    }

    /// Waits until the thread has drained its connections and stopped.
    async fn finish(self) {
        drop(self.connections);
        let _ = self.done.await;
    }
}

/// The next connection (with Nagle off: responses are written whole), or `None` once `stop` fires.
/// A failed accept (out of descriptors, a connection reset before it was taken) is skipped.
async fn accept(listener: &TcpListener, stop: &CancellationToken) -> Option<(TcpStream, SocketAddr)> {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return None,
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    let _ = tcp.set_nodelay(true);
                    return Some((tcp, peer));
                }
                Err(error) => tracing::debug!(%error, "accept failed"),
            },
        }
    }
}

/// Serving on the caller's runtime.
async fn serve_here(
    listener: TcpListener,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    router: impl HttpService,
    stop: CancellationToken,
    grace: Duration,
) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let Some((tcp, peer)) = accept(&listener, &stop).await else {
            break;
        };
        connections.spawn(connection(tcp, peer, acceptor.clone(), router.clone(), stop.clone()));
        while connections.try_join_next().is_some() {}
    }
    drain(connections, grace).await;
}

/// Stop accepting; give in-flight requests the grace period.
async fn drain(mut connections: tokio::task::JoinSet<()>, grace: Duration) {
    if tokio::time::timeout(grace, async { while connections.join_next().await.is_some() {} })
        .await
        .is_err()
    {
        tracing::info!("grace period over; closing remaining connections");
        connections.shutdown().await;
    }
}

/// One connection: TLS (if configured), then HTTP/1.1 or HTTP/2 until it closes or `stop`. Over
/// TLS the protocol is the one ALPN settled, so the first bytes need not be sniffed for it.
async fn connection(
    tcp: TcpStream,
    peer: SocketAddr,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    router: impl HttpService,
    stop: CancellationToken,
) {
    let service = hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
        router.clone().oneshot(req.map(Body::new))
    });
    match acceptor {
        Some(acceptor) => match acceptor.accept(tcp).await {
            Ok(tls) if tls.get_ref().1.alpn_protocol() == Some(b"h2") => {
                let builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
                drive(builder.serve_connection(TokioIo::new(tls), service), stop).await
            }
            Ok(tls) => {
                let builder = hyper::server::conn::http1::Builder::new();
                drive(
                    builder.serve_connection(TokioIo::new(tls), service).with_upgrades(),
                    stop,
                )
                .await
            }
            Err(error) => tracing::debug!(%peer, %error, "TLS handshake failed"),
        },
        // Plain HTTP: HTTP/2 with prior knowledge, or HTTP/1.1, told apart by the first bytes.
        None => {
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            drive(builder.serve_connection_with_upgrades(TokioIo::new(tcp), service), stop).await
        }
    }
}

async fn drive<C>(conn: C, stop: CancellationToken)
where
    C: std::future::Future + GracefulConnection,
{
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = stop.cancelled() => {}
    }
    conn.as_mut().begin_graceful_shutdown();
    let _ = conn.await;
}

/// The one method of hyper's connection types the drain needs.
pub trait GracefulConnection {
    fn begin_graceful_shutdown(self: std::pin::Pin<&mut Self>);
}

impl<I, S> GracefulConnection for hyper::server::conn::http1::UpgradeableConnection<I, S>
where
    S: hyper::service::HttpService<hyper::body::Incoming>,
    S::ResBody: 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    fn begin_graceful_shutdown(self: std::pin::Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

impl<I, S, E> GracefulConnection for hyper::server::conn::http2::Connection<I, S, E>
where
    S: hyper::service::HttpService<hyper::body::Incoming>,
    S::ResBody: 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    E: hyper::rt::bounds::Http2ServerConnExec<S::Future, S::ResBody>,
{
    fn begin_graceful_shutdown(self: std::pin::Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

impl<I, S, E> GracefulConnection for hyper_util::server::conn::auto::UpgradeableConnection<'_, I, S, E>
where
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = Response>,
    S::Future: 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    E: hyper::rt::bounds::Http2ServerConnExec<S::Future, Body>,
{
    fn begin_graceful_shutdown(self: std::pin::Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}
