//! Test harness: a real embedded kcp on 127.0.0.1:0 with real kube clients, and the hub reconciler
//! provisioning the quickstart provider's workspace in it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use faros_core::names;
use faros_core::provider::{Provider, ProviderSpec};
use faros_core::wait::wait_for;
use faros_provider_quickstart as quickstart;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use tokio::sync::oneshot;

pub use faros_embedded_kcp::testing::TempServer as Kcp;

const WAIT: Duration = Duration::from_secs(60);

/// The quickstart Provider, provisioned by a hub reconciler that runs until this is dropped.
pub struct Provisioned {
    /// The minted kubeconfig of the provider's ServiceAccount, as its Secret holds it.
    pub kubeconfig: String,
    _stop: oneshot::Sender<()>,
}

/// Starts the hub reconciler, registers quickstart, waits until it is Ready and returns its minted
/// kubeconfig.
pub async fn provision(kcp: &Kcp) -> Provisioned {
    let mut rc = faros_hub_reconciler::Config::new(kcp.admin_config().await);
    rc.hub_url = Some(kcp.server.url());
    rc.ca_pem = Some(kcp.server.ca_pem().to_string());
    rc.lease.identity = "test".into();
    let reconciler = faros_hub_reconciler::Reconciler::new(rc).unwrap();
    let mut role = reconciler.state().subscribe_role();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(reconciler.run(async {
        let _ = stopped.await;
    }));
    tokio::time::timeout(
        WAIT,
        role.wait_for(|r| *r == faros_hub_reconciler::leader::Role::Leader),
    )
    .await
    .expect("reconciler bootstrapped and leading")
    .unwrap();
    let providers: Api<Provider> = Api::all(kcp.client(names::SYSTEM_PROVIDERS_PATH).await);
    providers
        .create(
            &PostParams::default(),
            &Provider::new(quickstart::PROVIDER, ProviderSpec::default()),
        )
        .await
        .unwrap();
    wait_for(
        providers,
        quickstart::PROVIDER,
        |p| {
            p.and_then(|p| p.status.as_ref())
                .is_some_and(|s| faros_core::conditions::is_true(&s.conditions, names::CONDITION_READY))
        },
        WAIT,
    )
    .await
    .unwrap();
    let secrets: Api<Secret> = Api::namespaced(kcp.client(names::SYSTEM_PROVIDERS_PATH).await, "default");
    let name = names::kubeconfig_secret_name(quickstart::PROVIDER, None);
    let secret = wait_for(secrets, &name, |s| s.is_some(), WAIT).await.unwrap().unwrap();
    Provisioned {
        kubeconfig: String::from_utf8(secret.data.unwrap()[names::KUBECONFIG_SECRET_KEY].0.clone()).unwrap(),
        _stop: stop,
    }
}
