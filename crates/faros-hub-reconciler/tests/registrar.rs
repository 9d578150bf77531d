//! The GitOps registrar against an in-process embedded kcp, with a second embedded kcp standing in
//! for the hosting cluster (as in `mirror.rs`): its kubeconfig is published in kcp and mirrored, it
//! registers Providers and reads their status and can do nothing else, and its Secrets are repaired
//! and never taken by a Provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Kcp, Running, WAIT, create_provider, providers_api, reconciler_config, wait_ready};
use faros_core::conditions;
use faros_core::kcp::Workspace;
use faros_core::names;
use faros_core::provider::{Provider, ProviderSpec};
use faros_core::wait::wait_for;
use faros_hub_reconciler::MirrorConfig;
use faros_hub_reconciler::leader::Role;
use faros_hub_reconciler::registrar;
use faros_test_support::kubeconfig::config_from_yaml;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use pretty_assertions::assert_eq;
use serde_json::json;

const MIRROR_NS: &str = "faros-providers";

async fn hosting_secrets(hosting: &Kcp) -> Api<Secret> {
    let mut config = hosting.admin_config().await;
    config.cluster_url = hosting.server.url().parse().unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": MIRROR_NS}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    Api::namespaced(client, MIRROR_NS)
}

fn kubeconfig_of(s: &Secret) -> Option<String> {
    let bytes = s.data.as_ref()?.get(names::KUBECONFIG_SECRET_KEY)?;
    String::from_utf8(bytes.0.clone()).ok()
}

async fn wait_secret(api: &Api<Secret>, name: &str) -> Secret {
    wait_for(api.clone(), name, |s| s.and_then(kubeconfig_of).is_some(), WAIT)
        .await
        .unwrap()
        .unwrap()
}

/// The status code of a failed kube call (panics on success: every call here must be refused).
fn refused<T: std::fmt::Debug>(what: &str, r: Result<T, kube::Error>) -> u16 {
    match r {
        Err(kube::Error::Api(s)) => s.code,
        other => panic!("{what}: expected an API error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registrar_registers_providers_and_nothing_else() {
    let kcp = Kcp::start().await;
    let hosting = Kcp::start().await;
    let mirrored = hosting_secrets(&hosting).await;
    let mut config = reconciler_config(&kcp, "a").await;
    // Short, so that the repairs below come within the test's patience.
    config.controller.resync = Duration::from_secs(1);
    let mut hosting_kube = hosting.admin_config().await;
    hosting_kube.cluster_url = hosting.server.url().parse().unwrap();
    config.mirror = Some(MirrorConfig {
        namespace: MIRROR_NS.into(),
        kube: hosting_kube,
    });
    let reconciler = Running::start(config);
    reconciler.wait_role("leader", |r| *r == Role::Leader).await;

    // Published in kcp, addressed by the logical cluster of system:providers, and mirrored verbatim.
    let kcp_secrets: Api<Secret> =
        Api::namespaced(kcp.client(names::SYSTEM_PROVIDERS_PATH).await, registrar::NAMESPACE);
    let published = wait_secret(&kcp_secrets, registrar::KUBECONFIG_SECRET).await;
    let yaml = kubeconfig_of(&published).unwrap();
    let ws: Workspace = Api::all(kcp.client("root:faros:system").await)
        .get("providers")
        .await
        .unwrap();
    let cluster = ws.spec.cluster.unwrap();
    assert!(
        yaml.contains(&format!("server: {}/clusters/{cluster}\n", kcp.server.url())),
        "{yaml}"
    );
    let copy = wait_secret(&mirrored, registrar::KUBECONFIG_SECRET).await;
    assert_eq!(
        copy.data, published.data,
        "the mirror holds the same bytes (kubeconfig, ca.crt)"
    );
    assert_eq!(copy.labels(), published.labels());
    assert_eq!(
        published
            .labels()
            .get("app.kubernetes.io/component")
            .map(String::as_str),
        Some("registrar")
    );

    // What it may do: Providers, and read their status.
    let registrar_config = config_from_yaml(&yaml).await.unwrap();
    let as_registrar = kube::Client::try_from(registrar_config.clone()).unwrap();
    let providers = providers_api(as_registrar.clone());
    providers
        .create(
            &PostParams::default(),
            &Provider::new("gitops-a", ProviderSpec::default()),
        )
        .await
        .unwrap();
    let ready = wait_for(
        providers.clone(),
        "gitops-a",
        |p| {
            p.and_then(|p| p.status.as_ref())
                .is_some_and(|s| conditions::is_true(&s.conditions, names::CONDITION_READY))
        },
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    assert!(ready.status.is_some(), "the registrar reads status");
    let status = providers.get_status("gitops-a").await.unwrap();
    assert!(status.status.is_some());
    assert_eq!(
        providers
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(ResourceExt::name_any)
            .collect::<Vec<_>>(),
        ["gitops-a"]
    );

    // What it may not: write status, read Secrets, make RBAC, or anything in another workspace.
    let code = refused(
        "writing status",
        providers
            .patch_status(
                "gitops-a",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"observedGeneration": 99}})),
            )
            .await,
    );
    assert_eq!(code, 403);
    let secrets: Api<Secret> = Api::namespaced(as_registrar.clone(), registrar::NAMESPACE);
    assert_eq!(
        refused("listing Secrets", secrets.list(&ListParams::default()).await),
        403
    );
    assert_eq!(
        refused("reading its own token", secrets.get(registrar::TOKEN_SECRET).await),
        403
    );
    let roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(as_registrar.clone());
    assert_eq!(
        refused("reading ClusterRoles", roles.list(&ListParams::default()).await),
        403
    );
    for path in [
        names::ROOT_PATH.to_string(),
        names::provider_workspace_path("gitops-a"),
        names::TENANTS_PATH.to_string(),
    ] {
        let mut elsewhere = registrar_config.clone();
        elsewhere.cluster_url = format!("{}/clusters/{path}", kcp.server.url()).parse().unwrap();
        let namespaces: Api<Namespace> = Api::all(kube::Client::try_from(elsewhere).unwrap());
        assert_eq!(
            refused(&path, namespaces.list(&ListParams::default()).await),
            403,
            "{path}"
        );
    }

    // A Provider whose Secret would be the registrar's is refused, and the registrar's stays.
    create_provider(&kcp, "faros-registrar", ProviderSpec::default()).await;
    let admin_providers = providers_api(kcp.client(names::SYSTEM_PROVIDERS_PATH).await);
    let refused_provider = wait_for(
        admin_providers.clone(),
        "faros-registrar",
        |p| {
            p.and_then(|p| p.status.as_ref())
                .and_then(|s| conditions::get(&s.conditions, names::CONDITION_READY))
                .is_some_and(|c| c.reason == names::REASON_SECRET_ERROR)
        },
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    let message = conditions::get(&refused_provider.status.unwrap().conditions, names::CONDITION_READY)
        .unwrap()
        .message
        .clone();
    assert!(message.contains("GitOps registrar"), "{message}");
    admin_providers
        .delete("faros-registrar", &DeleteParams::default())
        .await
        .unwrap();
    wait_for(admin_providers.clone(), "faros-registrar", |p| p.is_none(), WAIT)
        .await
        .unwrap();
    assert_eq!(
        kcp_secrets.get(registrar::KUBECONFIG_SECRET).await.unwrap().data,
        published.data,
        "the refused Provider's teardown left the registrar's Secret"
    );
    assert!(mirrored.get_opt(registrar::KUBECONFIG_SECRET).await.unwrap().is_some());

    // Deleted by hand, both copies come back.
    kcp_secrets
        .delete(registrar::KUBECONFIG_SECRET, &DeleteParams::default())
        .await
        .unwrap();
    mirrored
        .delete(registrar::KUBECONFIG_SECRET, &DeleteParams::default())
        .await
        .unwrap();
    let restored = wait_secret(&kcp_secrets, registrar::KUBECONFIG_SECRET).await;
    assert_eq!(restored.data, published.data);
    wait_secret(&mirrored, registrar::KUBECONFIG_SECRET).await;

    // A deleted token Secret (how a token is revoked) is made again, and the published kubeconfig
    // carries whatever token it now holds (the embedded kcp signs the same claims again, so the
    // same token; a real kcp's token controller mints a new one).
    kcp_secrets
        .delete(registrar::TOKEN_SECRET, &DeleteParams::default())
        .await
        .unwrap();
    let token = wait_for(
        kcp_secrets.clone(),
        registrar::TOKEN_SECRET,
        |s| {
            s.and_then(|s| s.data.as_ref()?.get("token"))
                .is_some_and(|t| !t.0.is_empty())
        },
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    let token = String::from_utf8(token.data.unwrap()["token"].0.clone()).unwrap();
    let current = wait_for(
        kcp_secrets.clone(),
        registrar::KUBECONFIG_SECRET,
        |s| s.and_then(kubeconfig_of).is_some_and(|k| k.contains(&token)),
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    let again = providers_api(
        kube::Client::try_from(config_from_yaml(&kubeconfig_of(&current).unwrap()).await.unwrap()).unwrap(),
    );
    again.get("gitops-a").await.unwrap();

    wait_ready(&kcp, "gitops-a").await;
    reconciler.stop().await;
}
