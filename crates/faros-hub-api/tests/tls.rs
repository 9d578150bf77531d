//! Serving over TLS from PEM files, with HTTP/2 negotiated by ALPN, and graceful shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use faros_hub_api::server::{serve, tls_from_files};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn serves_https_with_h2_and_stops_gracefully() {
    faros_core::telemetry::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let tls = tls_from_files(&cert, &key).unwrap();

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = CancellationToken::new();
    let router = axum::Router::new().route("/healthz", axum::routing::get(|| async { "ok" }));
    let server = tokio::spawn(serve(listener, Some(tls), router, stop.clone(), Duration::from_secs(5)));

    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(certified.cert.pem().as_bytes()).unwrap())
        .resolve("localhost", ([127, 0, 0, 1], port).into())
        .build()
        .unwrap();
    let resp = client
        .get(format!("https://localhost:{port}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.version(), reqwest::Version::HTTP_2);
    assert_eq!(resp.text().await.unwrap(), "ok");

    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .unwrap()
        .unwrap();
    assert!(
        client
            .get(format!("https://localhost:{port}/healthz"))
            .send()
            .await
            .is_err()
    );

    // Bad files are errors naming the file.
    std::fs::write(&key, "not a key").unwrap();
    let err = tls_from_files(&cert, &key).unwrap_err().to_string();
    assert_eq!(err, format!("{}: no private key found", key.display()));
}
