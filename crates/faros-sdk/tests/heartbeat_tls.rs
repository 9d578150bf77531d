//! A heartbeat to a hub whose certificate the provider does not trust says which variable fixes it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use faros_sdk::heartbeat::{BeatError, Heartbeat, HeartbeatConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_hub_certificate_names_faros_hub_ca_file() {
    // Any TLS server with a private CA stands in for the hub: the embedded kcp has one.
    let hub = common::Kcp::start().await;
    let config = HeartbeatConfig::new(&hub.server.url(), "quickstart", "0.1.0");
    let err = Heartbeat::http(&config).unwrap().beat_once().await.unwrap_err();
    assert!(matches!(err, BeatError::UntrustedHub { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "heartbeat to {}/api/providers/quickstart/heartbeat: the hub's TLS certificate is not trusted (invalid peer certificate",
            hub.server.url()
        )),
        "{text}"
    );
    assert!(
        text.ends_with(
            "set FAROS_HUB_CA_FILE to the hub's CA certificate (PEM; `faros dev` writes it to <state-dir>/ca.crt, \
             default .faros/ca.crt)"
        ),
        "{text}"
    );

    // With the CA the TLS handshake succeeds; whatever the server answers is not a trust error.
    let mut trusted = config.clone();
    trusted.ca_pem = Some(hub.server.ca_pem().as_bytes().to_vec());
    let err = Heartbeat::http(&trusted).unwrap().beat_once().await.unwrap_err();
    assert!(matches!(err, BeatError::Status { .. }), "{err:?}");
}
