//! The Provider controller end to end against an in-process embedded kcp.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use base64::Engine;
use common::{Kcp, Running, WAIT, create_provider, providers_api, reconciler_config, wait_gone, wait_ready};
use faros_core::conditions;
use faros_core::kcp::Workspace;
use faros_core::names;
use faros_core::provider::{Provider, ProviderSpec};
use faros_core::wait::wait_for;
use faros_test_support::eventually_some;
use faros_test_support::kubeconfig::config_from_yaml;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::Kubeconfig;
use kube::{Api, ResourceExt};
use pretty_assertions::assert_eq;
use serde_json::json;

async fn kubeconfig_of(kcp: &Kcp, secret: &str) -> (Secret, String) {
    let secrets: Api<Secret> = Api::namespaced(
        kcp.client(names::SYSTEM_PROVIDERS_PATH).await,
        names::PROVIDER_NAMESPACE,
    );
    let s = secrets.get(secret).await.unwrap();
    let yaml = String::from_utf8(s.data.as_ref().unwrap()[names::KUBECONFIG_SECRET_KEY].0.clone()).unwrap();
    (s, yaml)
}

async fn workspace(kcp: &Kcp, name: &str) -> Option<Workspace> {
    let api: Api<Workspace> = Api::all(kcp.client(names::PROVIDERS_PATH).await);
    api.get_opt(name).await.unwrap()
}

/// A client with the kubeconfig's credentials aimed at `cluster` instead of its own.
async fn retarget(kubeconfig_yaml: &str, server_root: &str, cluster: &str) -> kube::Client {
    let mut config = config_from_yaml(kubeconfig_yaml).await.unwrap();
    config.cluster_url = format!("{server_root}/clusters/{cluster}").parse().unwrap();
    kube::Client::try_from(config).unwrap()
}

fn forbidden<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> bool {
    matches!(r, Err(kube::Error::Api(s)) if s.code == 403)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_gets_workspace_and_a_working_scoped_kubeconfig() {
    let kcp = Kcp::start().await;
    let reconciler = Running::start(reconciler_config(&kcp, "a").await);
    reconciler
        .wait_role("leader", |r| *r == faros_hub_reconciler::leader::Role::Leader)
        .await;

    let created = create_provider(&kcp, "alpha", ProviderSpec::default()).await;
    create_provider(&kcp, "beta", ProviderSpec::default()).await;
    let alpha = wait_ready(&kcp, "alpha").await;
    wait_ready(&kcp, "beta").await;

    // Status.
    let ws = workspace(&kcp, "alpha").await.unwrap();
    let cluster = ws.spec.cluster.clone().unwrap();
    let status = alpha.status.clone().unwrap();
    assert_eq!(status.workspace_path.as_deref(), Some("root:faros:providers:alpha"));
    assert_eq!(status.workspace_cluster.as_deref(), Some(cluster.as_str()));
    let secret_ref = status.secret_ref.clone().unwrap();
    assert_eq!(
        (
            secret_ref.namespace.as_str(),
            secret_ref.name.as_str(),
            secret_ref.key.as_str()
        ),
        ("default", "alpha-kubeconfig", "kubeconfig")
    );
    assert_eq!(status.observed_generation, created.metadata.generation);
    let ready = conditions::get(&status.conditions, "Ready").unwrap();
    assert_eq!(
        (ready.reason.as_str(), ready.message.as_str()),
        ("Provisioned", names::MESSAGE_PROVISIONED)
    );
    assert!(alpha.finalizers().contains(&names::PROVIDER_FINALIZER.to_string()));
    assert_eq!(ws.spec.type_.as_ref().unwrap().qualified(), "root:faros:provider");

    // The Secret and its kubeconfig.
    let (secret, yaml) = kubeconfig_of(&kcp, "alpha-kubeconfig").await;
    assert_eq!(
        secret.labels().get(names::LABEL_MANAGED_BY).map(String::as_str),
        Some("faros")
    );
    assert_eq!(
        secret.labels().get(names::LABEL_PROVIDER).map(String::as_str),
        Some("alpha")
    );
    let kc = Kubeconfig::from_yaml(&yaml).unwrap();
    let kc_cluster = kc.clusters[0].cluster.as_ref().unwrap();
    assert_eq!(
        kc_cluster.server.clone().unwrap(),
        format!("{}/clusters/{cluster}", kcp.server.url())
    );
    assert_eq!(
        kc_cluster.certificate_authority_data.as_deref(),
        Some(
            base64::engine::general_purpose::STANDARD
                .encode(kcp.server.ca_pem())
                .as_str()
        )
    );
    assert_eq!(kc_cluster.insecure_skip_tls_verify, None);

    // It works in its own workspace (list, create) with kube-rs...
    let client = kube::Client::try_from(config_from_yaml(&yaml).await.unwrap()).unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns_names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .iter()
        .map(|n| n.name_any())
        .collect();
    assert!(ns_names.contains(&"default".to_string()), "{ns_names:?}");
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "hello"}, "data": {"a": "b"}})).unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();

    // ...and is forbidden in system:providers and in another provider's workspace.
    let root = kcp.server.url();
    let in_system: Api<Secret> = Api::namespaced(retarget(&yaml, &root, names::SYSTEM_PROVIDERS_PATH).await, "default");
    assert!(
        forbidden(in_system.list(&ListParams::default()).await),
        "system:providers must be forbidden"
    );
    let beta_cluster = workspace(&kcp, "beta").await.unwrap().spec.cluster.unwrap();
    let in_beta: Api<ConfigMap> = Api::namespaced(retarget(&yaml, &root, &beta_cluster).await, "default");
    assert!(
        forbidden(in_beta.list(&ListParams::default()).await),
        "another provider's workspace must be forbidden"
    );

    // ...and with kubectl.
    let file = kcp.dir.path().join("alpha.kubeconfig");
    std::fs::write(&file, &yaml).unwrap();
    let kubectl = |args: &[&str]| faros_test_support::kubectl::run(&file, args, None).unwrap();
    let out = kubectl(&["get", "configmaps", "-n", "default", "-o", "name"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("configmap/hello"));
    let out = kubectl(&[
        "create",
        "configmap",
        "from-kubectl",
        "-n",
        "default",
        "--from-literal=x=y",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let system_server = format!("{root}/clusters/{}", names::SYSTEM_PROVIDERS_PATH);
    let out = kubectl(&["--server", &system_server, "get", "secrets", "-n", "default"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Forbidden"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    reconciler.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_is_not_rewritten_and_secret_rename_and_override_apply() {
    let kcp = Kcp::start().await;
    let reconciler = Running::start(reconciler_config(&kcp, "a").await);
    // Providers live in root:faros:system:providers, which the bootstrap creates.
    reconciler
        .wait_role("leader", |r| *r == faros_hub_reconciler::leader::Role::Leader)
        .await;
    create_provider(&kcp, "gamma", ProviderSpec::default()).await;
    let ready = wait_ready(&kcp, "gamma").await;
    let ready_since = conditions::get(&ready.status.as_ref().unwrap().conditions, "Ready")
        .unwrap()
        .last_transition_time
        .clone();
    let api = providers_api(kcp.client(names::SYSTEM_PROVIDERS_PATH).await);

    // A metadata-only change triggers a reconcile that must not write status.
    let before = reconciler.reconciles();
    let labelled = api
        .patch(
            "gamma",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"touch": "1"}}})),
        )
        .await
        .unwrap();
    eventually_some("a reconcile after the label change", WAIT, || async {
        (reconciler.reconciles() > before).then_some(())
    })
    .await;
    let after = api.get("gamma").await.unwrap();
    assert_eq!(
        after.resource_version(),
        labelled.resource_version(),
        "status was rewritten without a change"
    );

    // Renaming the Secret and overriding the server: new Secret, old one removed, status follows.
    api.patch(
        "gamma",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"secretName": "gamma-creds", "serverURLOverride": "https://hub.example:9443"}})),
    )
    .await
    .unwrap();
    let renamed = wait_for(
        api.clone(),
        "gamma",
        |p| {
            p.and_then(|p| p.status.as_ref()?.secret_ref.as_ref().map(|r| r.name == "gamma-creds"))
                .unwrap_or(false)
        },
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    let status = renamed.status.unwrap();
    assert_eq!(status.observed_generation, renamed.metadata.generation);
    let cond = conditions::get(&status.conditions, "Ready").unwrap();
    assert_eq!(cond.status, "True");
    assert_eq!(
        cond.last_transition_time, ready_since,
        "Ready never flipped, so its transition time stays"
    );
    let secrets: Api<Secret> = Api::namespaced(kcp.client(names::SYSTEM_PROVIDERS_PATH).await, "default");
    assert!(
        secrets.get_opt("gamma-kubeconfig").await.unwrap().is_none(),
        "old Secret removed"
    );
    let (_, yaml) = kubeconfig_of(&kcp, "gamma-creds").await;
    let cluster = status.workspace_cluster.unwrap();
    let kc = Kubeconfig::from_yaml(&yaml).unwrap();
    assert_eq!(
        kc.clusters[0].cluster.as_ref().unwrap().server.as_deref(),
        Some(format!("https://hub.example:9443/clusters/{cluster}").as_str())
    );
    reconciler.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_tears_down_and_mid_provisioning_delete_converges() {
    let kcp = Kcp::start().await;
    let reconciler = Running::start(reconciler_config(&kcp, "a").await);
    // Providers live in root:faros:system:providers, which the bootstrap creates.
    reconciler
        .wait_role("leader", |r| *r == faros_hub_reconciler::leader::Role::Leader)
        .await;
    let api = providers_api(kcp.client(names::SYSTEM_PROVIDERS_PATH).await);
    let workspaces: Api<Workspace> = Api::all(kcp.client(names::PROVIDERS_PATH).await);
    let secrets: Api<Secret> = Api::namespaced(kcp.client(names::SYSTEM_PROVIDERS_PATH).await, "default");

    create_provider(&kcp, "delta", ProviderSpec::default()).await;
    wait_ready(&kcp, "delta").await;
    assert!(workspaces.get_opt("delta").await.unwrap().is_some());
    api.delete("delta", &DeleteParams::default()).await.unwrap();
    wait_gone(api.clone(), "delta").await;
    assert!(
        workspaces.get_opt("delta").await.unwrap().is_none(),
        "workspace gone before the finalizer is released"
    );
    assert!(
        secrets.get_opt("delta-kubeconfig").await.unwrap().is_none(),
        "Secret gone"
    );

    // Deleted right after creation, while the reconciler is (or is about to be) provisioning it.
    create_provider(&kcp, "epsilon", ProviderSpec::default()).await;
    wait_for(
        api.clone(),
        "epsilon",
        |p| p.is_some_and(|p| !p.finalizers().is_empty()),
        WAIT,
    )
    .await
    .unwrap();
    api.delete("epsilon", &DeleteParams::default()).await.unwrap();
    wait_gone(api.clone(), "epsilon").await;
    wait_gone(workspaces.clone(), "epsilon").await;
    assert!(secrets.get_opt("epsilon-kubeconfig").await.unwrap().is_none());

    // The name can be reused afterwards.
    create_provider(&kcp, "epsilon", ProviderSpec::default()).await;
    wait_ready(&kcp, "epsilon").await;
    reconciler.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_that_cannot_be_a_workspace_is_reported() {
    let kcp = Kcp::start().await;
    let reconciler = Running::start(reconciler_config(&kcp, "a").await);
    // Providers live in root:faros:system:providers, which the bootstrap creates.
    reconciler
        .wait_role("leader", |r| *r == faros_hub_reconciler::leader::Role::Leader)
        .await;
    // A valid object name (DNS subdomain) but not a DNS label.
    create_provider(&kcp, "has.dot", ProviderSpec::default()).await;
    let api = providers_api(kcp.client(names::SYSTEM_PROVIDERS_PATH).await);
    let p: Provider = wait_for(
        api.clone(),
        "has.dot",
        |p| {
            p.and_then(|p| p.status.as_ref())
                .is_some_and(|s| conditions::is_false(&s.conditions, names::CONDITION_READY))
        },
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    let status = p.status.clone().unwrap();
    let cond = conditions::get(&status.conditions, "Ready").unwrap();
    assert_eq!(cond.reason, names::REASON_INVALID_NAME);
    assert!(
        cond.message.contains("root:faros:providers:has.dot"),
        "{}",
        cond.message
    );
    assert!(cond.message.contains("DNS-1123 label"), "{}", cond.message);
    assert_eq!(status.workspace_path, None);
    assert!(p.finalizers().is_empty(), "nothing was created, so nothing to clean up");
    // Deleting it needs nothing from the reconciler.
    api.delete("has.dot", &DeleteParams::default()).await.unwrap();
    wait_gone(api, "has.dot").await;
    reconciler.stop().await;
}
