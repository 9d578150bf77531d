//! The rendered kubeconfig is usable by kube-rs and kubectl over TLS (embedded kcp, root workspace).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Kcp;
use faros_hub_reconciler::kubeconfig::{KubeconfigParams, render};
use faros_test_support::kubeconfig::config_from_yaml;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::ListParams;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rendered_kubeconfig_verifies_tls_and_authenticates() {
    let kcp = Kcp::start().await;
    let url = kcp.server.url();
    let token = kcp.server.admin_token().to_string();
    let yaml = render(&KubeconfigParams {
        server_base: &url,
        cluster_id: "root",
        token: &token,
        ca_pem: Some(kcp.server.ca_pem()),
        insecure_skip_tls_verify: false,
    })
    .unwrap();
    let client = kube::Client::try_from(config_from_yaml(&yaml).await.unwrap()).unwrap();
    let namespaces: Api<Namespace> = Api::all(client);
    assert!(
        namespaces
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .any(|n| n.metadata.name.as_deref() == Some("default"))
    );

    let file = kcp.dir.path().join("kc.yaml");
    std::fs::write(&file, &yaml).unwrap();
    let out = faros_test_support::kubectl::run(&file, &["get", "namespace", "default", "-o", "name"], None).unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "namespace/default");

    // Without the CA the same kubeconfig must fail TLS verification (the server's CA is private).
    let no_ca = render(&KubeconfigParams {
        server_base: &url,
        cluster_id: "root",
        token: &token,
        ca_pem: None,
        insecure_skip_tls_verify: false,
    })
    .unwrap();
    let client = kube::Client::try_from(config_from_yaml(&no_ca).await.unwrap()).unwrap();
    let namespaces: Api<Namespace> = Api::all(client);
    assert!(
        namespaces.list(&ListParams::default()).await.is_err(),
        "an unknown CA must not be trusted"
    );
}
