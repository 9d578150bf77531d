//! `faros kcp --hub-signing-key-secret`, as the faros-kcp chart runs it: the hub's signing key is
//! made once in the state directory and published to the hosting cluster on every start — the same
//! key after a restart, put back over a Secret someone edited — and it is a key the hub loads.
//!
//! A second `faros kcp` stands in for the hosting cluster's API (as in the charts' contract test).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use faros::kcp::HUB_SIGNING_KEY_KEY;
use faros_test_support::eventually_some;
use faros_test_support::kubeconfig::client_once_written;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);
const NAMESPACE: &str = "faros";
const SECRET: &str = "faros-kcp-hub-signing-key";

fn faros_kcp(state_dir: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_faros"));
    cmd.args(["kcp", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(state_dir)
        .env("FAROS_LOG_LEVEL", "warn")
        .kill_on_drop(true);
    cmd
}

/// The published key file, once the Secret holds one that `accept` takes.
async fn published(api: &Api<Secret>, accept: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    eventually_some("the published signing key", WAIT, || {
        let api = api.clone();
        let accept = &accept;
        async move {
            let secret = api.get_opt(SECRET).await.ok().flatten()?;
            let key = secret.data?.remove(HUB_SIGNING_KEY_KEY)?.0;
            accept(&key).then_some(key)
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_published_signing_key_is_made_once_and_loads_in_the_hub() {
    faros_core::telemetry::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();

    let hosting_kubeconfig = dir.path().join("hosting.kubeconfig");
    let mut hosting = faros_kcp(&dir.path().join("hosting"))
        .arg("--admin-kubeconfig-file")
        .arg(&hosting_kubeconfig)
        .spawn()
        .unwrap();
    let client = client_once_written(&hosting_kubeconfig, WAIT).await.unwrap();
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let secrets: Api<Secret> = Api::namespaced(client, NAMESPACE);

    let state = dir.path().join("kcp");
    let start = || {
        faros_kcp(&state)
            .args([
                "--hub-signing-key-secret",
                SECRET,
                "--admin-kubeconfig-secret-namespace",
                NAMESPACE,
            ])
            .arg("--hosting-kubeconfig")
            .arg(&hosting_kubeconfig)
            .spawn()
            .unwrap()
    };
    let mut publisher = start();
    let key = published(&secrets, |_| true).await;
    // Nothing but the key is published, and nothing else of the state directory: no component user.
    let secret = secrets.get(SECRET).await.unwrap();
    assert_eq!(secret.data.unwrap().len(), 1);
    assert!(!state.join(faros::identities::TOKEN_FILE).exists());

    // The key a hub replica mounts is one the hub loads, and it is the key the state directory keeps.
    let mounted = dir.path().join("mounted").join(HUB_SIGNING_KEY_KEY);
    std::fs::create_dir_all(mounted.parent().unwrap()).unwrap();
    std::fs::write(&mounted, &key).unwrap();
    let store = faros_hub_api::keys::KeyStore::load_or_create(&mounted).unwrap();
    let file: Value = serde_json::from_slice(&key).unwrap();
    assert_eq!(store.jwks().keys[0].kid, file["current"]["kid"].as_str().unwrap());
    assert_eq!(
        std::fs::read(state.join(faros::kcp::HUB_SIGNING_KEY_FILE)).unwrap(),
        key
    );

    // Someone edits the Secret while the server is down; the next start puts the same key back.
    publisher.kill().await.unwrap();
    let edited = Secret {
        data: Some([(HUB_SIGNING_KEY_KEY.to_string(), ByteString(b"{}".to_vec()))].into()),
        ..Default::default()
    };
    secrets
        .patch(SECRET, &PatchParams::apply("someone").force(), &Patch::Apply(&edited))
        .await
        .unwrap();
    let mut publisher = start();
    let again = published(&secrets, |k| k != b"{}").await;
    assert_eq!(again, key, "a restart published another key");

    publisher.kill().await.unwrap();
    hosting.kill().await.unwrap();
}
