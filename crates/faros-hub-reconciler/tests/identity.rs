//! The reconciler on its own kcp identity (a token-file user granted by `identity::grant`), against
//! an in-process embedded kcp, which enforces kcp's per-workspace RBAC: it bootstraps the tree and
//! provisions Providers as before, both on a fresh kcp and on a tree an admin identity made, and it
//! is refused outside what it was granted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Kcp, Running, WAIT, create_provider, reconciler_config, wait_ready};
use faros_core::client::ClientFactory;
use faros_core::kcp::Workspace;
use faros_core::names;
use faros_core::provider::ProviderSpec;
use faros_core::wait::wait_for;
use faros_hub_reconciler::identity;
use faros_hub_reconciler::leader::Role;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use pretty_assertions::assert_eq;
use serde_json::json;

const TOKEN: &str = "reconciler-token-for-tests";

async fn start_kcp() -> Kcp {
    Kcp::start_with(|c| {
        // Beside the state, in the server's temporary directory: removed with it.
        let file = c.state_dir.parent().unwrap().join("tokens.csv");
        std::fs::write(&file, format!("{TOKEN},{},{0}\n", identity::DEFAULT_USER)).unwrap();
        c.token_file = Some(file);
    })
    .await
}

/// The reconciler's own client configuration: the kcp URL and CA, its token, nothing of the admin's.
async fn own_config(kcp: &Kcp) -> kube::Config {
    let yaml = kcp.server.kubeconfig("root", identity::DEFAULT_USER, TOKEN);
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap()
}

async fn own_reconciler(kcp: &Kcp) -> Running {
    let mut config = reconciler_config(kcp, "own").await;
    config.kube = own_config(kcp).await;
    let running = Running::start(config);
    running.wait_role("leader", |r| *r == Role::Leader).await;
    running
}

fn code<T: std::fmt::Debug>(what: &str, r: Result<T, kube::Error>) -> u16 {
    match r {
        Err(kube::Error::Api(s)) => s.code,
        other => panic!("{what}: expected an API error, got {other:?}"),
    }
}

async fn admin_workspace(kcp: &Kcp, parent: &str, name: &str) {
    let api: Api<Workspace> = Api::all(kcp.client(parent).await);
    let ws: Workspace = serde_json::from_value(json!({"metadata": {"name": name}, "spec": {}})).unwrap();
    api.create(&PostParams::default(), &ws).await.unwrap();
    wait_for(api, name, |w| w.is_some_and(Workspace::is_ready), WAIT)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_fresh_kcp_it_creates_and_owns_the_tree_and_is_refused_elsewhere() {
    let kcp = start_kcp().await;
    let granted = identity::grant(&kcp.factory().await, identity::DEFAULT_USER, WAIT)
        .await
        .unwrap();
    assert_eq!(granted.owned, Vec::<String>::new(), "nothing of faros exists yet");
    // Someone else's workspace in root, made by the admin before the reconciler starts.
    admin_workspace(&kcp, names::ROOT_PATH, "other").await;

    let reconciler = own_reconciler(&kcp).await;
    create_provider(&kcp, "alpha", ProviderSpec::default()).await;
    wait_ready(&kcp, "alpha").await;

    let own = ClientFactory::new(own_config(&kcp).await).unwrap();
    // kcp made it the owner of what it created: the workspace-admin binding names it.
    let owners: ClusterRoleBinding = Api::all(kcp.client(names::FAROS_PATH).await)
        .get("workspace-admin")
        .await
        .unwrap();
    assert_eq!(
        owners.subjects.unwrap()[0].name,
        identity::DEFAULT_USER,
        "root:faros belongs to the reconciler's identity"
    );

    // Refused: the content of a workspace it does not own, RBAC in root, deleting in root.
    let other: Api<Secret> = Api::namespaced(own.cluster("root:other").unwrap(), "default");
    assert_eq!(
        code("list Secrets in root:other", other.list(&Default::default()).await),
        403
    );
    let root_bindings: Api<ClusterRoleBinding> = Api::all(own.cluster(names::ROOT_PATH).unwrap());
    let crb: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "escalate"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": identity::DEFAULT_USER}]
    }))
    .unwrap();
    assert_eq!(
        code(
            "bind cluster-admin in root",
            root_bindings.create(&PostParams::default(), &crb).await
        ),
        403
    );
    let root_workspaces: Api<Workspace> = Api::all(own.cluster(names::ROOT_PATH).unwrap());
    assert_eq!(
        code(
            "delete root:other",
            root_workspaces.delete("other", &DeleteParams::default()).await
        ),
        403
    );
    reconciler.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_made_by_the_admin_is_granted_and_kept_working() {
    let kcp = start_kcp().await;
    // Before: the reconciler ran as kcp's admin and made the tree and a provider workspace.
    let admin_run = Running::start(reconciler_config(&kcp, "admin").await);
    admin_run.wait_role("leader", |r| *r == Role::Leader).await;
    create_provider(&kcp, "before", ProviderSpec::default()).await;
    wait_ready(&kcp, "before").await;
    admin_run.stop().await;

    let granted = identity::grant(&kcp.factory().await, identity::DEFAULT_USER, WAIT)
        .await
        .unwrap();
    let mut expected = identity::objects::owned_tree();
    expected.push(names::provider_workspace_path("before"));
    assert_eq!(granted.owned, expected);
    // Idempotent.
    let again = identity::grant(&kcp.factory().await, identity::DEFAULT_USER, WAIT)
        .await
        .unwrap();
    assert_eq!(again, granted);

    // After: on its own identity it keeps the old provider and provisions a new one.
    let reconciler = own_reconciler(&kcp).await;
    create_provider(&kcp, "after", ProviderSpec::default()).await;
    wait_ready(&kcp, "after").await;
    wait_ready(&kcp, "before").await;
    reconciler.stop().await;
}
