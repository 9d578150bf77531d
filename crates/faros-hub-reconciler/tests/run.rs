//! The composed `run`: health endpoints and shutdown while kcp does not answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::Duration;

use faros_test_support::eventually;
use faros_test_support::ports::free_port;

use faros_hub_reconciler::leader::Role;
use faros_hub_reconciler::{Config, Reconciler};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_health_while_bootstrap_retries_and_stops_on_request() {
    faros_core::telemetry::install_crypto_provider();
    // A port nothing listens on: bootstrap keeps retrying.
    let closed = SocketAddr::from(([127, 0, 0, 1], free_port().unwrap()));
    let health = SocketAddr::from(([127, 0, 0, 1], free_port().unwrap()));
    let mut config = Config::new(kube::Config::new(format!("https://{closed}").parse().unwrap()));
    config.listen = Some(health);
    let reconciler = Reconciler::new(config).unwrap();
    let state = reconciler.state();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(reconciler.run(async {
        let _ = stopped.await;
    }));

    let http = |path: &'static str| async move {
        // The listener may take a moment to bind after spawn; retry connection refusals only.
        let mut conn = eventually("the health endpoint", Duration::from_secs(30), || async {
            Ok(Some(tokio::net::TcpStream::connect(health).await?))
        })
        .await
        .unwrap_or_else(|e| panic!("health endpoint never came up: {e}"));
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let req = format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
        conn.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        conn.read_to_string(&mut out).await.unwrap();
        out
    };
    let healthz = http("/healthz").await;
    assert!(healthz.starts_with("HTTP/1.1 200"), "{healthz}");
    let readyz = http("/readyz").await;
    assert!(readyz.starts_with("HTTP/1.1 503"), "{readyz}");
    assert!(readyz.ends_with("bootstrapping the faros workspace tree\n"), "{readyz}");
    let metrics = http("/metrics").await;
    assert!(metrics.contains("faros_hub_reconciler_bootstrapped 0"), "{metrics}");
    assert!(!state.is_bootstrapped());
    assert_eq!(state.role(), Role::Starting);

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("stops promptly")
        .unwrap()
        .unwrap();
}
