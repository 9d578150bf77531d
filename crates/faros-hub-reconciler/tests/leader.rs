//! Two reconcilers with leader election against an in-process embedded kcp.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Kcp, Running, create_provider, reconciler_config, wait_ready};
use faros_core::names;
use faros_core::provider::ProviderSpec;
use faros_hub_reconciler::leader::Role;
use faros_test_support::eventually_some;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use pretty_assertions::assert_eq;
use tokio::time::Instant;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_one_acts_and_the_standby_takes_over_after_a_crash() {
    let kcp = Kcp::start().await;
    let a = Running::start(reconciler_config(&kcp, "replica-a").await);
    a.wait_role("a leads", |r| *r == Role::Leader).await;
    let b = Running::start(reconciler_config(&kcp, "replica-b").await);
    let role = b.wait_role("b stands by", |r| matches!(r, Role::Standby { .. })).await;
    assert_eq!(
        role,
        Role::Standby {
            holder: Some("replica-a".into())
        }
    );

    create_provider(&kcp, "one", ProviderSpec::default()).await;
    wait_ready(&kcp, "one").await;
    // The Ready status is written inside the reconcile; its metrics are recorded when it returns.
    eventually_some("the leader's reconcile metrics", Duration::from_secs(10), || async {
        (a.reconciles() > 0).then_some(())
    })
    .await;
    assert!(a.reconciles() > 0, "the leader reconciled");
    assert_eq!(b.reconciles(), 0, "the standby must not act");
    assert_eq!(
        b.state.role(),
        Role::Standby {
            holder: Some("replica-a".into())
        }
    );

    let leases: Api<Lease> = Api::namespaced(
        kcp.client(names::SYSTEM_CONTROLLERS_PATH).await,
        names::SYSTEM_NAMESPACE,
    );
    let lease = leases.get(names::RECONCILER_LEASE).await.unwrap();
    assert_eq!(
        lease.spec.as_ref().unwrap().holder_identity.as_deref(),
        Some("replica-a")
    );
    assert_eq!(lease.spec.as_ref().unwrap().lease_duration_seconds, Some(3));

    // Crash the leader (no lease release), then leave work pending for the standby.
    a.kill().await;
    let killed_at = Instant::now();
    create_provider(&kcp, "two", ProviderSpec::default()).await;
    b.wait_role("b takes over", |r| *r == Role::Leader).await;
    let took = killed_at.elapsed();
    // Lease duration 3 s plus one retry period and scheduling slack.
    assert!(took < Duration::from_secs(5), "takeover took {took:?}");
    wait_ready(&kcp, "two").await;
    assert!(b.reconciles() > 0);
    let lease = leases.get(names::RECONCILER_LEASE).await.unwrap();
    let spec = lease.spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("replica-b"));
    assert_eq!(spec.lease_transitions, Some(1));
    b.stop().await;

    // A graceful stop releases the lease.
    let lease = leases.get(names::RECONCILER_LEASE).await.unwrap();
    assert_eq!(lease.spec.unwrap().holder_identity, None);
}
