//! Test harness: a real embedded kcp on 127.0.0.1:0 and reconcilers running in-process against it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use faros_core::conditions;
use faros_core::names;
use faros_core::provider::{Provider, ProviderSpec};
use faros_core::wait::wait_for;
use faros_hub_reconciler::leader::Role;
use faros_hub_reconciler::{Reconciler, State};
use kube::Api;
use kube::api::PostParams;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Generous: the embedded kcp is fast, CI machines are not.
pub const WAIT: Duration = Duration::from_secs(60);

pub use faros_embedded_kcp::testing::TempServer as Kcp;

/// A reconciler config for tests: short lease timings, a fixed identity, small timeouts.
pub async fn reconciler_config(kcp: &Kcp, identity: &str) -> faros_hub_reconciler::Config {
    let mut config = faros_hub_reconciler::Config::new(kcp.admin_config().await);
    config.hub_url = Some(kcp.server.url());
    config.ca_pem = Some(kcp.server.ca_pem().to_string());
    config.lease.identity = identity.to_string();
    config.lease.duration = Duration::from_secs(3);
    config.lease.renew_deadline = Duration::from_secs(2);
    config.lease.retry_period = Duration::from_millis(250);
    config.controller.workspace_timeout = Duration::from_secs(30);
    config.controller.token_timeout = Duration::from_secs(30);
    config
}

/// A reconciler running in a task. `stop` shuts it down gracefully (releases the lease); `kill` aborts
/// it like a crashed process (the lease is left to expire).
pub struct Running {
    pub state: Arc<State>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Running {
    pub fn start(config: faros_hub_reconciler::Config) -> Self {
        let reconciler = Reconciler::new(config).unwrap();
        let state = reconciler.state();
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            reconciler
                .run(async {
                    let _ = rx.await;
                })
                .await
                .unwrap();
        });
        Self {
            state,
            stop: Some(tx),
            task,
        }
    }

    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        tokio::time::timeout(WAIT, &mut self.task)
            .await
            .expect("reconciler did not stop")
            .unwrap();
    }

    pub async fn kill(self) {
        self.task.abort();
        let _ = self.task.await;
    }

    /// Waits until this replica's role satisfies `f`.
    pub async fn wait_role(&self, what: &str, f: impl Fn(&Role) -> bool) -> Role {
        let mut rx = self.state.subscribe_role();
        tokio::time::timeout(WAIT, rx.wait_for(|r| f(r)))
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for role: {what}; now {:?}", self.state.role()))
            .unwrap()
            .clone()
    }

    /// `reconciles_total` (success + error) from this replica's metrics.
    pub fn reconciles(&self) -> u64 {
        let text = self.state.metrics.encode();
        text.lines()
            .filter(|l| l.starts_with("faros_hub_reconciler_reconciles_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }
}

pub fn providers_api(client: kube::Client) -> Api<Provider> {
    Api::all(client)
}

pub async fn create_provider(kcp: &Kcp, name: &str, spec: ProviderSpec) -> Provider {
    let api = providers_api(kcp.client(names::SYSTEM_PROVIDERS_PATH).await);
    api.create(&PostParams::default(), &Provider::new(name, spec))
        .await
        .unwrap()
}

pub fn is_ready(p: &Provider) -> bool {
    p.status
        .as_ref()
        .is_some_and(|s| conditions::is_true(&s.conditions, names::CONDITION_READY))
}

/// Waits for the Provider's Ready condition to be True, failing with its last status.
pub async fn wait_ready(kcp: &Kcp, name: &str) -> Provider {
    let api = providers_api(kcp.client(names::SYSTEM_PROVIDERS_PATH).await);
    wait_for(api, name, |p| p.is_some_and(is_ready), WAIT)
        .await
        .unwrap()
        .unwrap()
}

pub async fn wait_gone<K>(api: Api<K>, name: &str)
where
    K: kube::Resource
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + serde::Serialize
        + Send
        + Sync
        + 'static,
    K::DynamicType: Default,
{
    wait_for(api, name, |o| o.is_none(), WAIT).await.unwrap();
}
