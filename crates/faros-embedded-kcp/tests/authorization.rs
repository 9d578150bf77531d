//! Authorization as kcp's authorizer e2e tests see it: discovery needs workspace access like
//! content does, `authorization.kcp.io/required-groups` gates a workspace and is inherited,
//! impersonation is refused loudly rather than ignored, and `kubectl auth whoami` works.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::kcp::WAIT;
use common::{BOB_TOKEN, TestServer, USER_TOKEN};
use faros_core::kcp::Workspace;
use faros_core::wait::wait_for;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

async fn create_ready(t: &TestServer, parent: &str, name: &str, annotations: serde_json::Value) -> Workspace {
    let api: Api<Workspace> = Api::all(t.client_as(parent, "admin", t.server.admin_token()).await);
    let ws: Workspace = serde_json::from_value(json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
        "metadata": {"name": name, "annotations": annotations}, "spec": {}}))
    .unwrap();
    api.create(&PostParams::default(), &ws).await.unwrap();
    wait_for(api, name, |w| w.is_some_and(Workspace::is_ready), WAIT)
        .await
        .unwrap()
        .unwrap()
}

async fn status_of(t: &TestServer, token: &str, path: &str) -> (u16, serde_json::Value) {
    let resp = t.http().get(t.url(path)).bearer_auth(token).send().await.unwrap();
    let code = resp.status().as_u16();
    (code, resp.json().await.unwrap_or_default())
}

/// Lets every user in `group` into workspace `path` (kcp's `system:kcp:workspace:access` pattern).
async fn grant_access(t: &TestServer, path: &str, group: &str) {
    let client = t.client_as(path, "admin", t.server.admin_token()).await;
    common::kcp::grant_to(
        client,
        "enter",
        ("Group", group),
        json!([{"nonResourceURLs": ["/"], "verbs": ["access"]},
               {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]),
    )
    .await;
}

#[tokio::test]
async fn discovery_needs_workspace_access() {
    let t = TestServer::start().await;
    create_ready(&t, "root", "closed", json!({})).await;
    for path in [
        "/clusters/root:closed/api",
        "/clusters/root:closed/apis",
        "/clusters/root:closed/api/v1",
        "/clusters/root:closed/apis/apis.kcp.io/v1alpha2",
        "/clusters/root:closed/openapi/v3",
    ] {
        let (code, body) = status_of(&t, BOB_TOKEN, path).await;
        assert_eq!(code, 403, "{path}: {body}");
        assert_eq!(body["reason"], "Forbidden", "{path}");
        let message = body["message"].as_str().unwrap();
        // kcp anonymises every authorizer's reason.
        assert!(message.ends_with(": access denied"), "{path}: {message}");
        assert!(message.contains("User \"bob\""), "{path}: {message}");
        // The admin still sees it.
        assert_eq!(status_of(&t, &t.admin_token(), path).await.0, 200, "{path}");
    }
    // With access, discovery is open.
    grant_access(&t, "root:closed", "system:authenticated").await;
    assert_eq!(status_of(&t, BOB_TOKEN, "/clusters/root:closed/apis").await.0, 200);
}

#[tokio::test]
async fn required_groups_gate_a_workspace_and_are_inherited() {
    let t = TestServer::start().await;
    // alice is in `devs` and `testers`, bob in no group.
    create_ready(
        &t,
        "root",
        "gated",
        json!({"authorization.kcp.io/required-groups": "devs,testers;admins"}),
    )
    .await;
    grant_access(&t, "root:gated", "system:authenticated").await;
    let alice: Api<ConfigMap> = Api::namespaced(t.client_as("root:gated", "alice", USER_TOKEN).await, "default");
    alice.list(&Default::default()).await.unwrap();
    let bob: Api<ConfigMap> = Api::namespaced(t.client_as("root:gated", "bob", BOB_TOKEN).await, "default");
    let err = match bob.list(&Default::default()).await {
        Err(kube::Error::Api(s)) => s,
        other => panic!("bob entered a gated workspace: {other:?}"),
    };
    assert_eq!(err.code, 403);
    assert!(err.message.ends_with(": access denied"), "{}", err.message);
    let lc = status_of(
        &t,
        &t.admin_token(),
        "/clusters/root:gated/apis/core.kcp.io/v1alpha1/logicalclusters/cluster",
    )
    .await
    .1;
    assert_eq!(
        lc["metadata"]["annotations"]["authorization.kcp.io/required-groups"],
        "devs,testers;admins"
    );

    // A child inherits the annotation, whatever its creator asks for.
    let child = create_ready(&t, "root:gated", "child", json!({})).await;
    assert_eq!(
        child.metadata.annotations.unwrap()["authorization.kcp.io/required-groups"],
        "devs,testers;admins"
    );
    grant_access(&t, "root:gated:child", "system:authenticated").await;
    let bob_child: Api<ConfigMap> = Api::namespaced(t.client_as("root:gated:child", "bob", BOB_TOKEN).await, "default");
    assert_eq!(
        match bob_child.list(&Default::default()).await {
            Err(kube::Error::Api(s)) => s.code,
            other => panic!("bob entered the child: {other:?}"),
        },
        403
    );
}

#[tokio::test]
async fn impersonation_is_refused_not_ignored() {
    let t = TestServer::start().await;
    let resp = t
        .http()
        .get(t.url("/api/v1/namespaces/default/configmaps"))
        .bearer_auth(t.admin_token())
        .header("Impersonate-User", "bob")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert!(body["message"].as_str().unwrap().contains("impersonation"), "{body}");
}

#[tokio::test]
async fn self_subject_review_answers_with_the_callers_identity() {
    let t = TestServer::start().await;
    // What `kubectl auth whoami` asks (here as JSON; kubectl itself sends protobuf).
    let resp = t
        .http()
        .post(t.url("/apis/authentication.k8s.io/v1/selfsubjectreviews"))
        .bearer_auth(USER_TOKEN)
        .json(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let review: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(review["kind"], "SelfSubjectReview");
    assert_eq!(review["status"]["userInfo"]["username"], "alice");
    assert_eq!(review["status"]["userInfo"]["uid"], "alice-uid");
    let groups = review["status"]["userInfo"]["groups"].as_array().unwrap();
    for g in ["devs", "testers", "system:authenticated"] {
        assert!(groups.iter().any(|x| x == g), "{groups:?}");
    }
    // Never stored, and not listable.
    let resp = t
        .http()
        .get(t.url("/apis/authentication.k8s.io/v1/selfsubjectreviews"))
        .bearer_auth(t.admin_token())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 405);
}

#[tokio::test]
async fn workspace_admins_cannot_write_workspace_status() {
    let t = TestServer::start().await;
    // alice is cluster-admin of workspace root:org, which holds workspace team.
    let org = create_ready(&t, "root", "org", json!({})).await;
    let in_org = t.client_as("root:org", "admin", t.server.admin_token()).await;
    common::kcp::bind_cluster_role(in_org, "alice-admin", "cluster-admin", ("User", "alice")).await;
    create_ready(&t, "root:org", "team", json!({})).await;
    let alice: Api<Workspace> = Api::all(t.client_as("root:org", "alice", USER_TOKEN).await);
    // Everything else of the workspace is hers to edit (a patch: the workspace's controller may
    // still be writing it, and a replace from a stale read would be a 409 Conflict)...
    let label = json!({"metadata": {"labels": {"owner": "alice"}}});
    let mut team = alice
        .patch("team", &PatchParams::default(), &Patch::Merge(&label))
        .await
        .unwrap();
    // ...but not its status, although cluster-admin grants `*`.
    team.status.as_mut().unwrap().phase = Some(faros_core::kcp::LogicalClusterPhase::Scheduling);
    let err = match alice.replace_status("team", &PostParams::default(), &team).await {
        Err(kube::Error::Api(s)) => s,
        other => panic!("a workspace admin wrote workspace status: {other:?}"),
    };
    assert_eq!(err.code, 403, "{}", err.message);
    // kcp's system policy refuses it; the reason is anonymised like every authorizer's.
    assert!(
        err.message.contains("cannot update resource \"workspaces/status\"")
            && err.message.ends_with(": access denied"),
        "{}",
        err.message
    );
    assert!(alice.get_status("team").await.unwrap().is_ready());
    assert!(org.is_ready());
}

#[tokio::test]
async fn kcp_bootstrap_cluster_roles_work_when_bound_in_any_workspace() {
    let t = TestServer::start().await;
    create_ready(&t, "root", "open", json!({})).await;
    assert_eq!(status_of(&t, BOB_TOKEN, "/clusters/root:open/apis").await.0, 403);
    // No ClusterRole of that name exists in root:open; kcp's global one applies.
    let client = t.client_as("root:open", "admin", t.server.admin_token()).await;
    let roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(client.clone());
    assert!(roles.get_opt("system:kcp:workspace:access").await.unwrap().is_none());
    common::kcp::bind_cluster_role(client, "bob-enters", "system:kcp:workspace:access", ("User", "bob")).await;
    assert_eq!(status_of(&t, BOB_TOKEN, "/clusters/root:open/apis").await.0, 200);
    // Access only: reading content still needs RBAC.
    let (code, body) = status_of(
        &t,
        BOB_TOKEN,
        "/clusters/root:open/api/v1/namespaces/default/configmaps",
    )
    .await;
    assert_eq!(code, 403, "{body}");
}

#[tokio::test]
async fn self_subject_rules_review_lists_the_callers_rules_inside_workspaces_it_may_enter() {
    let t = TestServer::start().await;
    create_ready(&t, "root", "rules", json!({})).await;
    let review = |token: &'static str| {
        let t = &t;
        async move {
            let resp = t
                .http()
                .post(t.url("/clusters/root:rules/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"))
                .bearer_auth(token)
                .json(
                    &json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                    "spec": {"namespace": "default"}}),
                )
                .send()
                .await
                .unwrap();
            let code = resp.status().as_u16();
            (code, resp.json::<serde_json::Value>().await.unwrap())
        }
    };
    // No access to the workspace: refused, like everything else there.
    assert_eq!(review(BOB_TOKEN).await.0, 403);
    grant_access(&t, "root:rules", "system:authenticated").await;
    let (code, body) = review(BOB_TOKEN).await;
    assert_eq!(code, 201, "{body}");
    let resource_rules = body["status"]["resourceRules"].as_array().unwrap();
    assert!(
        resource_rules.contains(&json!({"verbs": ["list"], "apiGroups": [""], "resources": ["configmaps"]})),
        "{body}"
    );
    assert!(
        resource_rules.contains(
            &json!({"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"]})
        ),
        "{body}"
    );
    assert!(
        body["status"]["nonResourceRules"]
            .as_array()
            .unwrap()
            .contains(&json!({"verbs": ["access"], "nonResourceURLs": ["/"]})),
        "{body}"
    );
    assert_eq!(body["status"]["incomplete"], false);
}

#[tokio::test]
async fn every_authenticated_user_reads_roots_workspaces_and_nothing_more() {
    let t = TestServer::start().await;
    create_ready(&t, "root", "listed", json!({})).await;
    let ws = "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces";
    // kcp's root binds `system:kcp:tenancy:reader` to system:authenticated.
    let (code, body) = status_of(&t, BOB_TOKEN, &format!("{ws}/listed")).await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = status_of(&t, BOB_TOKEN, ws).await;
    assert_eq!(code, 200, "{body}");
    assert!(
        body["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["metadata"]["name"] == "listed"),
        "{body}"
    );
    for path in [
        "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspacetypes",
        "/clusters/root/apis/core.kcp.io/v1alpha1/logicalclusters/cluster",
    ] {
        let (code, body) = status_of(&t, BOB_TOKEN, path).await;
        assert_eq!(code, 200, "{path}: {body}");
    }
    // Reading only: no writes in root, and no way into the workspaces it lists.
    let create = t
        .http()
        .post(t.url(ws))
        .bearer_auth(BOB_TOKEN)
        .json(
            &json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "bobs"},
            "spec": {"type": {"name": "universal", "path": "root"}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(create.status().as_u16(), 403);
    let delete = t
        .http()
        .delete(t.url(&format!("{ws}/listed")))
        .bearer_auth(BOB_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status().as_u16(), 403);
    let (code, body) = status_of(&t, BOB_TOKEN, "/clusters/root:listed/api/v1/namespaces").await;
    assert_eq!(code, 403, "{body}");
    let (code, body) = status_of(&t, BOB_TOKEN, "/clusters/root/api/v1/namespaces").await;
    assert_eq!(code, 403, "{body}");
}
