//! Rolling restarts: a draining replica fails `/readyz` while serving the rest; once stopped it
//! accepts no connections, ends the streams clients re-open (SSE from a GET, kube watches) and lets
//! other in-flight requests finish within the grace period.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use axum::routing::get;
use common::{WAIT, eventually, http};
use faros_hub_api::server::{Phases, serve_phased};
use futures::StreamExt;
use tokio::sync::Notify;

fn forever_sse() -> Response {
    let ticks = futures::stream::unfold(0u64, |n| async move {
        if n > 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Some((
            Ok::<_, std::io::Error>(bytes::Bytes::from(format!("data: {n}\n\n"))),
            n + 1,
        ))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(ticks))
        .unwrap()
}

#[tokio::test]
async fn a_stopping_replica_drains_finishes_requests_and_ends_streams() {
    common::init_tracing_and_crypto();
    let release = Arc::new(Notify::new());
    let entered = Arc::new(Notify::new());
    let slow = {
        let (release, entered) = (release.clone(), entered.clone());
        move || async move {
            entered.notify_one();
            release.notified().await;
            "done"
        }
    };
    let router = Router::new()
        .route("/readyz", get(|| async { "ok" }))
        .route("/slow", get(slow))
        .route("/events", get(|| async { forever_sse() }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let phases = Phases::default();
    let served = tokio::spawn(serve_phased(listener, None, router, phases.clone(), WAIT));
    let url = |p: &str| format!("http://{addr}{p}");

    assert_eq!(http().get(url("/readyz")).send().await.unwrap().status(), 200);
    let events = http().get(url("/events")).send().await.unwrap();
    let mut events = events.bytes_stream();
    assert!(events.next().await.unwrap().is_ok(), "the stream runs");
    let in_flight = tokio::spawn(http().get(url("/slow")).send());
    tokio::time::timeout(WAIT, entered.notified()).await.unwrap();

    // Draining: not ready, everything else still served.
    phases.draining.cancel();
    assert_eq!(http().get(url("/readyz")).send().await.unwrap().status(), 503);
    assert!(events.next().await.unwrap().is_ok(), "streams go on while draining");

    // Stopped: the stream ends (the client reconnects elsewhere), the in-flight request finishes.
    phases.stop.cancel();
    tokio::time::timeout(WAIT, async { while let Some(Ok(_)) = events.next().await {} })
        .await
        .expect("the SSE stream ends at stop, not after the grace period");
    eventually("no new connections", WAIT, || async {
        tokio::net::TcpStream::connect(addr).await.is_err().then_some(())
    })
    .await;
    release.notify_one();
    let resp = tokio::time::timeout(WAIT, in_flight).await.unwrap().unwrap().unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "done");
    tokio::time::timeout(WAIT, served).await.unwrap().unwrap();
}

/// A kcp stand-in that refuses every request as kcp refuses the hub a wildcard watch, and counts
/// them; a client factory for it.
async fn refusing_kcp() -> (faros_core::client::ClientFactory, Arc<std::sync::atomic::AtomicUsize>) {
    use axum::http::StatusCode;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let requests = Arc::new(AtomicUsize::new(0));
    let refused = {
        let requests = requests.clone();
        move || async move {
            requests.fetch_add(1, Ordering::SeqCst);
            let status = serde_json::json!({
                "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
                "message": "apibindings.apis.kcp.io is forbidden: wildcard watches need system:masters",
            });
            (StatusCode::FORBIDDEN, axum::Json(status))
        }
    };
    let kcp = common::serve(Router::new().fallback(refused)).await;
    let config = kube::Config::new(format!("http://{kcp}").parse().unwrap());
    (faros_core::client::ClientFactory::new(config).unwrap(), requests)
}

/// Where kcp refuses the hub's watch of APIBindings in all workspaces, the watch waits out the
/// start-up grace before taking that as kcp's answer: a stop during that wait ends it at once (it
/// held every in-process stack's stop for the rest of its first minute), and after it the watch
/// ends on the refusal it probed, without starting kube-runtime's watcher (which logged the same
/// 403 as a warning).
#[tokio::test]
async fn the_apibinding_watch_ends_at_stop_or_on_kcps_refusal() {
    use faros_hub_api::mcp::bindings::watch;
    use faros_hub_api::tenancy::{Tenancy, TenancySettings};
    use std::sync::atomic::Ordering;
    use tokio_util::sync::CancellationToken;

    common::init_tracing_and_crypto();
    let (factory, requests) = refusing_kcp().await;
    let tenancy = Tenancy::new(factory.clone(), TenancySettings::default(), Default::default());

    // Stopped within the grace.
    let cancel = CancellationToken::new();
    let grace = faros_core::wait::BOOTSTRAP_GRACE;
    let watching = tokio::spawn(watch(factory.clone(), tenancy.clone(), grace, cancel.clone()));
    eventually("the watch's list probes to be refused twice", WAIT, || {
        let seen = requests.load(Ordering::SeqCst);
        async move { (seen >= 2).then_some(()) }
    })
    .await;
    cancel.cancel();
    // Far below the grace: what is bounded here is a wait that must not happen at all.
    tokio::time::timeout(Duration::from_secs(10), watching)
        .await
        .expect("the watch ends at stop instead of waiting out the start-up grace")
        .unwrap();

    // The grace over: one probe, refused, and the watch is over without a stop.
    let before = requests.load(Ordering::SeqCst);
    let never = CancellationToken::new();
    tokio::time::timeout(WAIT, watch(factory, tenancy, Duration::ZERO, never))
        .await
        .expect("a refusal after the grace ends the watch");
    assert_eq!(
        requests.load(Ordering::SeqCst) - before,
        1,
        "one list probe, and no watcher started after it"
    );
}
