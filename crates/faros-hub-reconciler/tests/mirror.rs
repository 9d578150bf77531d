//! The kubeconfig mirror end to end: a real embedded kcp as kcp, and a second embedded kcp standing in
//! for the hosting Kubernetes cluster, addressed as a plain Kubernetes API (its server URL has no
//! `/clusters/` prefix; unprefixed paths are the root logical cluster, as in kcp).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Kcp, Running, WAIT, create_provider, providers_api, reconciler_config, wait_gone, wait_ready};
use faros_core::conditions;
use faros_core::names;
use faros_core::provider::{Provider, ProviderSpec};
use faros_core::wait::wait_for;
use faros_hub_reconciler::MirrorConfig;
use faros_hub_reconciler::leader::Role;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use pretty_assertions::assert_eq;
use serde_json::json;

const MIRROR_NS: &str = "faros-providers";

/// Admin access to `hosting` at its bare URL, the way a client talks to a Kubernetes cluster.
async fn hosting_config(hosting: &Kcp) -> kube::Config {
    let mut config = hosting.admin_config().await;
    config.cluster_url = hosting.server.url().parse().unwrap();
    config
}

/// The mirror namespace's Secrets in the hosting cluster; creates the namespace first.
async fn hosting_secrets(hosting: &Kcp) -> Api<Secret> {
    let client = kube::Client::try_from(hosting_config(hosting).await).unwrap();
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": MIRROR_NS}})).unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(MIRROR_NS).await.unwrap().is_none() {
        namespaces.create(&PostParams::default(), &ns).await.unwrap();
    }
    Api::namespaced(client, MIRROR_NS)
}

fn kubeconfig_bytes(s: &Secret) -> Option<&[u8]> {
    s.data
        .as_ref()?
        .get(names::KUBECONFIG_SECRET_KEY)
        .map(|b| b.0.as_slice())
}

fn ca_bytes(s: &Secret) -> Option<&[u8]> {
    s.data
        .as_ref()?
        .get(faros_hub_reconciler::kubeconfig::CA_SECRET_KEY)
        .map(|b| b.0.as_slice())
}

async fn kcp_kubeconfig(kcp: &Kcp, secret: &str) -> Vec<u8> {
    let secrets: Api<Secret> = Api::namespaced(
        kcp.client(names::SYSTEM_PROVIDERS_PATH).await,
        names::PROVIDER_NAMESPACE,
    );
    let secret = secrets.get(secret).await.unwrap();
    // The CA travels with the kubeconfig (a provider pod in the mirror namespace mounts it), and is
    // the one the kubeconfig embeds.
    let ca = String::from_utf8(ca_bytes(&secret).expect("ca.crt in the kubeconfig Secret").to_vec()).unwrap();
    let kubeconfig = String::from_utf8(kubeconfig_bytes(&secret).unwrap().to_vec()).unwrap();
    use base64::Engine as _;
    let embedded = base64::engine::general_purpose::STANDARD.encode(&ca);
    assert!(kubeconfig.contains(&embedded), "ca.crt is the kubeconfig's CA");
    kubeconfig.into_bytes()
}

/// Waits for the mirrored Secret `name` to satisfy `f`.
async fn wait_mirrored(secrets: &Api<Secret>, name: &str, f: impl Fn(&Secret) -> bool) -> Secret {
    wait_for(secrets.clone(), name, |s| s.is_some_and(&f), WAIT)
        .await
        .unwrap()
        .unwrap()
}

fn ready_condition(p: &Provider) -> Option<(String, String, String)> {
    let c = conditions::get(&p.status.as_ref()?.conditions, names::CONDITION_READY)?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// Waits until the Provider's Ready condition has `reason` and a message containing `needle`.
async fn wait_reason(kcp: &Kcp, name: &str, reason: &str, needle: &str) -> Provider {
    let api = providers_api(kcp.client(names::SYSTEM_PROVIDERS_PATH).await);
    wait_for(
        api,
        name,
        |p| {
            p.and_then(ready_condition)
                .is_some_and(|(_, r, m)| r == reason && m.contains(needle))
        },
        WAIT,
    )
    .await
    .unwrap()
    .unwrap()
}

fn assert_mirrors(mirrored: &Secret, provider: &str, kcp_bytes: &[u8]) {
    assert_eq!(
        kubeconfig_bytes(mirrored),
        Some(kcp_bytes),
        "the kcp Secret's exact bytes"
    );
    let ca = String::from_utf8(ca_bytes(mirrored).expect("ca.crt mirrored").to_vec()).unwrap();
    use base64::Engine as _;
    let embedded = base64::engine::general_purpose::STANDARD.encode(&ca);
    assert!(
        String::from_utf8_lossy(kcp_bytes).contains(&embedded),
        "the mirrored ca.crt is the kubeconfig's CA"
    );
    assert_eq!(
        mirrored.labels().get(names::LABEL_MANAGED_BY).map(String::as_str),
        Some(names::MANAGED_BY_FAROS)
    );
    assert_eq!(
        mirrored.labels().get(names::LABEL_PROVIDER).map(String::as_str),
        Some(provider)
    );
    assert_eq!(mirrored.type_.as_deref(), Some("Opaque"));
}

async fn start_mirroring(kcp: &Kcp, hosting_kube: kube::Config) -> Running {
    let mut config = reconciler_config(kcp, "a").await;
    config.mirror = Some(MirrorConfig {
        namespace: MIRROR_NS.into(),
        kube: hosting_kube,
    });
    let reconciler = Running::start(config);
    reconciler.wait_role("leader", |r| *r == Role::Leader).await;
    reconciler
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirror_follows_the_provider_repairs_drift_and_is_torn_down() {
    let kcp = Kcp::start().await;
    let hosting = Kcp::start().await;
    let mirrored = hosting_secrets(&hosting).await;
    let reconciler = start_mirroring(&kcp, hosting_config(&hosting).await).await;
    let providers = providers_api(kcp.client(names::SYSTEM_PROVIDERS_PATH).await);

    // Provisioned: the mirror is written before Ready is reported.
    create_provider(&kcp, "alpha", ProviderSpec::default()).await;
    wait_ready(&kcp, "alpha").await;
    let bytes = kcp_kubeconfig(&kcp, "alpha-kubeconfig").await;
    let first = mirrored.get("alpha-kubeconfig").await.unwrap();
    assert_mirrors(&first, "alpha", &bytes);

    // Deleted by hand: restored (by the watch; the resync is minutes away).
    mirrored
        .delete("alpha-kubeconfig", &DeleteParams::default())
        .await
        .unwrap();
    let restored = wait_mirrored(&mirrored, "alpha-kubeconfig", |s| s.uid() != first.uid()).await;
    assert_mirrors(&restored, "alpha", &bytes);

    // Edited by hand (contents replaced, provider label removed): restored.
    mirrored
        .patch(
            "alpha-kubeconfig",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "metadata": {"labels": {(names::LABEL_PROVIDER): null}},
                "data": {"kubeconfig": "dGFtcGVyZWQ="},
            })),
        )
        .await
        .unwrap();
    let repaired = wait_mirrored(&mirrored, "alpha-kubeconfig", |s| {
        kubeconfig_bytes(s) == Some(bytes.as_slice()) && s.labels().contains_key(names::LABEL_PROVIDER)
    })
    .await;
    assert_mirrors(&repaired, "alpha", &bytes);

    // A changed kubeconfig (new server URL) follows.
    providers
        .patch(
            "alpha",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"serverURLOverride": "https://hub.example:9443"}})),
        )
        .await
        .unwrap();
    let rotated = wait_mirrored(&mirrored, "alpha-kubeconfig", |s| {
        kubeconfig_bytes(s).is_some_and(|b| String::from_utf8_lossy(b).contains("https://hub.example:9443/clusters/"))
    })
    .await;
    assert_mirrors(&rotated, "alpha", &kcp_kubeconfig(&kcp, "alpha-kubeconfig").await);

    // spec.secretName moves: the mirror moves with it.
    providers
        .patch(
            "alpha",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"secretName": "alpha-creds"}})),
        )
        .await
        .unwrap();
    wait_mirrored(&mirrored, "alpha-creds", |_| true).await;
    wait_gone(mirrored.clone(), "alpha-kubeconfig").await;
    wait_for(
        providers.clone(),
        "alpha",
        |p| {
            p.and_then(|p| p.status.as_ref()?.secret_ref.as_ref().map(|r| r.name == "alpha-creds"))
                .unwrap_or(false)
        },
        WAIT,
    )
    .await
    .unwrap();
    assert_mirrors(
        &mirrored.get("alpha-creds").await.unwrap(),
        "alpha",
        &kcp_kubeconfig(&kcp, "alpha-creds").await,
    );

    // A same-named Secret the mirror did not write is reported and left alone...
    let foreign: Secret = serde_json::from_value(json!({
        "metadata": {"name": "beta-kubeconfig"},
        "data": {"kubeconfig": "bWluZQ=="},
    }))
    .unwrap();
    mirrored.create(&PostParams::default(), &foreign).await.unwrap();
    create_provider(&kcp, "beta", ProviderSpec::default()).await;
    let blocked = wait_reason(&kcp, "beta", "MirrorError", "was not written by faros").await;
    let (status, _, message) = ready_condition(&blocked).unwrap();
    assert_eq!(status, "False");
    assert!(message.contains(&format!("{MIRROR_NS}/beta-kubeconfig")), "{message}");
    assert_eq!(
        kubeconfig_bytes(&mirrored.get("beta-kubeconfig").await.unwrap()),
        Some(b"mine".as_slice()),
        "someone else's Secret is never overwritten"
    );
    let metrics = reconciler.state.metrics.encode();
    assert!(
        metrics.contains("faros_hub_reconciler_mirror_errors_total{op=\"sync\"}"),
        "{metrics}"
    );
    // ...until it is gone.
    mirrored
        .delete("beta-kubeconfig", &DeleteParams::default())
        .await
        .unwrap();
    wait_ready(&kcp, "beta").await;
    let metrics = reconciler.state.metrics.encode();
    assert!(
        metrics.contains("faros_hub_reconciler_reconcile_errors_total{reason=\"MirrorError\"}"),
        "{metrics}"
    );
    assert_mirrors(
        &mirrored.get("beta-kubeconfig").await.unwrap(),
        "beta",
        &kcp_kubeconfig(&kcp, "beta-kubeconfig").await,
    );

    // Teardown waits for the mirrored Secret to be really gone: hold it with a finalizer.
    mirrored
        .patch(
            "beta-kubeconfig",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["test.faros.sh/hold"]}})),
        )
        .await
        .unwrap();
    providers.delete("beta", &DeleteParams::default()).await.unwrap();
    let held = wait_reason(&kcp, "beta", names::REASON_DELETING, "still being deleted").await;
    assert!(
        held.finalizers().contains(&names::PROVIDER_FINALIZER.to_string()),
        "the finalizer stays while the mirror is not gone"
    );
    mirrored
        .patch(
            "beta-kubeconfig",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    wait_gone(providers.clone(), "beta").await;
    assert!(mirrored.get_opt("beta-kubeconfig").await.unwrap().is_none());

    // Provider deleted: its mirror goes before the Provider does.
    providers.delete("alpha", &DeleteParams::default()).await.unwrap();
    wait_gone(providers.clone(), "alpha").await;
    assert!(
        mirrored.get_opt("alpha-creds").await.unwrap().is_none(),
        "mirrored Secret removed before the finalizer was released"
    );
    // Every Provider's mirror is gone (the GitOps registrar's kubeconfig is no Provider's and stays).
    let left = mirrored
        .list(&ListParams::default().labels(names::LABEL_PROVIDER))
        .await
        .unwrap();
    assert!(
        left.items.is_empty(),
        "{:?}",
        left.items.iter().map(|s| s.name_any()).collect::<Vec<_>>()
    );

    let metrics = reconciler.state.metrics.encode();
    assert!(
        metrics.contains("faros_hub_reconciler_mirror_writes_total{action=\"delete\"}"),
        "{metrics}"
    );
    reconciler.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_mirror_writes_nothing_into_the_hosting_cluster() {
    let kcp = Kcp::start().await;
    let hosting = Kcp::start().await;
    let mirrored = hosting_secrets(&hosting).await;
    let config = reconciler_config(&kcp, "a").await;
    assert!(config.mirror.is_none(), "off by default");
    let reconciler = Running::start(config);
    reconciler.wait_role("leader", |r| *r == Role::Leader).await;
    create_provider(&kcp, "gamma", ProviderSpec::default()).await;
    wait_ready(&kcp, "gamma").await;
    for namespace in [MIRROR_NS, "default"] {
        let secrets: Api<Secret> = Api::namespaced(mirrored.clone().into_client(), namespace);
        let found = secrets.list(&ListParams::default()).await.unwrap();
        assert!(
            found.items.iter().all(|s| !s.name_any().contains("gamma")),
            "{namespace}: {:?}",
            found.items.iter().map(|s| s.name_any()).collect::<Vec<_>>()
        );
    }
    reconciler.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_hosting_cluster_is_reported_and_holds_the_finalizer() {
    let kcp = Kcp::start().await;
    // Nothing listens on port 1.
    let mut unreachable = kcp.admin_config().await;
    unreachable.cluster_url = "https://127.0.0.1:1".parse().unwrap();
    unreachable.connect_timeout = Some(Duration::from_secs(2));
    let reconciler = start_mirroring(&kcp, unreachable).await;
    create_provider(&kcp, "delta", ProviderSpec::default()).await;
    let failed = wait_reason(&kcp, "delta", "MirrorError", "in the hosting cluster").await;
    let (status, _, message) = ready_condition(&failed).unwrap();
    assert_eq!(status, "False");
    assert!(message.contains(&format!("{MIRROR_NS}/delta-kubeconfig")), "{message}");
    assert!(
        !message.contains(kcp.server.admin_token()),
        "no credentials in status: {message}"
    );

    let providers = providers_api(kcp.client(names::SYSTEM_PROVIDERS_PATH).await);
    providers.delete("delta", &DeleteParams::default()).await.unwrap();
    let held = wait_reason(&kcp, "delta", names::REASON_DELETING, "failed, retrying").await;
    let (_, _, message) = ready_condition(&held).unwrap();
    assert!(message.contains("in the hosting cluster"), "{message}");
    assert!(
        held.finalizers().contains(&names::PROVIDER_FINALIZER.to_string()),
        "teardown does not finish while the mirror cannot be confirmed gone"
    );
    reconciler.stop().await;
}
