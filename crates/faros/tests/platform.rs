//! The whole platform through `faros dev`: the quickstart provider registers itself, a tenant
//! workspace binds its export, a Greeting created with kubectl is answered by the provider's
//! controller through the virtual workspace, and the provider's backend answers through the hub
//! with the caller's verified identity.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

mod devproc;

use std::time::Duration;

use faros_core::catalog::CatalogEntry;
use faros_core::kcp::apis::v1alpha2::APIBinding;
use faros_core::kcp::tenancy::Workspace;
use faros_core::wait::wait_for;
use faros_test_support::kubectl;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(90);
const EXPORT: &str = "quickstart.providers.faros.sh";

fn ca_and_token(kubeconfig: &std::path::Path) -> (Vec<u8>, String) {
    use base64::Engine;
    let kc: Value = serde_saphyr::from_str(&std::fs::read_to_string(kubeconfig).unwrap()).unwrap();
    let ca = kc
        .pointer("/clusters/0/cluster/certificate-authority-data")
        .and_then(Value::as_str)
        .unwrap();
    let token = kc.pointer("/users/0/user/token").and_then(Value::as_str).unwrap();
    (
        base64::engine::general_purpose::STANDARD.decode(ca).unwrap(),
        token.to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_uses_the_quickstart_provider_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let dev = devproc::launch(&dir.path().join("state")).start().await.unwrap();
    let factory = faros_core::client::ClientFactory::new(dev.admin_config().await.unwrap()).unwrap();

    // The provider registered itself and heartbeats: its CatalogEntry is Ready with a heartbeat.
    let root_cluster = |path: &str| factory.cluster(path).unwrap();
    // Each level of the tree appears once its parent is Ready.
    for (parent, name) in [
        ("root", "faros"),
        ("root:faros", "providers"),
        ("root:faros:providers", "quickstart"),
    ] {
        let workspaces: Api<Workspace> = Api::all(root_cluster(parent));
        wait_for(workspaces, name, |w| w.is_some_and(|w| w.is_ready()), WAIT)
            .await
            .unwrap();
    }
    let entries: Api<CatalogEntry> = Api::all(root_cluster("root:faros:providers:quickstart"));
    wait_for(
        entries,
        "quickstart",
        |e| {
            e.and_then(|e| e.status.as_ref())
                .is_some_and(|s| s.last_heartbeat.is_some())
        },
        WAIT,
    )
    .await
    .unwrap();

    // A tenant workspace binds the export.
    let tenants: Api<Workspace> = Api::all(root_cluster("root"));
    tenants
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "acme"}, "spec": {}})).unwrap(),
        )
        .await
        .unwrap();
    wait_for(tenants, "acme", |w| w.is_some_and(|w| w.is_ready()), WAIT)
        .await
        .unwrap();
    let bindings: Api<APIBinding> = Api::all(root_cluster("root:acme"));
    let binding = json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding", "metadata": {"name": "quickstart"},
        "spec": {"reference": {"export": {"path": "root:faros:providers:quickstart", "name": EXPORT}},
                 "permissionClaims": [{"group": "", "resource": "configmaps", "verbs": ["get", "list", "watch"],
                                       "selector": {"matchAll": true}, "state": "Accepted"}]}});
    bindings
        .create(&PostParams::default(), &serde_json::from_value(binding).unwrap())
        .await
        .unwrap();
    wait_for(bindings, "quickstart", |b| b.is_some_and(|b| b.is_ready()), WAIT)
        .await
        .unwrap();

    // kubectl in the tenant workspace: the Greeting gets its reply from the provider's controller.
    let server = format!("{}:acme", dev.server);
    let greeting = "apiVersion: quickstart.providers.faros.sh/v1alpha1\nkind: Greeting\nmetadata:\n  name: hi\n  namespace: default\nspec:\n  name: Ada\n";
    let out = kubectl::run(
        &dev.kubeconfig,
        &["--server", &server, "apply", "-f", "-"],
        Some(greeting),
    )
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "greeting.quickstart.providers.faros.sh/hi created"
    );
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(EXPORT, "v1alpha1", "Greeting"), "greetings");
    let greetings: Api<DynamicObject> = Api::namespaced_with(root_cluster("root:acme"), "default", &ar);
    let answered = wait_for(
        greetings,
        "hi",
        |g| g.is_some_and(|g| g.data.pointer("/status/reply").is_some()),
        Duration::from_secs(10),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(answered.data["status"]["reply"], "Hello, Ada!");

    // The provider's backend through the hub sees the verified caller, never the caller's bearer.
    let (ca, token) = ca_and_token(&dev.kubeconfig);
    let http = faros_test_support::https::client_trusting(&ca).unwrap();
    let hello: Value = http
        .get(format!("{}/services/providers/quickstart/api/hello", dev.hub))
        .bearer_auth(&token)
        .header("X-Faros-User", "mallory")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(hello["user"], "admin", "{hello}");
    let unauthenticated = http.get(format!("{}/api/providers", dev.hub)).send().await.unwrap();
    assert_eq!(unauthenticated.status(), 401);
}
