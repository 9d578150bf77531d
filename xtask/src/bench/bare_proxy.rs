//! The proxy suite's floor: the smallest HTTPS reverse proxy the hub's own stack can make (rustls,
//! hyper's HTTP/1 server, hyper-util's pooled client, one current-thread runtime per core like the
//! hub's connection threads, the hub's TLS policy), forwarding every request unchanged to one upstream. It authenticates
//! nobody, rewrites no header and signs nothing: what it costs per request is what the libraries
//! cost, so the hub's distance to it is the hub's own work and its distance to nginx is the stack's.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

/// Serving threads; dropping it leaves them parked on their listeners until the process exits
/// (the bench's process ends right after the suite).
pub(super) struct BareProxy {
    pub(super) port: u16,
}

/// Starts one serving thread per core on 127.0.0.1 with the certificate and key at `cert`/`key`,
/// forwarding to `upstream` (`host:port`, plain HTTP).
pub(super) fn start(cert: &Path, key: &Path, upstream: SocketAddr) -> anyhow::Result<BareProxy> {
    let certs = rustls_pemfile::certs(&mut std::io::BufReader::new(std::fs::File::open(cert)?))
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("reading {}", cert.display()))?;
    let key = rustls_pemfile::private_key(&mut std::io::BufReader::new(std::fs::File::open(key)?))?
        .ok_or_else(|| anyhow!("no private key in {}", key.display()))?;
    // The hub's TLS policy (the server's suite order, AES-128-GCM first), as nginx gets it too: with
    // rustls' defaults the client's order would pick AES-256-GCM here alone.
    let mut tls = faros_core::server_tls::server_config(|b| b.with_single_cert(certs, key))?;
    // HTTP/1.1 only, like the load: the server below speaks nothing else.
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    for i in 0..threads {
        let (listener, acceptor) = (listener.try_clone()?, acceptor.clone());
        std::thread::Builder::new()
            .name(format!("bare-proxy-{i}"))
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(r) => r,
                    Err(e) => return eprintln!("bare proxy: no runtime: {e}"),
                };
                if let Err(e) = runtime.block_on(serve(listener, acceptor, upstream)) {
                    eprintln!("bare proxy: {e}");
                }
            })?;
    }
    Ok(BareProxy { port })
}

async fn serve(
    listener: std::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    upstream: SocketAddr,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    let client: Client<HttpConnector, Incoming> = Client::builder(TokioExecutor::new()).build(http);
    loop {
        let (tcp, _) = listener.accept().await?;
        let _ = tcp.set_nodelay(true);
        let (acceptor, client) = (acceptor.clone(), client.clone());
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else { return };
            let service = hyper::service::service_fn(move |mut req: http::Request<Incoming>| {
                let client = client.clone();
                async move {
                    let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
                    *req.uri_mut() = format!("http://{upstream}{path}").parse()?;
                    let resp = client.request(req).await?;
                    anyhow::Ok(resp.map(|b| b.boxed()))
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}
