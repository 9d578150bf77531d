//! The reconciler on its own kcp identity (a token-file user granted by `identity::grant`), against
//! an in-process embedded kcp, which enforces kcp's per-workspace RBAC: it bootstraps the tree and
//! provisions Providers as before, both on a fresh kcp and on a tree an admin identity made, and it
//! is refused outside what it was granted. The hub API's user (`identity::grant_hub`, and the
//! reconciler's own grants given `Config::hub_user`) likewise: what it uses works, nothing else.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Kcp, Running, WAIT, create_provider, reconciler_config, wait_ready};
use faros_core::client::ClientFactory;
use faros_core::kcp::Workspace;
use faros_core::kcp::apis::v1alpha2::{APIBinding, APIBindingSpec, APIExport, APIExportSpec, BindingReference};
use faros_core::names;
use faros_core::provider::ProviderSpec;
use faros_core::wait::wait_for;
use faros_hub_reconciler::identity;
use faros_hub_reconciler::leader::Role;
use faros_test_support::users::{static_token, write_token_file};
use k8s_openapi::api::authentication::v1::TokenReview;
use k8s_openapi::api::authorization::v1::{SelfSubjectAccessReview, SubjectAccessReview};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use pretty_assertions::assert_eq;
use serde_json::json;

const TOKEN: &str = "reconciler-token-for-tests";
const HUB_TOKEN: &str = "hub-token-for-tests";

async fn start_kcp() -> Kcp {
    Kcp::start_with(|c| {
        // Beside the state, in the server's temporary directory: removed with it.
        let file = c.state_dir.parent().unwrap().join("tokens.csv");
        write_token_file(
            &file,
            &[
                static_token(TOKEN, identity::DEFAULT_USER, identity::DEFAULT_USER, &[]),
                static_token(HUB_TOKEN, identity::hub::DEFAULT_USER, identity::hub::DEFAULT_USER, &[]),
            ],
        )
        .unwrap();
        c.token_file = Some(file);
    })
    .await
}

/// A client configuration for `user`: the kcp URL and CA, its token, nothing of the admin's.
async fn config_of(kcp: &Kcp, user: &str, token: &str) -> kube::Config {
    let yaml = kcp.server.kubeconfig("root", user, token);
    faros_test_support::kubeconfig::config_from_yaml(&yaml).await.unwrap()
}

/// The reconciler's own client configuration.
async fn own_config(kcp: &Kcp) -> kube::Config {
    config_of(kcp, identity::DEFAULT_USER, TOKEN).await
}

async fn own_reconciler(kcp: &Kcp) -> Running {
    own_reconciler_with(kcp, None).await
}

/// The reconciler on its own identity, granting `hub_user` (if any) the hub's roles.
async fn own_reconciler_with(kcp: &Kcp, hub_user: Option<&str>) -> Running {
    let mut config = reconciler_config(kcp, "own").await;
    config.kube = own_config(kcp).await;
    config.hub_user = hub_user.map(str::to_string);
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

/// Creates workspace `name` of faros type `type_` in `parent` as the admin and waits for it.
async fn admin_typed_workspace(kcp: &Kcp, parent: &str, name: &str, type_: &str) {
    let api: Api<Workspace> = Api::all(kcp.client(parent).await);
    let ws: Workspace = serde_json::from_value(json!({"metadata": {"name": name},
        "spec": {"type": {"name": type_, "path": names::WORKSPACE_TYPES_PATH}}}))
    .unwrap();
    api.create(&PostParams::default(), &ws).await.unwrap();
    wait_for(api, name, |w| w.is_some_and(Workspace::is_ready), WAIT)
        .await
        .unwrap();
}

fn binding_to(name: &str, path: &str, export: &str) -> APIBinding {
    APIBinding::new(
        name,
        APIBindingSpec {
            reference: BindingReference::export(path, export),
            ..Default::default()
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_user_gets_what_the_hub_uses_and_nothing_else() {
    let kcp = start_kcp().await;
    let hub_user = identity::hub::DEFAULT_USER;
    // Before: everything made by kcp's admin — the tree, a provider, an organization and its workspace.
    let admin_run = Running::start(reconciler_config(&kcp, "admin").await);
    admin_run.wait_role("leader", |r| *r == Role::Leader).await;
    create_provider(&kcp, "before", ProviderSpec::default()).await;
    wait_ready(&kcp, "before").await;
    admin_run.stop().await;
    admin_typed_workspace(&kcp, names::TENANTS_PATH, "acme", names::WORKSPACE_TYPE_ORGANIZATION).await;
    admin_typed_workspace(&kcp, "root:faros:tenants:acme", "dev", names::WORKSPACE_TYPE_WORKSPACE).await;

    let admin = kcp.factory().await;
    identity::grant(&admin, identity::DEFAULT_USER, WAIT).await.unwrap();
    let granted = identity::grant_hub(&admin, hub_user, WAIT).await.unwrap();
    assert_eq!(
        granted,
        identity::HubGranted {
            tree: identity::hub::tree_roles().iter().map(|(p, _)| p.to_string()).collect(),
            providers: vec![names::provider_workspace_path("before")],
            tenants: vec!["root:faros:tenants:acme".into(), "root:faros:tenants:acme:dev".into()],
        }
    );
    assert_eq!(
        identity::grant_hub(&admin, hub_user, WAIT).await.unwrap(),
        granted,
        "idempotent"
    );

    // After: the reconciler on its own identity grants the hub's role in the providers it provisions.
    let reconciler = own_reconciler_with(&kcp, Some(hub_user)).await;
    create_provider(&kcp, "after", ProviderSpec::default()).await;
    wait_ready(&kcp, "after").await;
    for provider in ["before", "after"] {
        let exports: Api<APIExport> = Api::all(kcp.client(&names::provider_workspace_path(provider)).await);
        exports
            .create(
                &PostParams::default(),
                &APIExport::new("x.faros.sh", APIExportSpec::default()),
            )
            .await
            .unwrap();
    }

    let hub = ClientFactory::new(config_of(&kcp, hub_user, HUB_TOKEN).await).unwrap();
    let in_ws = |path: &str| hub.cluster(path).unwrap();
    // What the hub does: list organizations, make a team workspace, review access, Enable (bind a
    // provider's export, whoever provisioned it), review a provider's token.
    Api::<Workspace>::all(in_ws(names::TENANTS_PATH))
        .list(&Default::default())
        .await
        .unwrap();
    let team: Workspace = serde_json::from_value(json!({"metadata": {"name": "qa"},
        "spec": {"type": {"name": "workspace", "path": names::WORKSPACE_TYPES_PATH}}}))
    .unwrap();
    Api::<Workspace>::all(in_ws("root:faros:tenants:acme"))
        .create(&PostParams::default(), &team)
        .await
        .unwrap();
    let review: SubjectAccessReview = serde_json::from_value(json!({"spec": {"user": "alice",
        "nonResourceAttributes": {"path": "/", "verb": "access"}}}))
    .unwrap();
    Api::<SubjectAccessReview>::all(in_ws("root:faros:tenants:acme"))
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    let dev_bindings: Api<APIBinding> = Api::all(in_ws("root:faros:tenants:acme:dev"));
    for provider in ["before", "after"] {
        dev_bindings
            .create(
                &PostParams::default(),
                &binding_to(provider, &names::provider_workspace_path(provider), "x.faros.sh"),
            )
            .await
            .unwrap_or_else(|e| panic!("binding {provider}'s export: {e}"));
    }
    let token_review: TokenReview = serde_json::from_value(json!({"spec": {"token": "not-a-token"}})).unwrap();
    for path in [names::ROOT_PATH.to_string(), names::provider_workspace_path("after")] {
        Api::<TokenReview>::all(in_ws(&path))
            .create(&PostParams::default(), &token_review)
            .await
            .unwrap_or_else(|e| panic!("TokenReview in {path}: {e}"));
    }

    // Refused: provider credentials, the admin export, workspaces and RBAC in root and the tree.
    for path in [
        names::provider_workspace_path("after"),
        names::SYSTEM_PROVIDERS_PATH.to_string(),
    ] {
        let secrets: Api<Secret> = Api::namespaced(in_ws(&path), "default");
        assert_eq!(
            code(
                &format!("list Secrets in {path}"),
                secrets.list(&Default::default()).await
            ),
            403
        );
    }
    assert_eq!(
        code(
            "bind admin.faros.sh",
            dev_bindings
                .create(
                    &PostParams::default(),
                    &binding_to("admin", names::SYSTEM_CONTROLLERS_PATH, names::ADMIN_EXPORT)
                )
                .await
        ),
        403
    );
    let root_workspaces: Api<Workspace> = Api::all(in_ws(names::ROOT_PATH));
    let stray: Workspace = serde_json::from_value(json!({"metadata": {"name": "stray"}, "spec": {}})).unwrap();
    assert_eq!(
        code(
            "create a workspace in root",
            root_workspaces.create(&PostParams::default(), &stray).await
        ),
        403
    );
    assert_eq!(
        code(
            "delete root:faros",
            root_workspaces.delete("faros", &DeleteParams::default()).await
        ),
        403
    );
    let escalate: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "escalate"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": hub_user}]
    }))
    .unwrap();
    for path in [names::ROOT_PATH, names::TENANTS_PATH, names::SYSTEM_CONTROLLERS_PATH] {
        let bindings: Api<ClusterRoleBinding> = Api::all(in_ws(path));
        assert_eq!(
            code(
                &format!("bind cluster-admin in {path}"),
                bindings.create(&PostParams::default(), &escalate).await
            ),
            403
        );
    }
    // Impersonation, asked of kcp's RBAC (the embedded kcp refuses every impersonation header, so a
    // refused request would prove nothing about the grant).
    for path in [names::ROOT_PATH, names::SYSTEM_CONTROLLERS_PATH, names::TENANTS_PATH] {
        let ask: SelfSubjectAccessReview = serde_json::from_value(json!({"spec": {"resourceAttributes":
            {"verb": "impersonate", "resource": "users", "name": "admin"}}}))
        .unwrap();
        let answer = Api::<SelfSubjectAccessReview>::all(in_ws(path))
            .create(&PostParams::default(), &ask)
            .await
            .unwrap();
        assert!(!answer.status.unwrap().allowed, "the hub may impersonate in {path}");
    }
    reconciler.stop().await;
}
