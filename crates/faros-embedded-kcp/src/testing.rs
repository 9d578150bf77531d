//! A throwaway embedded kcp for tests of other crates (feature `testing`): a real server on
//! 127.0.0.1:0 with its state in a temporary directory that is removed on drop.
//!
//! Test support only: failures panic with a message, as a test would.
#![allow(clippy::expect_used)]

use faros_core::client::ClientFactory;

use crate::{Config, Server};

/// kcp's export hash (`internal.apis.kcp.io/export`, claim label keys), for tools that recognise
/// it in answers of real kcp and the embedded kcp (`cargo xtask kcp diff`).
pub use crate::kcp::apis::hash::export_hash;

/// A running server and the temporary directory holding its state.
pub struct TempServer {
    pub server: Server,
    pub dir: tempfile::TempDir,
}

impl TempServer {
    /// Starts a server with default settings.
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// Starts a server after `tweak` adjusted its configuration.
    pub async fn start_with(tweak: impl FnOnce(&mut Config)) -> Self {
        faros_core::telemetry::install_crypto_provider();
        let dir = tempfile::tempdir().expect("creating a temporary state directory");
        let mut config = Config::new(dir.path().join("state"));
        tweak(&mut config);
        let server = Server::start(config).await.expect("starting the embedded kcp");
        Self { server, dir }
    }

    /// Admin kube configuration for `root` (a `/clusters/<x>` suffix is replaced per client).
    pub async fn admin_config(&self) -> kube::Config {
        self.server
            .admin_config("root")
            .await
            .expect("the admin kubeconfig parses")
    }

    /// The admin client factory.
    pub async fn factory(&self) -> ClientFactory {
        ClientFactory::new(self.admin_config().await).expect("building the client factory")
    }

    /// An admin client for logical cluster `cluster` (a name or a workspace path).
    pub async fn client(&self, cluster: &str) -> kube::Client {
        self.factory()
            .await
            .cluster(cluster)
            .expect("building a cluster client")
    }
}
