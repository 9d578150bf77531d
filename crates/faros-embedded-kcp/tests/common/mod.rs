//! Test harness: a real embedded kcp on 127.0.0.1:0 with real kube clients.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use faros_embedded_kcp::{Config, Server};

pub struct TestServer {
    pub server: Server,
    pub dir: tempfile::TempDir,
}

pub const USER_TOKEN: &str = "alice-token-0123456789abcdef";
pub const BOB_TOKEN: &str = "bob-token-0123456789abcdef";

impl TestServer {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(tweak: impl FnOnce(&mut Config)) -> Self {
        faros_core::telemetry::install_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        let token_file = dir.path().join("tokens.csv");
        std::fs::write(
            &token_file,
            format!("{USER_TOKEN},alice,alice-uid,\"devs,testers\"\n{BOB_TOKEN},bob,bob-uid\n"),
        )
        .unwrap();
        let mut config = Config::new(dir.path().join("state"));
        config.token_file = Some(token_file);
        tweak(&mut config);
        let server = Server::start(config).await.unwrap();
        Self { server, dir }
    }

    pub async fn client_as(&self, cluster: &str, user: &str, token: &str) -> kube::Client {
        let yaml = self.server.kubeconfig(cluster, user, token);
        faros_test_support::kubeconfig::client_from_yaml(&yaml).await.unwrap()
    }

    pub async fn admin(&self) -> kube::Client {
        self.client_as("root", "admin", self.server.admin_token()).await
    }

    pub async fn alice(&self) -> kube::Client {
        self.client_as("root", "alice", USER_TOKEN).await
    }

    /// A raw HTTPS client trusting the server's CA, for wire-level assertions.
    pub fn http(&self) -> reqwest::Client {
        faros_test_support::https::client_trusting(self.server.ca_pem().as_bytes()).unwrap()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.url())
    }

    pub fn admin_token(&self) -> String {
        self.server.admin_token().to_string()
    }
}

/// Polls until a check yields `Some` (the shared helper, panicking with `what` on timeout).
#[allow(unused_imports)] // not every test binary polls
pub use faros_test_support::eventually::eventually_some as eventually;
pub mod kcp;
