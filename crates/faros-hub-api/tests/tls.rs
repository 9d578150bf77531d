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

    let client = faros_test_support::https::builder_trusting(certified.cert.pem().as_bytes())
        .unwrap()
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

/// A self-signed pair for `localhost`, and its certificate's DER (what a client sees).
fn pair() -> (String, String, Vec<u8>) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    (
        certified.cert.pem(),
        certified.signing_key.serialize_pem(),
        certified.cert.der().to_vec(),
    )
}

/// Replaces `path` the way the kubelet updates a mounted Secret: a new file renamed over the old.
fn replace(path: &std::path::Path, contents: &str) {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, contents).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Completes a TLS handshake as `localhost` and returns the certificate the server presented.
async fn presented(port: u16, client: &std::sync::Arc<rustls::ClientConfig>) -> anyhow::Result<Vec<u8>> {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    let name = rustls::pki_types::ServerName::try_from("localhost")?;
    let tls = tokio_rustls::TlsConnector::from(client.clone())
        .connect(name, tcp)
        .await?;
    let certs = tls.get_ref().1.peer_certificates().unwrap_or_default();
    Ok(certs.first().map(|c| c.to_vec()).unwrap_or_default())
}

#[tokio::test]
async fn serves_a_replaced_certificate_to_new_connections_without_a_restart() {
    faros_core::telemetry::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    let (first_cert, first_key, first_der) = pair();
    let (second_cert, second_key, second_der) = pair();
    std::fs::write(&cert, &first_cert).unwrap();
    std::fs::write(&key, &first_key).unwrap();
    // Checked on every handshake, so the test waits only for the files, not for an interval.
    let tls = faros_hub_api::server::tls_reloading(&cert, &key, Duration::ZERO).unwrap();

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = CancellationToken::new();
    let router = axum::Router::new().route("/healthz", axum::routing::get(|| async { "ok" }));
    let server = tokio::spawn(serve(listener, Some(tls), router, stop.clone(), Duration::from_secs(5)));

    // The client verifies properly: it trusts exactly the two certificates.
    let mut roots = rustls::RootCertStore::empty();
    roots.add(first_der.clone().into()).unwrap();
    roots.add(second_der.clone().into()).unwrap();
    let client = std::sync::Arc::new(
        rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    );
    assert_eq!(presented(port, &client).await.unwrap(), first_der);

    // A renewal: key first, then certificate, as two separate replacements.
    replace(&key, &second_key);
    replace(&cert, &second_cert);
    let wait = Duration::from_secs(10);
    faros_test_support::eventually("the new certificate is served", wait, || async {
        Ok((presented(port, &client).await? == second_der).then_some(()))
    })
    .await
    .unwrap();

    // A broken replacement (a key of another certificate) is not served: the last good pair stays.
    replace(&key, &first_key);
    for _ in 0..3 {
        assert_eq!(presented(port, &client).await.unwrap(), second_der);
    }
    // Fixing the files is picked up again.
    replace(&cert, &first_cert);
    faros_test_support::eventually("the fixed pair is served", wait, || async {
        Ok((presented(port, &client).await? == first_der).then_some(()))
    })
    .await
    .unwrap();

    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .unwrap()
        .unwrap();
}
