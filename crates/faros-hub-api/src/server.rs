//! Serving the router over HTTP or HTTPS (HTTP/1.1 and HTTP/2, upgrades allowed), with graceful
//! shutdown for rolling restarts:
//!
//! 1. **draining** ([`Phases::draining`]): `/readyz` answers 503 (a balancer's health check takes
//!    the replica out) while everything else is still served;
//! 2. **stop** ([`Phases::stop`]): no new connections; idle keep-alive connections close (HTTP/2:
//!    GOAWAY) so clients open their next request on another replica; streams a client re-opens by
//!    itself (SSE, kube `watch` requests, proxied or the hub's own) end at once, so watchers
//!    reconnect elsewhere instead of holding the grace period; every other in-flight request
//!    (a proxied upload, a slow tool call) may finish for the grace period;
//! 3. after the grace period, what is left is closed.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use faros_core::coalesce::Coalesce;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tower::ServiceExt;

/// The two steps of a shutdown: see the module docs. `draining` fires no later than `stop`.
#[derive(Clone, Debug, Default)]
pub struct Phases {
    pub draining: CancellationToken,
    pub stop: CancellationToken,
}

impl Phases {
    /// Draining and stopping at once (`stop` also drains).
    pub fn at_once(stop: CancellationToken) -> Self {
        Self {
            draining: stop.clone(),
            stop,
        }
    }

    /// Tokens that fire with these, for one connection thread. A token's state sits behind a mutex
    /// that every check and every poll of its `cancelled()` takes, and each connection checks them
    /// on every wake-up; children keep those locks within one thread instead of one lock that
    /// every connection thread takes turns on.
    fn for_thread(&self) -> Self {
        Self {
            draining: self.draining.child_token(),
            stop: self.stop.child_token(),
        }
    }
}

/// Whether a request opens a stream its client re-opens when it ends: a kube watch, or an SSE
/// stream a GET opened (IO-free; table-tested). An SSE answer to a POST (MCP's streamable HTTP
/// sends one request's response that way) is an in-flight request that should finish instead.
pub fn is_reopened_stream(get: bool, query: Option<&str>, accept: Option<&str>, content_type: Option<&str>) -> bool {
    let watch = query.is_some_and(|q| {
        q.split('&')
            .any(|pair| matches!(pair, "watch=true" | "watch=1" | "watch=True"))
    });
    let sse = |v: Option<&str>| v.is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
    watch || (get && (sse(content_type) || sse(accept)))
}

fn header_str(headers: &http::HeaderMap, name: http::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A response body that ends when `stop` fires (the client sees the stream end and reconnects).
struct EndsOnStop {
    inner: Body,
    stop: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl hyper::body::Body for EndsOnStop {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        if self.stop.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// The client end of a connection, in every request's extensions: its address as the
/// `X-Forwarded-For` value the proxies send (formatted once per connection, not per request).
#[derive(Clone, Debug)]
pub struct Peer {
    pub forwarded_for: http::HeaderValue,
}

impl Peer {
    pub fn new(addr: SocketAddr) -> Self {
        // An IP address always formats as a valid header value.
        let forwarded_for =
            http::HeaderValue::try_from(addr.ip().to_string()).unwrap_or(http::HeaderValue::from_static(""));
        // Shared from the start: clones are then a reference count, not a first-clone copy.
        let _ = forwarded_for.clone();
        Self { forwarded_for }
    }
}

/// The readiness answer of a draining replica.
fn draining_readyz() -> Response {
    let mut resp = Response::new(Body::from(
        r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"shutting down","reason":"ServiceUnavailable","code":503}"#,
    ));
    *resp.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}

pub use crate::tls_reload::TlsError;

/// A rustls server config serving the PEM files `cert` and `key` (certificate chain, private
/// key), with the servers' TLS policy ([`faros_core::server_tls`]: h2 and http/1.1, the server's
/// cipher suite order). The pair is loaded now (an error if it does not load) and
/// again when the files change (cert-manager renewals): see [`crate::tls_reload`].
pub fn tls_from_files(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    tls_reloading(cert, key, crate::tls_reload::CHECK_INTERVAL)
}

/// [`tls_from_files`], looking at the files at most every `interval`.
pub fn tls_reloading(cert: &Path, key: &Path, interval: Duration) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let resolver = crate::tls_reload::ReloadingCert::new(cert, key, interval)?;
    let config = faros_core::server_tls::server_config(|b| Ok(b.with_cert_resolver(Arc::new(resolver))))?;
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
    serve_phased(listener, tls, router, Phases::at_once(stop), grace).await
}

/// [`serve`] with a draining step before the stop (see the module docs).
pub async fn serve_phased(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    router: impl HttpService,
    phases: Phases,
    grace: Duration,
) {
    let stop = phases.stop.clone();
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut workers = Vec::new();
    if threads > 1 {
        for i in 0..threads {
            match Worker::start(i, acceptor.clone(), router.clone(), phases.clone(), grace) {
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
        return serve_here(listener, acceptor, router, phases, grace).await;
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
    // Closed now, not after the drain: connections would otherwise wait in its backlog, unserved.
    drop(listener);
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
        phases: Phases,
        grace: Duration,
    ) -> std::io::Result<Self> {
        let phases = phases.for_thread();
        let stop = phases.stop.clone();
        // I/O and timers only: a connection thread runs no child processes and handles no signals,
        // and their drivers would be polled at every park (twice per proxied request).
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let (connections, mut incoming) = tokio::sync::mpsc::unbounded_channel::<(std::net::TcpStream, SocketAddr)>();
        let (done_tx, done) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name(format!("hub-http-{index}"))
            .spawn(move || {
                runtime.block_on(async move {
                    // Ends with the runtime, which is dropped below.
                    tokio::spawn(standing_timer());
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
                                tasks.spawn(connection(tcp, peer, acceptor.clone(), router.clone(), phases.clone()));
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

/// How often a connection thread's [`standing_timer`] fires: no longer than any per-request
/// deadline set on the thread (upstream and kcp timeouts are whole seconds, 30 by default).
const STANDING_TIMER_PERIOD: Duration = Duration::from_secs(1);

/// A timer that is always pending on a connection thread, so that a request's timeout is never the
/// thread's earliest timer.
///
/// Tokio wakes a runtime's driver whenever a timer is set to fire before the driver's next planned
/// wake-up (tokio-rs/tokio#5207), even from the driver's own thread while it is busy polling tasks
/// and cannot be asleep: on a thread with no other timer, each proxied request's upstream timeout
/// cost an `eventfd` write and an `epoll_wait` that returned at once, two system calls on top of
/// the four a proxied request needs. With this timer pending, the planned wake-up is never later
/// than `now + STANDING_TIMER_PERIOD`, which no request deadline precedes. Idle, the thread wakes
/// once per period.
async fn standing_timer() {
    let mut tick = tokio::time::interval(STANDING_TIMER_PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
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
    phases: Phases,
    grace: Duration,
) {
    let stop = phases.stop.clone();
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let Some((tcp, peer)) = accept(&listener, &stop).await else {
            break;
        };
        connections.spawn(connection(tcp, peer, acceptor.clone(), router.clone(), phases.clone()));
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
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
    phases: Phases,
) {
    let stop = phases.stop.clone();
    // Shared by the connection's requests rather than cloned for each: a token's clone and drop
    // lock its node.
    let phases = Arc::new(phases);
    let client = Peer::new(peer);
    let service = hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(client.clone());
        let router = router.clone();
        let phases = phases.clone();
        async move {
            if phases.draining.is_cancelled() && req.uri().path() == "/readyz" {
                return Ok::<_, Infallible>(draining_readyz());
            }
            let get = req.method() == http::Method::GET;
            // What the request says is decided before it is handed on (no copies of its query
            // or Accept kept); the response's Content-Type can only add to it.
            let requested = is_reopened_stream(
                get,
                req.uri().query(),
                header_str(req.headers(), http::header::ACCEPT),
                None,
            );
            let Ok(resp) = router.oneshot(req.map(Body::new)).await;
            let stream = requested
                || is_reopened_stream(get, None, None, header_str(resp.headers(), http::header::CONTENT_TYPE));
            Ok(if stream {
                resp.map(|inner| {
                    Body::new(EndsOnStop {
                        inner,
                        stop: Box::pin(phases.stop.clone().cancelled_owned()),
                    })
                })
            } else {
                resp
            })
        }
    });
    match acceptor {
        Some(acceptor) => match acceptor.accept(tcp).await {
            Ok(tls) if tls.get_ref().1.alpn_protocol() == Some(b"h2") => {
                let builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
                // Frames are written out per burst, not one TLS record and syscall each (see `coalesce`).
                drive(
                    builder.serve_connection(TokioIo::new(Coalesce::new(tls)), service),
                    stop,
                )
                .await
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection thread's tokens fire with the server's: draining alone drains, stop stops (and
    /// `at_once` does both); a thread's tokens never fire the server's.
    #[test]
    fn thread_phases_follow_the_servers() {
        for (case, phases, cancel_draining, cancel_stop, want_draining, want_stop) in [
            ("nothing yet", Phases::default(), false, false, false, false),
            ("draining", Phases::default(), true, false, true, false),
            ("stop", Phases::default(), false, true, false, true),
            (
                "at once",
                Phases::at_once(CancellationToken::new()),
                false,
                true,
                true,
                true,
            ),
        ] {
            let thread = phases.for_thread();
            if cancel_draining {
                phases.draining.cancel();
            }
            if cancel_stop {
                phases.stop.cancel();
            }
            assert_eq!(thread.draining.is_cancelled(), want_draining, "{case}: draining");
            assert_eq!(thread.stop.is_cancelled(), want_stop, "{case}: stop");
        }
        let phases = Phases::default();
        phases.for_thread().stop.cancel();
        assert!(!phases.stop.is_cancelled(), "a thread's stop is its own");
    }

    #[test]
    fn streams_a_client_reopens() {
        let sse = Some("text/event-stream");
        for (get, query, accept, content_type, want) in [
            (true, Some("watch=true"), None, Some("application/json"), true),
            (true, Some("labelSelector=a&watch=1"), None, None, true),
            (true, Some("watch=false"), None, Some("application/json"), false),
            (true, Some("resourceVersion=5"), None, Some("application/json"), false),
            // MCP's standalone stream, a provider's SSE through the backend proxy.
            (true, None, sse, sse, true),
            (true, None, None, Some("text/event-stream; charset=utf-8"), true),
            // MCP's POST: one request's answer as SSE; it finishes within the grace period.
            (false, None, Some("application/json, text/event-stream"), sse, false),
            (true, None, None, Some("text/html"), false),
            (true, None, None, None, false),
        ] {
            assert_eq!(
                is_reopened_stream(get, query, accept, content_type),
                want,
                "{get} {query:?} {accept:?} {content_type:?}"
            );
            // The server asks about the request first and the response after: the same answer.
            assert_eq!(
                is_reopened_stream(get, query, accept, None) || is_reopened_stream(get, None, None, content_type),
                want,
                "in two steps: {get} {query:?} {accept:?} {content_type:?}"
            );
        }
    }
}
