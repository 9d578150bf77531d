//! Reverse proxying: one streaming forwarder shared by the UI proxy, the backend proxy and the kcp
//! pass-through. Bodies are never buffered in either direction, so a chunked upstream reaches the
//! client chunk by chunk and kcp watches stream; protocol upgrades (WebSocket, SPDY) are spliced.

pub mod handlers;
pub mod headers;
pub mod pool;
pub mod resolver;
pub mod routes;
pub mod ui_assets;
pub mod upstream_policy;

#[cfg(test)]
pub(crate) mod test_support {
    #![allow(clippy::unwrap_used)]
    use http::{HeaderName, HeaderValue};

    /// Headers as sorted `(name, value)` pairs, for comparing with a table.
    pub fn sorted<'a>(h: impl IntoIterator<Item = (&'a HeaderName, &'a HeaderValue)>) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = h
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        v.sort();
        v
    }
}

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use faros_core::status::Status;
use http::{Request, StatusCode, Uri, Version};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use kube::client::ConfigExt;

use headers::Mode;
pub use pool::{PoolError, UpstreamPool};
use resolver::PolicyResolver;
pub use upstream_policy::UpstreamPolicy;

/// Errors building upstream clients.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("building the TLS client for {what}: {source}")]
    Tls {
        what: &'static str,
        #[source]
        source: kube::Error,
    },
}

/// TCP for every upstream client: HTTP or HTTPS URLs (TLS is layered on top), Nagle off, bounded
/// connect, names resolved under `policy` ([`resolver::PolicyResolver`]).
pub(crate) fn http_connector(connect_timeout: Duration, policy: Arc<UpstreamPolicy>) -> HttpConnector<PolicyResolver> {
    let mut http = HttpConnector::new_with_resolver(PolicyResolver::new(policy));
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(connect_timeout));
    http
}

/// A client for provider upstreams: plain HTTP, or HTTPS verified against the platform roots, to
/// the addresses `policy` admits.
pub fn provider_client(connect_timeout: Duration, policy: UpstreamPolicy) -> Result<UpstreamPool, ProxyError> {
    let policy = Arc::new(policy);
    // A credential-free kube config is just a convenient builder of a rustls connector with the
    // platform verifier (the same trust kube itself uses).
    let config = kube::Config::new(Uri::from_static("https://localhost"));
    let connector = config
        .rustls_https_connector_with_connector(http_connector(connect_timeout, policy.clone()))
        .map_err(|source| ProxyError::Tls {
            what: "provider upstreams",
            source,
        })?;
    Ok(UpstreamPool::new(connector, pool::IDLE_TIMEOUT).with_policy(policy))
}

/// A client for kcp that trusts kcp's CA but presents **no** credentials of the hub's own: the
/// pass-through must carry only the caller's identity (a client certificate in the hub's kube
/// config would otherwise be offered on every caller's connection).
pub fn kcp_client(kube: &kube::Config, connect_timeout: Duration) -> Result<UpstreamPool, ProxyError> {
    let mut anonymous = kube.clone();
    anonymous.auth_info = Default::default();
    let connector = anonymous
        .rustls_https_connector_with_connector(http_connector(
            connect_timeout,
            Arc::new(UpstreamPolicy::unrestricted()),
        ))
        .map_err(|source| ProxyError::Tls { what: "kcp", source })?;
    Ok(UpstreamPool::new(connector, pool::IDLE_TIMEOUT))
}

/// Where [`forward`] sends a request.
pub struct Hop<'a> {
    pub pool: &'a UpstreamPool,
    pub target: Uri,
    /// The longest wait for the upstream's response headers.
    pub timeout: Duration,
    /// The upstream as messages name it.
    pub what: &'a (dyn std::fmt::Display + Sync),
}

/// Forwards `req` (the hub's request `request_id`) over `hop` with `headers` (already rewritten).
/// Connection failures are 502, timeouts 504 (Status JSON).
pub async fn forward(
    hop: Hop<'_>,
    mut req: Request<Body>,
    headers: http::HeaderMap,
    mode: &Mode,
    request_id: &http::HeaderValue,
) -> Result<Response, Status> {
    let Hop {
        pool: client,
        target,
        timeout,
        what,
    } = hop;
    let upgrade = headers::wants_upgrade(req.headers()).then(|| hyper::upgrade::on(&mut req));
    let (parts, body) = req.into_parts();
    // Kept for the warnings below: a proxied request has no span at the info level (see `edge`).
    let (method, uri) = (parts.method, parts.uri);
    let mut upstream = Request::builder()
        .method(method.clone())
        .uri(target)
        // Upstreams get HTTP/1.1 whatever the client spoke: the pool is HTTP/1 and upgrades need it.
        .version(Version::HTTP_11)
        .body(body)
        .map_err(|e| Status::internal(format!("building the upstream request for {what}: {e}")))?;
    *upstream.headers_mut() = headers;
    let mut response = match tokio::time::timeout(timeout, client.request(upstream)).await {
        Err(_) => {
            return Err(Status::timeout(format!(
                "{what} did not answer within {}s",
                timeout.as_secs_f64()
            )));
        }
        // Fixed texts: the cause (refused, reset, a DNS name that does not resolve, an address the
        // upstream policy refuses) is for the logs. In a Status it would make the hub a port
        // scanner for whoever may register a provider URL.
        Ok(Err(e)) => {
            let (logged, answered) = if e.is_connect() {
                ("cannot connect", "is unreachable")
            } else {
                ("upstream failed", "failed")
            };
            tracing::warn!(
                upstream = %what,
                %method,
                path = uri.path(),
                request_id = request_id.to_str().unwrap_or_default(),
                error = %error_chain(&e),
                "proxy: {logged}"
            );
            return Err(Status::failure(502, "BadGateway", format!("{what} {answered}")));
        }
        Ok(Ok(r)) => r,
    };
    if matches!(mode, Mode::Ui { .. })
        && let Err(refusal) = ui_assets::check_response(response.status(), response.headers())
    {
        tracing::warn!(
            upstream = %what,
            %method,
            path = uri.path(),
            request_id = request_id.to_str().unwrap_or_default(),
            %refusal,
            "UI proxy: refused a non-asset answer"
        );
        return Err(Status::failure(
            502,
            "BadGateway",
            format!(
                "{what} answered with something other than a static asset; the UI proxy serves only scripts, styles, images, fonts and data"
            ),
        ));
    }
    let switching = response.status() == StatusCode::SWITCHING_PROTOCOLS;
    if switching && let Some(client_side) = upgrade {
        let upstream_side = hyper::upgrade::on(&mut response);
        tokio::spawn(async move {
            match tokio::try_join!(client_side, upstream_side) {
                Ok((client_io, upstream_io)) => {
                    let mut client_io = TokioIo::new(client_io);
                    let mut upstream_io = TokioIo::new(upstream_io);
                    let _ = tokio::io::copy_bidirectional(&mut client_io, &mut upstream_io).await;
                }
                Err(e) => tracing::debug!(error = %e, "protocol upgrade failed"),
            }
        });
    }
    headers::response_headers(response.headers_mut(), mode, switching);
    Ok(response)
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// What a test's subscriber writes.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A proxied request has no span at the shipped level, so the warning for an upstream that
    /// cannot be reached names the request itself: a client's `X-Request-Id` finds it.
    #[tokio::test(flavor = "current_thread")]
    async fn an_unreachable_upstream_is_logged_with_the_request() {
        faros_core::telemetry::install_crypto_provider();
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter("info")
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);

        let pool = provider_client(Duration::from_secs(1), UpstreamPolicy::unrestricted()).unwrap();
        let req = Request::builder()
            .method("POST")
            .uri("/services/providers/down/widgets?x=1")
            .body(Body::empty())
            .unwrap();
        let hop = Hop {
            pool: &pool,
            target: format!("http://{closed}/widgets?x=1").parse().unwrap(),
            timeout: Duration::from_secs(5),
            what: &"the backend of provider \"down\"",
        };
        let id = http::HeaderValue::from_static("req-7f3a");
        let err = forward(hop, req, http::HeaderMap::new(), &Mode::Kcp, &id)
            .await
            .unwrap_err();
        assert_eq!(err.code, 502, "{err:?}");

        let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        let line = logs
            .lines()
            .find(|l| l.contains("proxy: cannot connect"))
            .unwrap_or_else(|| panic!("no warning in {logs:?}"));
        for want in [
            "WARN",
            "method=POST",
            "path=\"/services/providers/down/widgets\"",
            "request_id=\"req-7f3a\"",
        ] {
            assert!(line.contains(want), "{want} not in {line:?}");
        }
    }
}
