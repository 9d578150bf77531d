//! Serving the router over HTTP or HTTPS (HTTP/1.1 and HTTP/2, upgrades allowed), with graceful
//! shutdown: stop accepting, let in-flight requests finish for a grace period, then close.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Errors setting up TLS.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// A rustls server config from PEM files (certificate chain, private key), offering h2 and http/1.1.
pub fn tls_from_files(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|source| TlsError::Read {
            path: p.display().to_string(),
            source,
        })
    };
    let cert_pem = read(cert)?;
    let key_pem = read(key)?;
    let certs: Vec<_> = rustls_pemfile::certs(&mut cert_pem.as_slice())
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::Invalid {
            path: cert.display().to_string(),
            message: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Invalid {
            path: cert.display().to_string(),
            message: "no certificate found".into(),
        });
    }
    let key_der = rustls_pemfile::private_key(&mut key_pem.as_slice())
        .map_err(|e| TlsError::Invalid {
            path: key.display().to_string(),
            message: e.to_string(),
        })?
        .ok_or_else(|| TlsError::Invalid {
            path: key.display().to_string(),
            message: "no private key found".into(),
        })?;
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key_der)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Serves `router` on `listener` until `stop` is cancelled, then drains for up to `grace`.
pub async fn serve(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    router: Router,
    stop: CancellationToken,
    grace: Duration,
) {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (tcp, peer) = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(error) => {
                    tracing::debug!(%error, "accept failed");
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let router = router.clone();
        let stop = stop.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
                router.clone().oneshot(req.map(axum::body::Body::new))
            });
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            match acceptor {
                Some(acceptor) => match acceptor.accept(tcp).await {
                    Ok(tls) => drive(builder.serve_connection_with_upgrades(TokioIo::new(tls), service), stop).await,
                    Err(error) => tracing::debug!(%peer, %error, "TLS handshake failed"),
                },
                None => drive(builder.serve_connection_with_upgrades(TokioIo::new(tcp), service), stop).await,
            }
        });
        while connections.try_join_next().is_some() {}
    }
    // Stop accepting; give in-flight requests the grace period.
    if tokio::time::timeout(grace, async { while connections.join_next().await.is_some() {} })
        .await
        .is_err()
    {
        tracing::info!("grace period over; closing remaining connections");
        connections.shutdown().await;
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

/// The one method of hyper-util's connection types the drain needs.
pub trait GracefulConnection {
    fn begin_graceful_shutdown(self: std::pin::Pin<&mut Self>);
}

impl<I, S, E> GracefulConnection for hyper_util::server::conn::auto::UpgradeableConnection<'_, I, S, E>
where
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<axum::body::Body>>,
    S::Future: 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    E: hyper::rt::bounds::Http2ServerConnExec<S::Future, axum::body::Body>,
{
    fn begin_graceful_shutdown(self: std::pin::Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}
