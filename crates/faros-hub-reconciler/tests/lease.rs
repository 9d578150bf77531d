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
