//! End to end on an in-process embedded kcp + hub reconciler: the Provider is provisioned, `init`
//! publishes the API, a tenant binds the export (directly, until the hub's Enable exists), and the
//! quickstart controller answers Greetings through the virtual workspace.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use faros_core::catalog::CatalogEntry;
use faros_core::identity::{self, Claims, Identity, Jwks, SigningKey};
use faros_core::kcp::Workspace;
use faros_core::kcp::apis::v1alpha2::APIBinding;
use faros_core::names;
use faros_core::revision;
use faros_core::wait::wait_for;
use faros_provider_quickstart as quickstart;
use faros_sdk::controller::ControllerStats;
use faros_sdk::identity::IdentityVerifier;
use faros_test_support::kubeconfig::config_from_yaml;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);

/// A typed view of Greeting for the watch-based wait helper.
#[derive(kube::CustomResource, serde::Deserialize, serde::Serialize, Clone, Debug, schemars::JsonSchema)]
#[kube(
    group = "quickstart.providers.faros.sh",
    version = "v1alpha1",
    kind = "Greeting",
    namespaced
)]
#[kube(status = "GreetingStatus")]
struct GreetingSpec {
    name: String,
}

#[derive(serde::Deserialize, serde::Serialize, Clone, Debug, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct GreetingStatus {
    reply: Option<String>,
    observed_generation: Option<i64>,
}

fn reply_of(g: Option<&Greeting>) -> Option<(String, i64)> {
    let status = g?.status.as_ref()?;
    Some((status.reply.clone()?, status.observed_generation?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenant_greetings_are_answered_through_the_virtual_workspace() {
    let kcp = common::Kcp::start().await;

    // Hub reconciler provisions the provider workspace and its kubeconfig Secret (and runs until
    // `provisioned` is dropped at the end).
    let provisioned = common::provision(&kcp).await;
    let provider_config = config_from_yaml(&provisioned.kubeconfig).await.unwrap();

    // init, with the bundled schema and CatalogEntry.
    let (schemas, manifest) = quickstart::app().bundled_paths();
    let mut opts = quickstart::app().init_options();
    opts.schemas_dir = schemas;
    opts.catalog_entry_file = Some(manifest);
    quickstart::app().init(provider_config.clone(), &opts).await.unwrap();
    // The revision the provider's heartbeats name is the one the hub makes of the CatalogEntry init
    // published, as the API server stored it (the hub reconciler names its ProviderRevision so).
    let serving = faros_sdk::heartbeat::serving_revision(quickstart::PROVIDER, &opts)
        .unwrap()
        .expect("init publishes a CatalogEntry");
    let entries: Api<CatalogEntry> = Api::all(kcp.client(&names::provider_workspace_path(quickstart::PROVIDER)).await);
    let stored = entries.get(quickstart::PROVIDER).await.unwrap();
    assert_eq!(serving, revision::revision_name(quickstart::PROVIDER, &stored.spec));
    assert!(
        quickstart::app()
            .init(provider_config.clone(), &opts)
            .await
            .unwrap()
            .unchanged()
    );

    // serve.
    let key = SigningKey::generate("hub").unwrap();
    let verifier = IdentityVerifier::with_jwks(
        "quickstart",
        Jwks {
            keys: vec![key.public_jwk()],
        },
    );
    let stats = Arc::new(ControllerStats::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let backend = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(quickstart::app().serve(
        faros_sdk::app::ServeOptions {
            provider: quickstart::PROVIDER.into(),
            verifier: Arc::new(verifier),
            kube: Some(provider_config),
            heartbeat: None,
            stats: stats.clone(),
        },
        listener,
        faros_sdk::app::shutdown_signal(async {
            let _ = stopped.await;
        }),
    ));

    // A tenant workspace binds the export.
    let workspaces: Api<Workspace> = Api::all(kcp.client("root").await);
    let ws: Workspace = serde_json::from_value(json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
        "metadata": {"name": "tenant-a"}, "spec": {"type": {"name": "universal", "path": "root"}}}))
    .unwrap();
    workspaces.create(&PostParams::default(), &ws).await.unwrap();
    let ws = wait_for(workspaces, "tenant-a", |w| w.is_some_and(Workspace::is_ready), WAIT)
        .await
        .unwrap()
        .unwrap();
    let tenant_cluster = ws.spec.cluster.clone().unwrap();
    let tenant = kcp.client("root:tenant-a").await;
    let _ = Api::<Namespace>::all(tenant.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap(),
        )
        .await;
    let bindings: Api<APIBinding> = Api::all(tenant.clone());
    let binding: APIBinding =
        serde_json::from_value(json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
        "metadata": {"name": "quickstart"},
        "spec": {"reference": {"export": {"path": "root:faros:providers:quickstart", "name": quickstart::EXPORT}},
            "permissionClaims": [{"resource": "configmaps", "verbs": ["get", "list", "watch"],
                "selector": {"matchAll": true}, "state": "Accepted"}]}}))
        .unwrap();
    bindings.create(&PostParams::default(), &binding).await.unwrap();
    wait_for(
        bindings.clone(),
        "quickstart",
        |b| b.is_some_and(APIBinding::is_ready),
        WAIT,
    )
    .await
    .unwrap();

    // A Greeting gets its reply within 2 s.
    let greetings: Api<Greeting> = Api::namespaced(tenant.clone(), "default");
    let hello: Greeting = serde_json::from_value(json!({"apiVersion": "quickstart.providers.faros.sh/v1alpha1",
        "kind": "Greeting", "metadata": {"name": "hello"}, "spec": {"name": "World"}}))
    .unwrap();
    let started = Instant::now();
    greetings.create(&PostParams::default(), &hello).await.unwrap();
    let answered = wait_for(
        greetings.clone(),
        "hello",
        |g| reply_of(g).is_some_and(|(r, _)| r == "Hello, World!"),
        Duration::from_secs(2).saturating_sub(started.elapsed()),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(reply_of(Some(&answered)), Some(("Hello, World!".to_string(), 1)));

    // Editing bumps observedGeneration.
    greetings
        .patch(
            "hello",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"name": "Moon"}})),
        )
        .await
        .unwrap();
    wait_for(
        greetings.clone(),
        "hello",
        |g| reply_of(g) == Some(("Hello, Moon!".to_string(), 2)),
        WAIT,
    )
    .await
    .unwrap();

    // The backend lists only the caller's workspace.
    let who = Identity {
        user: "alice".into(),
        groups: vec![],
        org: "acme".into(),
        workspace: "tenant-a".into(),
        cluster: tenant_cluster,
    };
    let token = key
        .sign(&Claims::new(
            who,
            "quickstart",
            identity::now_unix(),
            identity::DEFAULT_TTL,
        ))
        .unwrap();
    let listed: serde_json::Value = reqwest::Client::new()
        .get(format!("{backend}/api/greetings"))
        .header(names::HEADER_ASSERTION, token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["hello"]);

    // Unbinding removes the Greetings; the controller drops them without retrying errors.
    bindings.delete("quickstart", &DeleteParams::default()).await.unwrap();
    wait_for(bindings, "quickstart", |b| b.is_none(), WAIT).await.unwrap();
    assert_eq!(stats.failures(), 0, "no reconcile failed");
    assert!(stats.reconciles() >= 2);

    stop.send(()).unwrap();
    serving.await.unwrap().unwrap();
    drop(provisioned);
}
