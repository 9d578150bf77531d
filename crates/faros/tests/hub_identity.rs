//! `faros dev` runs the hub API on its own kcp user (docs/install.md#kcp-identities), not kcp's
//! admin: the organizations it makes belong to that user by kcp's creator rule, the user is refused
//! what the hub does not use, and an organization someone else owned before is granted to it on the
//! next start (`faros grant --hub-user`'s part for tenants), after which the hub serves it as before.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod devproc;

use std::time::Duration;

use faros_core::client::ClientFactory;
use faros_core::kcp::Workspace;
use faros_core::names;
use faros_hub_reconciler::identity::hub;
use faros_test_support::eventually::eventually;
use faros_test_support::kubeconfig::config_from_file;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use serde_json::json;

const DEMO: &str = "root:faros:tenants:demo";
const DEMO_DEFAULT: &str = "root:faros:tenants:demo:default";

fn code<T: std::fmt::Debug>(what: &str, r: Result<T, kube::Error>) -> u16 {
    match r {
        Err(kube::Error::Api(s)) => s.code,
        other => panic!("{what}: expected an API error, got {other:?}"),
    }
}

fn owner_of(crb: &ClusterRoleBinding) -> String {
    crb.subjects.as_ref().unwrap()[0].name.clone()
}

/// The components' own tokens live in `component-tokens.csv`, which only the embedded kcp reads
/// (owner-only, like every credential in the state directory): kcp takes them, the token file the
/// hub reads as its static table (people) does not list them, and the hub, which would otherwise
/// authenticate them through its TokenReview fallback, refuses their group with 401.
async fn component_tokens_are_kcps_own(dev: &devproc::DevProcess) {
    let https = dev.https().unwrap();
    for file in [
        faros::identities::HUB_TOKEN_FILE,
        faros::identities::RECONCILER_TOKEN_FILE,
    ] {
        let token = std::fs::read_to_string(dev.state_dir.join(file)).unwrap();
        let status = https
            .get(format!("{}/apis/tenancy.kcp.io/v1alpha1/workspaces", dev.server))
            .bearer_auth(token.trim())
            .send()
            .await
            .unwrap()
            .status()
            .as_u16();
        assert_eq!(status, 200, "kcp refuses {file}");
        let refused = https
            .get(format!("{}/api/me", dev.hub))
            .bearer_auth(token.trim())
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status().as_u16(), 401, "the hub takes {file} as a caller");
        let body: serde_json::Value = refused.json().await.unwrap();
        assert!(
            body["message"].as_str().unwrap().contains(names::COMPONENTS_GROUP),
            "{body}"
        );
        // The backend proxy authenticates like the API routes: no provider sees a component's call.
        let proxied = https
            .get(format!("{}/services/providers/quickstart/api/hello", dev.hub))
            .bearer_auth(token.trim())
            .send()
            .await
            .unwrap();
        assert_eq!(
            proxied.status().as_u16(),
            401,
            "the backend proxy takes {file} as a caller"
        );
        // Nor does any other door: the kcp pass-through (the providers' kubeconfigs are there)
        // and a portal sign-in with the token.
        let through = https
            .get(format!(
                "{}/clusters/{}/api/v1/namespaces/default/secrets",
                dev.hub,
                names::SYSTEM_PROVIDERS_PATH
            ))
            .bearer_auth(token.trim())
            .send()
            .await
            .unwrap();
        assert_eq!(through.status().as_u16(), 401, "the kcp pass-through takes {file}");
        let signed_in = https
            .post(format!("{}/api/session", dev.hub))
            .header("origin", &dev.hub)
            .header("x-faros-csrf", "1")
            .json(&json!({ "token": token.trim() }))
            .send()
            .await
            .unwrap();
        assert_eq!(signed_in.status().as_u16(), 401, "a portal sign-in takes {file}");
    }
    let shared = std::fs::read_to_string(&dev.token_file).unwrap();
    for user in [hub::DEFAULT_USER, names::RECONCILER_KCP_USER] {
        assert!(!shared.contains(user), "{user} in the shared token file:\n{shared}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let file = dev.state_dir.join(faros::identities::TOKEN_FILE);
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", file.display());
    }
}

/// What the dev user's portal shows of the demo workspace: 200 while the hub may serve it.
async fn demo_enabled(dev: &devproc::DevProcess) -> u16 {
    dev.https()
        .unwrap()
        .get(format!(
            "{}/api/orgs/demo/workspaces/default/providers/enabled",
            dev.hub
        ))
        .bearer_auth(dev.dev_token().unwrap())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_runs_on_its_own_kcp_user() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let mut dev = devproc::launch(&state).start().await.unwrap();
    let admin = ClientFactory::new(dev.admin_config().await.unwrap()).unwrap();
    let own = ClientFactory::new(config_from_file(&state.join("hub.kubeconfig")).await.unwrap()).unwrap();

    // The demo organization and its workspace were made by the hub, so kcp made its user their owner.
    for path in [DEMO, DEMO_DEFAULT] {
        let owner: ClusterRoleBinding = Api::all(admin.cluster(path).unwrap())
            .get("workspace-admin")
            .await
            .unwrap();
        assert_eq!(
            owner_of(&owner),
            hub::DEFAULT_USER,
            "{path} was created by the hub's own user"
        );
    }
    // The reconciler granted it its role in the provider workspace it provisioned.
    let quickstart = names::provider_workspace_path("quickstart");
    let granted: ClusterRoleBinding = Api::all(admin.cluster(&quickstart).unwrap())
        .get(hub::ROLE)
        .await
        .unwrap();
    assert_eq!(owner_of(&granted), hub::DEFAULT_USER);

    // Refused: a provider's Secrets, the providers' kubeconfigs, workspaces in root.
    for path in [quickstart.as_str(), names::SYSTEM_PROVIDERS_PATH] {
        let secrets: Api<Secret> = Api::namespaced(own.cluster(path).unwrap(), "default");
        assert_eq!(
            code(
                &format!("list Secrets in {path}"),
                secrets.list(&Default::default()).await
            ),
            403
        );
    }
    let root: Api<Workspace> = Api::all(own.cluster(names::ROOT_PATH).unwrap());
    let stray: Workspace = serde_json::from_value(json!({"metadata": {"name": "stray"}, "spec": {}})).unwrap();
    assert_eq!(
        code(
            "create a workspace in root",
            root.create(&PostParams::default(), &stray).await
        ),
        403
    );
    assert_eq!(demo_enabled(&dev).await, 200);
    component_tokens_are_kcps_own(&dev).await;

    // An organization the hub did not make (here: its owner binding names someone else, as for one
    // an admin identity made before the hub had its own user) is granted to it on the next start.
    for path in [DEMO, DEMO_DEFAULT] {
        let bindings: Api<ClusterRoleBinding> = Api::all(admin.cluster(path).unwrap());
        bindings
            .delete("workspace-admin", &DeleteParams::default())
            .await
            .unwrap();
        let before: ClusterRoleBinding = serde_json::from_value(json!({
            "metadata": {"name": "workspace-admin"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "admin-before"}]
        }))
        .unwrap();
        bindings.create(&PostParams::default(), &before).await.unwrap();
    }
    // Without its owner binding the hub cannot serve the workspace (once its cached access
    // decisions expire): the grant below is what gives it back.
    let lost = eventually(
        "the hub to lose the demo workspace",
        Duration::from_secs(30),
        || async {
            let code = demo_enabled(&dev).await;
            Ok((code != 200).then_some(code))
        },
    )
    .await
    .unwrap();
    assert!(lost >= 400, "{lost}");
    // Once its cached decisions expire, its access reviews there are refused too: nobody is a
    // member as far as it can tell, the answer a stranger gets (kcp's refusal, naming the hub's
    // user, goes to the hub's log only).
    eventually(
        "the hub to answer 404 for the demo workspace",
        Duration::from_secs(30),
        || async { Ok((demo_enabled(&dev).await == 404).then_some(())) },
    )
    .await
    .unwrap();
    dev.terminate().unwrap();
    // An earlier faros dev listed the components in the shared token file: the next start moves
    // them out (kcp refuses a token listed twice, and the hub's static table is for people).
    let mut shared = std::fs::read_to_string(&dev.token_file).unwrap();
    for (file, user) in [
        (faros::identities::HUB_TOKEN_FILE, hub::DEFAULT_USER),
        (faros::identities::RECONCILER_TOKEN_FILE, names::RECONCILER_KCP_USER),
    ] {
        let token = std::fs::read_to_string(state.join(file)).unwrap();
        shared.push_str(&faros::identities::line(token.trim(), user));
    }
    std::fs::write(&dev.token_file, shared).unwrap();
    let dev = devproc::launch(&state).start().await.unwrap();
    component_tokens_are_kcps_own(&dev).await;
    let admin = ClientFactory::new(dev.admin_config().await.unwrap()).unwrap();
    for path in [DEMO, DEMO_DEFAULT] {
        let granted: ClusterRoleBinding = Api::all(admin.cluster(path).unwrap())
            .get(hub::ROLE)
            .await
            .unwrap_or_else(|e| panic!("the grant in {path}: {e}"));
        assert_eq!(owner_of(&granted), hub::DEFAULT_USER);
        assert_eq!(granted.role_ref.name, "cluster-admin");
    }
    assert_eq!(demo_enabled(&dev).await, 200);
}
