//! HTTP/1.1 clients for upstreams (provider UIs and backends, kcp), with one connection pool per
//! thread that uses them.
//!
//! A pooled connection is driven by a task on the runtime of the thread that opened it. The hub
//! serves each client connection on one thread (see [`crate::server`]), so a per-thread pool keeps
//! every hop of a proxied request on that thread, as nginx keeps a worker's upstream connections
//! in that worker; a shared pool would hand requests to connections driven by other threads, at
//! the price of two cross-thread wake-ups per request. The connection keeps a task of its own
//! rather than being polled by the request's task: measured with `cargo xtask bench
//! proxy-instructions`, driving hyper's client connection from the request's task cost 6–8 % more
//! instructions per proxied request (56 700–57 800 against 53 300), even when the wake-ups it
//! sends itself were answered without polling the task again, since each poll of the request then
//! polls the connection's whole dispatcher too. The pool is also smaller than a general
//! client's: no locks shared between threads, no per-request key allocation, nothing spawned per
//! request. A connection goes back to its pool when the response body has been read to the end;
//! one dropped half-way (a client that went away mid-stream) is closed instead.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use axum::body::Body;
use bytes::Bytes;
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{HeaderValue, Request, Response, StatusCode, Uri, header};
use hyper::body::Incoming;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use thread_local::ThreadLocal;

use super::resolver::PolicyResolver;
use super::upstream_policy::{Refused, UpstreamPolicy};
use tower::ServiceExt;

/// How long an idle upstream connection is kept by default.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Idle connections kept per upstream and thread; more are closed when they come back.
const MAX_IDLE_PER_UPSTREAM: usize = 128;
/// How often a pool drops the idle connections that closed or outlived the idle timeout.
const SWEEP_EVERY: Duration = Duration::from_secs(30);

/// Errors reaching an upstream.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    #[error("the upstream URL {0} has no scheme or authority")]
    NotAbsolute(Uri),
    #[error("connecting: {0}")]
    Connect(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("connecting: {0}")]
    Refused(#[from] Refused),
    #[error(transparent)]
    Http(#[from] hyper::Error),
}

impl PoolError {
    /// The upstream could not be reached at all (nothing was sent).
    pub fn is_connect(&self) -> bool {
        matches!(self, PoolError::Connect(_) | PoolError::Refused(_))
    }
}

/// An upstream HTTP(S) client; clones share the pools.
#[derive(Clone)]
pub struct UpstreamPool {
    connector: HttpsConnector<HttpConnector<PolicyResolver>>,
    /// Applied to address literals here; names are checked by the connector's resolver.
    policy: Arc<UpstreamPolicy>,
    idle_timeout: Duration,
    pools: Arc<ThreadLocal<Arc<Mutex<Pool>>>>,
}

/// An upstream: scheme and authority, compared and hashed as the bytes they were written with.
/// `Authority`'s own `Hash` feeds the hasher one case-folded byte at a time, which cost more than
/// any other step of a pool lookup; two spellings of one host only mean two pools.
#[derive(Clone, Debug)]
struct Key {
    scheme: Scheme,
    authority: Authority,
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.scheme.as_str() == other.scheme.as_str() && self.authority.as_str() == other.authority.as_str()
    }
}

impl Eq for Key {}

impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.scheme.as_str().hash(state);
        self.authority.as_str().hash(state);
    }
}

/// One thread's upstreams (a seeded foldhash: the lookup runs on every proxied request).
#[derive(Default)]
struct Pool {
    upstreams: HashMap<Key, Upstream, foldhash::fast::RandomState>,
    swept: Option<Instant>,
}

/// One upstream's idle connections, and the `Host` its requests carry (made once, then shared).
struct Upstream {
    idle: Vec<Idle>,
    host: Option<HeaderValue>,
}

impl Upstream {
    fn new(authority: &Authority) -> Self {
        // Userinfo never goes into `Host`.
        let host = authority.as_str().rsplit('@').next().unwrap_or_default();
        Self {
            idle: Vec::new(),
            host: HeaderValue::from_str(host).ok(),
        }
    }

    /// The most recently used live connection, if any.
    fn take(&mut self, now: Instant, idle_timeout: Duration) -> Option<SendRequest<Body>> {
        while let Some(c) = self.idle.pop() {
            if !c.conn.is_closed() && now.duration_since(c.since) < idle_timeout {
                return Some(c.conn);
            }
        }
        None
    }
}

struct Idle {
    conn: SendRequest<Body>,
    since: Instant,
}

impl Pool {
    /// `key`'s upstream, after dropping (at most every [`SWEEP_EVERY`]) the idle connections that
    /// closed or outlived `idle_timeout`.
    fn upstream(&mut self, key: &Key, now: Instant, idle_timeout: Duration) -> &mut Upstream {
        if self.swept.is_none_or(|t| now.duration_since(t) >= SWEEP_EVERY) {
            self.swept = Some(now);
            self.upstreams.retain(|_, up| {
                up.idle
                    .retain(|c| !c.conn.is_closed() && now.duration_since(c.since) < idle_timeout);
                !up.idle.is_empty()
            });
        }
        // A key's clone shares its bytes (no allocation for http and https): one hash, not two.
        self.upstreams
            .entry(key.clone())
            .or_insert_with_key(|k| Upstream::new(&k.authority))
    }

    /// The most recently used live connection to `key`, if any.
    fn take(&mut self, key: &Key, idle_timeout: Duration) -> Option<SendRequest<Body>> {
        self.upstreams.get_mut(key)?.take(Instant::now(), idle_timeout)
    }

    fn put(&mut self, key: Key, conn: SendRequest<Body>) {
        let up = self
            .upstreams
            .entry(key)
            .or_insert_with_key(|k| Upstream::new(&k.authority));
        if up.idle.len() < MAX_IDLE_PER_UPSTREAM {
            up.idle.push(Idle {
                conn,
                since: Instant::now(),
            });
        }
    }
}

impl UpstreamPool {
    /// A pool that connects anywhere (give the connector's resolver the same policy as
    /// [`Self::with_policy`]).
    pub fn new(connector: HttpsConnector<HttpConnector<PolicyResolver>>, idle_timeout: Duration) -> Self {
        Self {
            connector,
            policy: Arc::new(UpstreamPolicy::unrestricted()),
            idle_timeout,
            pools: Arc::new(ThreadLocal::new()),
        }
    }

    /// Refuses upstreams whose address literal `policy` refuses.
    pub fn with_policy(mut self, policy: Arc<UpstreamPolicy>) -> Self {
        self.policy = policy;
        self
    }

    /// Sends `req` (absolute URI) over HTTP/1.1: on an idle connection of this thread's pool when
    /// there is one, else on a new connection. A request that a pooled connection could not take
    /// (it closed meanwhile) goes to a new connection; one already written is never resent.
    pub async fn request(&self, mut req: Request<Body>) -> Result<Response<Body>, PoolError> {
        let key = match (req.uri().scheme(), req.uri().authority()) {
            (Some(s), Some(a)) => Key {
                scheme: s.clone(),
                authority: a.clone(),
            },
            _ => return Err(PoolError::NotAbsolute(req.uri().clone())),
        };
        let pool = self.pools.get_or(Default::default).clone();
        let mut pooled = {
            let now = Instant::now();
            let mut p = lock(&pool);
            let up = p.upstream(&key, now, self.idle_timeout);
            if let Some(host) = &up.host
                && !req.headers().contains_key(header::HOST)
            {
                req.headers_mut().insert(header::HOST, host.clone());
            }
            up.take(now, self.idle_timeout)
        };
        to_origin_form(&mut req);
        loop {
            let Some(mut conn) = pooled.take() else { break };
            if conn.ready().await.is_err() {
                pooled = lock(&pool).take(&key, self.idle_timeout);
                continue;
            }
            match conn.try_send_request(req).await {
                Ok(resp) => return Ok(returning(resp, conn, pool, key)),
                Err(mut e) => match e.take_message() {
                    Some(unsent) => {
                        req = unsent;
                        pooled = lock(&pool).take(&key, self.idle_timeout);
                    }
                    None => return Err(e.into_error().into()),
                },
            }
        }
        // Boxed: connecting (TLS handshake included) is the cold path, and its future is most of
        // this one's size, which every proxied request would otherwise carry and copy.
        let mut conn = Box::pin(self.connect(&key)).await?;
        let resp = conn.send_request(req).await?;
        Ok(returning(resp, conn, pool, key))
    }

    async fn connect(&self, Key { scheme, authority }: &Key) -> Result<SendRequest<Body>, PoolError> {
        let uri = Uri::builder()
            .scheme(scheme.clone())
            .authority(authority.clone())
            .path_and_query("/")
            .build()
            .map_err(|e| PoolError::Connect(e.into()))?;
        // HttpConnector connects to address literals without asking the resolver.
        self.policy.check_literal(uri.host().unwrap_or_default())?;
        let io = self.connector.clone().oneshot(uri).await.map_err(PoolError::Connect)?;
        let (conn, driver) = http1::Builder::new()
            .handshake(io)
            .await
            .map_err(|e| PoolError::Connect(e.into()))?;
        tokio::spawn(async move {
            if let Err(error) = driver.with_upgrades().await {
                tracing::debug!(%error, "upstream connection ended");
            }
        });
        Ok(conn)
    }
}

fn lock(pool: &Mutex<Pool>) -> std::sync::MutexGuard<'_, Pool> {
    pool.lock().unwrap_or_else(|p| p.into_inner())
}

/// An HTTP/1.1 request line carries the path only; the authority goes into `Host` (set from
/// the pool's [`Upstream`]).
fn to_origin_form(req: &mut Request<Body>) {
    // Moved out, not cloned: a clone of a path made from a `String` would copy it once more.
    let path = std::mem::take(req.uri_mut())
        .into_parts()
        .path_and_query
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    *req.uri_mut() = Uri::from(path);
}

/// The response, arranged so the connection returns to `pool` once its body has been read.
fn returning(resp: Response<Incoming>, conn: SendRequest<Body>, pool: Arc<Mutex<Pool>>, key: Key) -> Response<Body> {
    if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
        // The connection now belongs to the upgrade.
        return resp.map(Body::new);
    }
    if resp.body().is_end_stream() {
        lock(&pool).put(key, conn);
        return resp.map(Body::new);
    }
    resp.map(|body| {
        Body::new(ReturnOnEnd {
            body,
            back: Some((conn, pool, key)),
        })
    })
}

/// A response body that hands its connection back to the pool at its end.
struct ReturnOnEnd {
    body: Incoming,
    back: Option<(SendRequest<Body>, Arc<Mutex<Pool>>, Key)>,
}

impl ReturnOnEnd {
    fn give_back(&mut self) {
        if let Some((conn, pool, key)) = self.back.take() {
            lock(&pool).put(key, conn);
        }
    }
}

impl HttpBody for ReturnOnEnd {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let frame = ready!(Pin::new(&mut self.body).poll_frame(cx));
        match &frame {
            None => self.give_back(),
            Some(Ok(_)) if self.body.is_end_stream() => self.give_back(),
            // A broken body leaves the connection in an unknown state: it is not reused.
            Some(Err(_)) => self.back = None,
            Some(Ok(_)) => {}
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use http_body_util::BodyExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    const WAIT: Duration = Duration::from_secs(10);

    fn client() -> UpstreamPool {
        let mut http = HttpConnector::new_with_resolver(PolicyResolver::new(Arc::new(UpstreamPolicy::unrestricted())));
        http.enforce_http(false);
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        UpstreamPool::new(connector, Duration::from_secs(90))
    }

    /// An HTTP/1.1 upstream that answers `body` to every request, counting connections; with
    /// `close_after_one`, it closes each connection after its first response without saying so.
    async fn upstream(body: &'static str, close_after_one: bool) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            loop {
                let (mut tcp, _) = listener.accept().await.unwrap();
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let mut seen = Vec::new();
                    loop {
                        let n = match tcp.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        seen.extend_from_slice(&buf[..n]);
                        while let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&seen[..end]).to_string();
                            seen.drain(..end + 4);
                            assert!(head.starts_with("GET /p?q=1 HTTP/1.1\r\n"), "{head}");
                            assert!(
                                head.to_ascii_lowercase().contains(&format!("\r\nhost: {addr}")),
                                "{head}"
                            );
                            let resp = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}", body.len());
                            tcp.write_all(resp.as_bytes()).await.unwrap();
                            if close_after_one {
                                return;
                            }
                        }
                    }
                });
            }
        });
        (format!("http://{addr}"), accepted)
    }

    async fn get(client: &UpstreamPool, base: &str) -> Response<Body> {
        let req = Request::get(format!("{base}/p?q=1")).body(Body::empty()).unwrap();
        client.request(req).await.unwrap()
    }

    async fn text(resp: Response<Body>) -> String {
        String::from_utf8(resp.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn reuses_a_connection_once_the_body_was_read() {
        let (base, accepted) = upstream("hello", false).await;
        let c = client();
        for _ in 0..5 {
            assert_eq!(text(get(&c, &base).await).await, "hello");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_body_still_unread_keeps_its_connection_busy() {
        let (base, accepted) = upstream("hello", false).await;
        let c = client();
        let first = get(&c, &base).await;
        assert_eq!(text(get(&c, &base).await).await, "hello");
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
        // A body dropped half-read closes its connection instead of returning it.
        drop(first);
        assert_eq!(text(get(&c, &base).await).await, "hello");
        assert_eq!(accepted.load(Ordering::SeqCst), 2, "the read one is reused");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_pooled_connection_the_upstream_closed_is_replaced() {
        let (base, accepted) = upstream("bye", true).await;
        let c = client();
        for n in 1..=3 {
            assert_eq!(text(get(&c, &base).await).await, "bye");
            assert_eq!(accepted.load(Ordering::SeqCst), n);
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_large_body_streams_through_and_its_connection_is_reused() {
        // Many reads of the socket, and more than the body's channel holds at once.
        let big: &'static str = Box::leak("x".repeat(4 << 20).into_boxed_str());
        let (base, accepted) = upstream(big, false).await;
        let c = client();
        for _ in 0..3 {
            assert_eq!(text(get(&c, &base).await).await.len(), big.len());
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_idle_connection_its_upstream_closed_is_seen_closed() {
        let (base, _) = upstream("bye", true).await;
        let c = client();
        assert_eq!(text(get(&c, &base).await).await, "bye");
        let pool = c.pools.get().unwrap().clone();
        let idle = |p: &Pool| p.upstreams.values().map(|up| up.idle.len()).sum::<usize>();
        // Back in the pool once its body was read (closed or not yet): what the wait below looks at.
        assert_eq!(idle(&lock(&pool)), 1);
        faros_test_support::eventually_some("the idle connection to read the close", WAIT, || {
            let open = lock(&pool)
                .upstreams
                .values()
                .flat_map(|up| up.idle.iter())
                .any(|idle| !idle.conn.is_closed());
            async move { (!open).then_some(()) }
        })
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn requests_from_tasks_that_move_between_threads() {
        let (base, _) = upstream("hello", false).await;
        let c = client();
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let (c, base) = (c.clone(), base.clone());
            tasks.spawn(async move {
                for _ in 0..20 {
                    assert_eq!(text(get(&c, &base).await).await, "hello");
                }
            });
        }
        while let Some(done) = tasks.join_next().await {
            done.unwrap();
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn unreachable_and_relative_upstreams_are_errors() {
        let closed = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
        let c = client();
        let req = Request::get(format!("http://{closed}/")).body(Body::empty()).unwrap();
        assert!(c.request(req).await.unwrap_err().is_connect());
        let req = Request::get("/relative").body(Body::empty()).unwrap();
        assert!(matches!(c.request(req).await.unwrap_err(), PoolError::NotAbsolute(_)));
    }
}
