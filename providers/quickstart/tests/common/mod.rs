//! Test harness: a real embedded kcp on 127.0.0.1:0 with real kube clients (the pattern of
//! `faros-embedded-kcp/tests/common`).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use faros_core::client::ClientFactory;
use faros_embedded_kcp::{Config, Server};
use kube::config::{KubeConfigOptions, Kubeconfig};

pub struct Kcp {
    pub server: Server,
    pub dir: tempfile::TempDir,
}

impl Kcp {
    pub async fn start() -> Self {
        faros_core::telemetry::install_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(Config::new(dir.path().join("state"))).await.unwrap();
        Self { server, dir }
    }

    pub async fn admin_config(&self) -> kube::Config {
        let kubeconfig = Kubeconfig::from_yaml(&self.server.admin_kubeconfig()).unwrap();
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .unwrap()
    }

    /// An admin client for logical cluster `cluster` (a plain name is served as is).
    pub async fn client(&self, cluster: &str) -> kube::Client {
        ClientFactory::new(self.admin_config().await)
            .unwrap()
            .cluster(cluster)
            .unwrap()
    }
}
