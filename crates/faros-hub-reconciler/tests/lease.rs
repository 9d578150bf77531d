//! Leader election on a real Lease (embedded kcp, root workspace): runs without kcp workspaces.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Kcp, WAIT};
use faros_core::wait::wait_for;
use faros_hub_reconciler::leader::{self, LeaseSettings, Role};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use pretty_assertions::assert_eq;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

struct Elector {
    role: watch::Receiver<Role>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

fn settings(identity: &str) -> LeaseSettings {
    LeaseSettings {
        name: "election-test".into(),
        namespace: "default".into(),
        identity: identity.into(),
        duration: Duration::from_secs(2),
        renew_deadline: Duration::from_secs(1),
        retry_period: Duration::from_millis(200),
    }
}

fn start(api: &Api<Lease>, identity: &str) -> Elector {
    let (tx, role) = watch::channel(Role::Starting);
    let cancel = CancellationToken::new();
    let task = tokio::spawn(leader::run(api.clone(), settings(identity), tx, cancel.clone()));
    Elector { role, cancel, task }
}

async fn wait_role(e: &mut Elector, f: impl Fn(&Role) -> bool) -> Role {
    tokio::time::timeout(WAIT, e.role.wait_for(|r| f(r)))
        .await
        .expect("role change")
        .unwrap()
        .clone()
}

async fn holder(api: &Api<Lease>) -> Option<String> {
    api.get("election-test").await.unwrap().spec.unwrap().holder_identity
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_takeover_after_crash_and_release_on_stop() {
    let kcp = Kcp::start().await;
    let api: Api<Lease> = Api::namespaced(kcp.client("root").await, "default");

    let mut a = start(&api, "a");
    assert_eq!(wait_role(&mut a, |r| *r != Role::Starting).await, Role::Leader);
    let mut b = start(&api, "b");
    assert_eq!(
        wait_role(&mut b, |r| *r != Role::Starting).await,
        Role::Standby {
            holder: Some("a".into())
        }
    );
    assert_eq!(holder(&api).await.as_deref(), Some("a"));

    // a keeps renewing: b stays standby across several lease durations' worth of renewals.
    let renewed = api.get("election-test").await.unwrap().spec.unwrap().renew_time;
    wait_for(
        api.clone(),
        "election-test",
        |l| l.and_then(|l| l.spec.as_ref()).is_some_and(|s| s.renew_time != renewed),
        WAIT,
    )
    .await
    .expect("the leader renews");
    assert_eq!(
        *b.role.borrow(),
        Role::Standby {
            holder: Some("a".into())
        }
    );

    // Crash a: no release. b takes over once the lease has gone unrenewed for its duration.
    a.task.abort();
    let _ = a.task.await;
    let crashed = Instant::now();
    assert_eq!(wait_role(&mut b, |r| *r == Role::Leader).await, Role::Leader);
    let took = crashed.elapsed();
    assert!(took >= Duration::from_millis(1500), "took over too early: {took:?}");
    assert!(took < Duration::from_secs(4), "took over too late: {took:?}");
    let spec = api.get("election-test").await.unwrap().spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("b"));
    assert_eq!(spec.lease_transitions, Some(1));

    // A third replica sees b; b stops gracefully and releases; c takes over at once.
    let mut c = start(&api, "c");
    assert_eq!(
        wait_role(&mut c, |r| *r != Role::Starting).await,
        Role::Standby {
            holder: Some("b".into())
        }
    );
    b.cancel.cancel();
    b.task.await.unwrap();
    let released = Instant::now();
    assert_eq!(wait_role(&mut c, |r| *r == Role::Leader).await, Role::Leader);
    assert!(
        released.elapsed() < Duration::from_millis(1500),
        "release did not speed up takeover"
    );
    assert_eq!(holder(&api).await.as_deref(), Some("c"));
    c.cancel.cancel();
    c.task.await.unwrap();
    assert_eq!(holder(&api).await, None);
}

/// A stopped leader's last renewal can land after the release read the Lease (the renewal's PUT
/// was on the wire when the stop dropped it); the release's write is then refused with a conflict
/// although the Lease is still ours. The release reads again and clears it: before, the Lease
/// stayed held until it expired (the reconciler's leader test failed that way under CI load).
#[tokio::test]
async fn release_rereads_after_its_write_conflicts_with_the_last_renewal() {
    use axum::Json;
    use axum::extract::State;
    use axum::http::StatusCode;
    use axum::routing::get;
    use serde_json::{Value, json};
    use std::sync::{Arc, Mutex};

    #[derive(Default)]
    struct Stored {
        lease: Value,
        puts: usize,
    }
    type Shared = Arc<Mutex<Stored>>;

    async fn read(State(s): State<Shared>) -> Json<Value> {
        Json(s.lock().unwrap().lease.clone())
    }
    async fn write(State(s): State<Shared>, Json(body): Json<Value>) -> (StatusCode, Json<Value>) {
        let mut s = s.lock().unwrap();
        s.puts += 1;
        if s.puts == 1 {
            // The dropped renewal lands first: same holder, a newer resourceVersion.
            s.lease["metadata"]["resourceVersion"] = json!("2");
        }
        if body["metadata"]["resourceVersion"] != s.lease["metadata"]["resourceVersion"] {
            let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                "reason": "Conflict", "code": 409, "message": "the object has been modified"});
            return (StatusCode::CONFLICT, Json(status));
        }
        let next = s.lease["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            + 1;
        s.lease = body;
        s.lease["metadata"]["resourceVersion"] = json!(next.to_string());
        (StatusCode::OK, Json(s.lease.clone()))
    }

    let stored: Shared = Arc::new(Mutex::new(Stored {
        lease: json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "election-test", "namespace": "default", "resourceVersion": "1"},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 2,
                     "renewTime": "2026-01-01T00:00:00.000000Z"},
        }),
        puts: 0,
    }));
    let router = axum::Router::new()
        .route(
            "/apis/coordination.k8s.io/v1/namespaces/default/leases/election-test",
            get(read).put(write),
        )
        .with_state(stored.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let client = kube::Client::try_from(kube::Config::new(format!("http://{addr}").parse().unwrap())).unwrap();
    let api: Api<Lease> = Api::namespaced(client, "default");

    // A leader whose stop has already been asked for: it goes straight to the release.
    let (tx, _role) = watch::channel(Role::Leader);
    let cancel = CancellationToken::new();
    cancel.cancel();
    tokio::time::timeout(WAIT, leader::run(api, settings("a"), tx, cancel))
        .await
        .expect("the release finishes");

    let stored = stored.lock().unwrap();
    assert_eq!(stored.lease["spec"]["holderIdentity"], Value::Null, "{}", stored.lease);
    assert_eq!(stored.puts, 2, "one conflict, then the write on a fresh read");
}
