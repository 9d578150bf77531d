//! Workspaces against a real embedded kcp: lifecycle phases, path addressing (kube-rs and kubectl),
//! access, WorkspaceType limits and defaults, initializers, deletion and restart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{BOB_TOKEN, TestServer, USER_TOKEN};
use faros_core::kcp::{LogicalCluster, Workspace, WorkspaceType};
use faros_core::wait::wait_for;
use faros_embedded_kcp::names;
use faros_embedded_kcp::{Config, Server};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

async fn start() -> TestServer {
    TestServer::start().await
}

fn ws(name: &str, spec: serde_json::Value) -> Workspace {
    serde_json::from_value(json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
        "metadata": {"name": name}, "spec": spec}))
    .unwrap()
}

fn wstype(name: &str, spec: serde_json::Value) -> WorkspaceType {
    serde_json::from_value(json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType",
        "metadata": {"name": name}, "spec": spec}))
    .unwrap()
}

fn phase(w: &Workspace) -> Option<String> {
    w.phase().map(|p| p.to_string())
}

/// Creates `name` in the workspace at `parent` as admin and waits until it is Ready.
async fn create_ready(t: &TestServer, parent: &str, name: &str, spec: serde_json::Value) -> Workspace {
    let client = t.client_as(parent, "admin", t.server.admin_token()).await;
    let api: Api<Workspace> = Api::all(client);
    api.create(&PostParams::default(), &ws(name, spec)).await.unwrap();
    wait_ready(api, name).await
}

async fn wait_ready(api: Api<Workspace>, name: &str) -> Workspace {
    wait_for(api, name, |w| w.is_some_and(Workspace::is_ready), WAIT)
        .await
        .unwrap()
        .unwrap()
}

/// Lets alice create (and read) workspaces in root, as kcp's workspace creators are granted.
async fn let_alice_create_workspaces(t: &TestServer) {
    common::kcp::grant(
        t.admin().await,
        "ws-creator",
        "alice",
        json!([{"apiGroups": ["tenancy.kcp.io"], "resources": ["workspaces"], "verbs": ["create", "get", "list", "watch"]},
               {"apiGroups": ["tenancy.kcp.io"], "resources": ["workspacetypes"], "verbs": ["use"]}]),
    )
    .await;
}

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn lifecycle_is_observable_and_ready_workspaces_are_complete() {
    let t = start().await;
    let api: Api<Workspace> = Api::all(t.admin().await);
    let list = api.list(&Default::default()).await.unwrap();
    let rv = list.metadata.resource_version.unwrap();
    let mut events = api
        .watch(&WatchParams::default().fields("metadata.name=a"), &rv)
        .await
        .unwrap()
        .boxed();
    let created = api.create(&PostParams::default(), &ws("a", json!({}))).await.unwrap();
    // As kcp answers (its CRD's default): the create response is in phase Scheduling, everything
    // else happens asynchronously.
    assert_eq!(phase(&created).as_deref(), Some("Scheduling"));
    assert_eq!(
        serde_json::to_value(&created.spec.type_).unwrap(),
        json!({"name": "universal", "path": "root"})
    );
    let mut phases: Vec<Option<String>> = Vec::new();
    let ready = tokio::time::timeout(WAIT, async {
        while let Some(event) = events.next().await {
            let w = match event.unwrap() {
                WatchEvent::Added(w) | WatchEvent::Modified(w) => w,
                other => panic!("unexpected event {other:?}"),
            };
            let p = phase(&w);
            if phases.last() != Some(&p) {
                phases.push(p);
            }
            // As on kcp, the label follows the status in a write of its own.
            let labelled = w.metadata.labels.as_ref().and_then(|l| l.get("tenancy.kcp.io/phase"));
            if w.is_ready() && labelled.map(String::as_str) == Some("Ready") {
                return w;
            }
        }
        panic!("watch ended early");
    })
    .await
    .expect("workspace did not become Ready");
    assert_eq!(
        phases,
        [
            Some("Scheduling".into()),
            Some("Initializing".into()),
            Some("Ready".into())
        ]
    );

    let cluster = ready.spec.cluster.clone().unwrap();
    assert_eq!(cluster.len(), 16);
    assert!(cluster.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
    assert_eq!(
        ready.spec.url.as_deref(),
        Some(format!("{}/clusters/root:a", t.server.url()).as_str())
    );
    let annotations = ready.metadata.annotations.clone().unwrap();
    assert_eq!(annotations["internal.tenancy.kcp.io/cluster"], cluster);
    assert_eq!(annotations["kcp.io/cluster"], "root");
    assert_eq!(ready.metadata.labels.clone().unwrap()["tenancy.kcp.io/phase"], "Ready");
    assert_eq!(
        ready.metadata.finalizers,
        Some(vec!["core.kcp.io/logicalcluster".to_string()])
    );
    let status = serde_json::to_value(ready.status.as_ref().unwrap()).unwrap();
    let conditions: Vec<(String, String)> = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["type"].as_str().unwrap().into(), c["status"].as_str().unwrap().into()))
        .collect();
    assert_eq!(
        conditions,
        [
            ("WorkspaceInitialized".to_string(), "True".to_string()),
            ("WorkspaceScheduled".to_string(), "True".to_string())
        ]
    );
    assert!(status.get("initializers").is_none());

    // Inside, by path and by name: the LogicalCluster and the universal type's `default` namespace.
    for target in ["root:a", cluster.as_str()] {
        let inner = t.client_as(target, "admin", t.server.admin_token()).await;
        let lc = Api::<LogicalCluster>::all(inner.clone()).get("cluster").await.unwrap();
        assert_eq!(lc.path(), Some("root:a"));
        assert_eq!(lc.phase().map(|p| p.to_string()).as_deref(), Some("Ready"));
        let lc_ann = lc.metadata.annotations.unwrap();
        assert_eq!(lc_ann["internal.tenancy.kcp.io/type"], "root:universal");
        assert_eq!(lc_ann["kcp.io/cluster"], cluster);
        let owner = lc.spec.owner.unwrap();
        assert_eq!((owner.name.as_str(), owner.cluster.as_str()), ("a", "root"));
        Api::<Namespace>::all(inner).get("default").await.unwrap();
    }
}

#[tokio::test]
async fn nested_paths_work_with_kubectl_and_unknown_paths_404() {
    let t = start().await;
    create_ready(&t, "root", "a", json!({})).await;
    let b = create_ready(&t, "root:a", "b", json!({})).await;
    assert_eq!(
        b.spec.url.as_deref(),
        Some(format!("{}/clusters/root:a:b", t.server.url()).as_str())
    );

    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("config");
    std::fs::write(
        &kubeconfig,
        t.server.kubeconfig("root:a:b", "admin", t.server.admin_token()),
    )
    .unwrap();
    // tokio's Command: the server shares this test's runtime and must keep serving meanwhile.
    let kubectl = async |args: &[&str]| {
        let out = tokio::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(
        kubectl(&["get", "namespaces", "-o", "name"]).await,
        "namespace/default\nnamespace/kube-system\n"
    );
    kubectl(&["create", "configmap", "hello", "-n", "default", "--from-literal=k=v"]).await;
    assert_eq!(
        kubectl(&["get", "configmap", "hello", "-n", "default", "-o", "jsonpath={.data.k}"]).await,
        "v"
    );
    // The parent lists its child with kcp's columns.
    let server_a = format!("{}/clusters/root:a", t.server.url());
    let table = kubectl(&["--server", &server_a, "get", "workspaces"]).await;
    let lines: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0][..4], ["NAME", "TYPE", "PHASE", "URL"]);
    assert_eq!(
        lines[1][..4],
        [
            "b",
            "universal",
            "Ready",
            format!("{}/clusters/root:a:b", t.server.url()).as_str()
        ]
    );

    let resp = t
        .http()
        .get(t.url("/clusters/root:a:nope/api/v1/namespaces"))
        .bearer_auth(t.admin_token())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["message"], "workspaces.tenancy.kcp.io \"root:a:nope\" not found");
}

#[tokio::test]
async fn creators_get_access_and_others_are_forbidden() {
    let t = start().await;
    let_alice_create_workspaces(&t).await;

    let alice_ws: Api<Workspace> = Api::all(t.alice().await);
    let created = alice_ws
        .create(&PostParams::default(), &ws("mine", json!({})))
        .await
        .unwrap();
    let owner: serde_json::Value =
        serde_json::from_str(&created.metadata.annotations.unwrap()["experimental.tenancy.kcp.io/owner"]).unwrap();
    assert_eq!(
        owner,
        json!({"username": "alice", "uid": "alice-uid", "groups": ["devs", "testers", "system:authenticated"]})
    );
    wait_ready(alice_ws.clone(), "mine").await;
    create_ready(&t, "root", "theirs", json!({})).await;

    // The creator is cluster-admin inside.
    let alice_in = t.client_as("root:mine", "alice", USER_TOKEN).await;
    let cms: Api<ConfigMap> = Api::namespaced(alice_in, "default");
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap(),
    )
    .await
    .unwrap();
    let names: Vec<String> = cms
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(names, ["kube-root-ca.crt", "x"]);

    // Non-members get kcp's 403, whether or not they could see the parent.
    let bob_in: Api<ConfigMap> = Api::namespaced(t.client_as("root:mine", "bob", BOB_TOKEN).await, "default");
    let err = api_err(bob_in.list(&Default::default()).await.unwrap_err());
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "configmaps is forbidden: User \"bob\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\": access denied"
    );
    let alice_theirs: Api<ConfigMap> =
        Api::namespaced(t.client_as("root:theirs", "alice", USER_TOKEN).await, "default");
    assert_eq!(
        api_err(alice_theirs.list(&Default::default()).await.unwrap_err()).code,
        403
    );

    // Users cannot pick the logical cluster themselves.
    let err = api_err(
        alice_ws
            .create(
                &PostParams::default(),
                &ws("forced", json!({"cluster": "abcdefghijklmnop"})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            403,
            "workspaces.tenancy.kcp.io \"forced\" is forbidden: spec.Cluster can only be set by system privileged users"
        )
    );
}

#[tokio::test]
async fn workspace_type_limits_defaults_and_immutability() {
    let t = start().await;
    let types: Api<WorkspaceType> = Api::all(t.admin().await);
    for (name, spec) in [
        // Extends universal so it serves the tenancy API at all; the limit is what refuses.
        (
            "leaf",
            json!({"limitAllowedChildren": {"none": true},
                   "extend": {"with": [{"name": "universal", "path": "root"}]}}),
        ),
        (
            "org",
            json!({"limitAllowedChildren": {"types": [{"name": "team", "path": "root"}]},
                   "defaultChildWorkspaceType": {"name": "team", "path": "root"},
                   "extend": {"with": [{"name": "universal", "path": "root"}]}}),
        ),
        (
            "team",
            json!({"limitAllowedParents": {"types": [{"name": "org", "path": "root"}]}}),
        ),
        (
            "big-team",
            json!({"extend": {"with": [{"name": "team", "path": "root"}]}}),
        ),
    ] {
        types.create(&PostParams::default(), &wstype(name, spec)).await.unwrap();
    }
    let org_type = wait_for(
        types.clone(),
        "org",
        |o| {
            o.and_then(|o| o.status.as_ref())
                .is_some_and(|s| faros_core::kcp::Condition::is_type_true(s.conditions.as_deref(), "Ready"))
        },
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(org_type.metadata.annotations.unwrap()["kcp.io/path"], "root");

    let root_ws: Api<Workspace> = Api::all(t.admin().await);
    let forbidden = |name: &str, msg: &str| format!("workspaces.tenancy.kcp.io \"{name}\" is forbidden: {msg}");
    let err = api_err(
        root_ws
            .create(
                &PostParams::default(),
                &ws("t", json!({"type": {"name": "team", "path": "root"}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        forbidden(
            "t",
            "workspace type root:team only allows [root:org] parent workspaces, but parent type root:root only implements [root:root root:universal]"
        )
    );
    let err = api_err(
        root_ws
            .create(
                &PostParams::default(),
                &ws("big", json!({"type": {"name": "big-team"}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        forbidden(
            "big",
            "workspace type root:big-team extends root:team, which only allows [root:org] parent workspaces, but parent type root:root only implements [root:root root:universal]"
        )
    );
    let err = api_err(
        root_ws
            .create(&PostParams::default(), &ws("n", json!({"type": {"name": "nope"}})))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (err.code, err.message),
        (403, forbidden("n", "workspace type \"nope\" cannot be resolved"))
    );

    create_ready(&t, "root", "l", json!({"type": {"name": "leaf", "path": "root"}})).await;
    let in_leaf: Api<Workspace> = Api::all(t.client_as("root:l", "admin", t.server.admin_token()).await);
    let err = api_err(
        in_leaf
            .create(
                &PostParams::default(),
                &ws("c", json!({"type": {"name": "universal", "path": "root"}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        forbidden("c", "workspace type root:leaf cannot have any children")
    );

    let o = create_ready(&t, "root", "o", json!({"type": {"name": "org"}})).await;
    assert_eq!(
        serde_json::to_value(&o.spec.type_).unwrap(),
        json!({"name": "org", "path": "root"})
    );
    let in_org: Api<Workspace> = Api::all(t.client_as("root:o", "admin", t.server.admin_token()).await);
    let err = api_err(
        in_org
            .create(
                &PostParams::default(),
                &ws("u", json!({"type": {"name": "universal", "path": "root"}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        forbidden(
            "u",
            "workspace type root:org only allows [root:team] child workspaces, but child type root:universal only implements [root:universal]"
        )
    );
    // No type given: the parent's defaultChildWorkspaceType; extending types count as their bases.
    let team = in_org
        .create(&PostParams::default(), &ws("t", json!({})))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&team.spec.type_).unwrap(),
        json!({"name": "team", "path": "root"})
    );
    wait_ready(in_org.clone(), "t").await;
    in_org
        .create(
            &PostParams::default(),
            &ws("big", json!({"type": {"name": "big-team"}})),
        )
        .await
        .unwrap();
    wait_ready(in_org.clone(), "big").await;

    // spec.type cannot change.
    let err = api_err(
        in_org
            .patch(
                "t",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"type": {"name": "big-team"}}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            422,
            "Workspace.tenancy.kcp.io \"t\" is invalid: spec.type: Invalid value: name is immutable"
        )
    );
    // A team workspace does not extend universal: no initializer, no `default` namespace.
    let in_team: Api<Namespace> = Api::all(t.client_as("root:o:t", "admin", t.server.admin_token()).await);
    assert_eq!(api_err(in_team.get("default").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn initializers_hold_workspaces_until_removed() {
    let t = start().await;
    let types: Api<WorkspaceType> = Api::all(t.admin().await);
    types
        .create(
            &PostParams::default(),
            &wstype(
                "gated",
                json!({"initializer": true, "extend": {"with": [{"name": "universal", "path": "root"}]},
                       "defaultAPIBindings": [{"path": "root", "export": "widgets.example.io"}]}),
            ),
        )
        .await
        .unwrap();
    let root_ws: Api<Workspace> = Api::all(t.admin().await);
    root_ws
        .create(&PostParams::default(), &ws("g", json!({"type": {"name": "gated"}})))
        .await
        .unwrap();
    // universal's initializer runs; the type's own stays, and default bindings wait for binding.
    let held = wait_for(
        root_ws.clone(),
        "g",
        |w| {
            w.and_then(|w| w.status.as_ref())
                .and_then(|s| s.initializers.clone())
                .is_some_and(|i| i == ["root:gated", "system:apibindings"])
        },
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(phase(&held).as_deref(), Some("Initializing"));
    let cluster = held.spec.cluster.clone().unwrap();
    let inner = t.client_as(&cluster, "admin", t.server.admin_token()).await;
    let bindings: Api<faros_core::kcp::apis::v1alpha2::APIBinding> = Api::all(inner.clone());
    let name = names::default_binding_name(&cluster, "root", "widgets.example.io");
    assert!(name.starts_with("widgets.example.io-"), "{name}");
    let binding = wait_for(bindings.clone(), &name, |b| b.is_some(), WAIT)
        .await
        .unwrap()
        .unwrap();
    // Next to universal's default bindings of root's tenancy and topology exports.
    let mut listed: Vec<String> = bindings
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|b| b.metadata.name)
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            names::default_binding_name(&cluster, "root", "tenancy.kcp.io"),
            names::default_binding_name(&cluster, "root", "topology.kcp.io"),
            name.clone(),
        ]
    );
    let binding = serde_json::to_value(&binding).unwrap();
    assert_eq!(
        binding["spec"]["reference"],
        json!({"export": {"path": "root", "name": "widgets.example.io"}})
    );
    // The creator (admin, no owner annotation) and initializers aside, nobody is let in yet.
    let bob: Api<Namespace> = Api::all(t.client_as(&cluster, "bob", BOB_TOKEN).await);
    assert_eq!(api_err(bob.get("default").await.unwrap_err()).code, 403);

    // Whoever owns the initializers removes them from the LogicalCluster; the workspace moves on.
    let lcs: Api<LogicalCluster> = Api::all(inner);
    lcs.patch_status(
        "cluster",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"initializers": []}})),
    )
    .await
    .unwrap();
    let ready = wait_ready(root_ws, "g").await;
    assert!(ready.status.unwrap().initializers.is_none());
}

#[tokio::test]
async fn deleting_a_workspace_removes_its_clusters() {
    let t = start().await;
    let d = create_ready(&t, "root", "d", json!({})).await;
    let e = create_ready(&t, "root:d", "e", json!({})).await;
    let cms: Api<ConfigMap> = Api::namespaced(
        t.client_as("root:d:e", "admin", t.server.admin_token()).await,
        "default",
    );
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap(),
    )
    .await
    .unwrap();
    let (d_cluster, e_cluster) = (d.spec.cluster.unwrap(), e.spec.cluster.unwrap());
    assert!(!t.server.stored_keys(&e_cluster).unwrap().is_empty());

    let root_ws: Api<Workspace> = Api::all(t.admin().await);
    root_ws.delete("d", &DeleteParams::default()).await.unwrap();
    wait_for(root_ws, "d", |w| w.is_none(), WAIT).await.unwrap();
    for cluster in [&d_cluster, &e_cluster] {
        assert_eq!(t.server.stored_keys(cluster).unwrap(), vec![]);
    }
    for path in ["root:d", "root:d:e"] {
        let resp = t
            .http()
            .get(t.url(&format!("/clusters/{path}/api/v1/namespaces")))
            .bearer_auth(t.admin_token())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 404, "{path}");
    }
}

#[tokio::test]
async fn restart_resumes_unfinished_workspaces() {
    // Without a server URL the controller cannot finish scheduling: the workspace stops there.
    let t = TestServer::start().await;
    let root_ws: Api<Workspace> = Api::all(t.admin().await);
    root_ws
        .create(&PostParams::default(), &ws("r", json!({})))
        .await
        .unwrap();
    wait_for(
        root_ws,
        "r",
        |w| {
            w.is_some_and(|w| {
                phase(w).as_deref() == Some("Scheduling")
                    && w.metadata
                        .annotations
                        .as_ref()
                        .is_some_and(|a| a.contains_key("internal.tenancy.kcp.io/cluster"))
            })
        },
        WAIT,
    )
    .await
    .unwrap();
    let TestServer { server, dir } = t;
    server.shutdown().await;

    let mut config = Config::new(dir.path().join("state"));
    config.token_file = Some(dir.path().join("tokens.csv"));
    let server = Server::start(config).await.unwrap();
    let t = TestServer { server, dir };
    let root_ws: Api<Workspace> = Api::all(t.admin().await);
    let ready = wait_ready(root_ws, "r").await;
    assert_eq!(
        ready.spec.url.as_deref(),
        Some(format!("{}/clusters/root:r", t.server.url()).as_str())
    );
}

#[tokio::test]
async fn default_api_bindings_are_bound_before_ready() {
    use common::kcp::{create_export, create_schema, widget_schema, widgets};
    let t = start().await;
    let root = t.admin().await;
    create_schema(&root, widget_schema("v1.widgets.example.io", "Widget", "widgets")).await;
    let claims = json!([{"group": "", "resource": "configmaps", "verbs": ["get", "list"],
        "defaultSelector": {"matchLabels": {"tool": "yes"}}}]);
    create_export(&root, "widgets.example.io", "v1.widgets.example.io", claims).await;
    let types: Api<WorkspaceType> = Api::all(root.clone());
    types
        .create(
            &PostParams::default(),
            &wstype(
                "tooled",
                json!({"extend": {"with": [{"name": "universal", "path": "root"}]},
                       "defaultAPIBindings": [{"path": "root", "export": "widgets.example.io"}]}),
            ),
        )
        .await
        .unwrap();
    let w = create_ready(&t, "root", "tools", json!({"type": {"name": "tooled"}})).await;
    let inner = t.client_as("root:tools", "admin", t.server.admin_token()).await;
    let name = names::default_binding_name(w.spec.cluster.as_deref().unwrap(), "root", "widgets.example.io");
    let binding = Api::<faros_core::kcp::apis::v1alpha2::APIBinding>::all(inner.clone())
        .get(&name)
        .await
        .unwrap();
    assert_eq!(
        binding.phase(),
        Some(&faros_core::kcp::apis::v1alpha2::APIBindingPhase::Bound)
    );
    // The export's claims are accepted with its default selector (kcp's default-binding initializer).
    let spec = serde_json::to_value(&binding.spec).unwrap();
    assert_eq!(
        spec["permissionClaims"],
        json!([{"resource": "configmaps", "verbs": ["get", "list"],
            "selector": {"matchLabels": {"tool": "yes"}}, "state": "Accepted"}])
    );
    // Ready means the bound resources are served.
    let widgets: Api<kube::api::DynamicObject> = Api::namespaced_with(inner, "default", &widgets());
    assert!(widgets.list(&Default::default()).await.unwrap().items.is_empty());
}

#[tokio::test]
async fn initializers_are_named_after_the_logical_cluster_of_the_types_workspace() {
    let t = start().await;
    let org = create_ready(&t, "root", "org", json!({})).await;
    let org_cluster = org.spec.cluster.clone().unwrap();
    let types: Api<WorkspaceType> = Api::all(t.client_as("root:org", "admin", t.server.admin_token()).await);
    types
        .create(
            &PostParams::default(),
            &wstype(
                "gated",
                json!({"initializer": true, "extend": {"with": [{"name": "universal", "path": "root"}]}}),
            ),
        )
        .await
        .unwrap();
    let in_org: Api<Workspace> = Api::all(t.client_as("root:org", "admin", t.server.admin_token()).await);
    in_org
        .create(
            &PostParams::default(),
            &ws("g", json!({"type": {"name": "gated", "path": "root:org"}})),
        )
        .await
        .unwrap();
    // kcp: `<logical cluster name>:<type name>`, not `root:org:gated`.
    let want = format!("{org_cluster}:gated");
    let held = wait_for(
        in_org,
        "g",
        |w| {
            w.and_then(|w| w.status.as_ref())
                .and_then(|s| s.initializers.clone())
                .is_some_and(|i| i.contains(&want))
        },
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(phase(&held).as_deref(), Some("Initializing"));
    let lcs: Api<LogicalCluster> = Api::all(t.client_as("root:org:g", "admin", t.server.admin_token()).await);
    let lc = lcs.get("cluster").await.unwrap();
    assert!(lc.spec.initializers.unwrap().contains(&want));
}

#[tokio::test]
async fn maintained_default_bindings_follow_new_export_claims() {
    use common::kcp::publish_widgets;
    use faros_core::kcp::apis::v1alpha2::{APIBinding, APIExport};
    let t = start().await;
    let root = t.admin().await;
    publish_widgets(&root, "widgets.example.io", json!([])).await;
    let types: Api<WorkspaceType> = Api::all(root.clone());
    for (name, lifecycle) in [("kept", "Maintain"), ("once", "InitializeOnly")] {
        types
            .create(
                &PostParams::default(),
                &wstype(
                    name,
                    json!({"extend": {"with": [{"name": "universal", "path": "root"}]},
                           "defaultAPIBindings": [{"path": "root", "export": "widgets.example.io"}],
                           "defaultAPIBindingLifecycle": lifecycle}),
                ),
            )
            .await
            .unwrap();
    }
    let kept = create_ready(&t, "root", "k", json!({"type": {"name": "kept"}})).await;
    let once = create_ready(&t, "root", "o", json!({"type": {"name": "once"}})).await;
    // The export claims configmaps after both workspaces were initialized.
    let exports: Api<APIExport> = Api::all(root);
    exports
        .patch(
            "widgets.example.io",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"permissionClaims": [
                {"group": "", "resource": "configmaps", "verbs": ["get"]}]}})),
        )
        .await
        .unwrap();
    let claims_of = |b: &APIBinding| serde_json::to_value(&b.spec).unwrap()["permissionClaims"].clone();
    let kept_bindings: Api<APIBinding> = Api::all(t.client_as("root:k", "admin", t.server.admin_token()).await);
    let name = names::default_binding_name(kept.spec.cluster.as_deref().unwrap(), "root", "widgets.example.io");
    let want =
        json!([{"resource": "configmaps", "verbs": ["get"], "selector": {"matchAll": true}, "state": "Accepted"}]);
    wait_for(kept_bindings, &name, |b| b.is_some_and(|b| claims_of(b) == want), WAIT)
        .await
        .unwrap();
    // InitializeOnly: the binding stays as the initializer made it.
    let once_bindings: Api<APIBinding> = Api::all(t.client_as("root:o", "admin", t.server.admin_token()).await);
    let name = names::default_binding_name(once.spec.cluster.as_deref().unwrap(), "root", "widgets.example.io");
    let b = once_bindings.get(&name).await.unwrap();
    assert!(
        claims_of(&b).as_array().is_none_or(|c| c.is_empty()),
        "{:?}",
        claims_of(&b)
    );
}

#[tokio::test]
async fn deleting_a_workspace_waits_for_finalizers_inside_it() {
    let t = start().await;
    let w = create_ready(&t, "root", "fin", json!({})).await;
    let cluster = w.spec.cluster.clone().unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(
        t.client_as("root:fin", "admin", t.server.admin_token()).await,
        "default",
    );
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "held", "finalizers": ["tenancy.kcp.io/test-finalizer"]}}))
            .unwrap(),
    )
    .await
    .unwrap();
    let root_ws: Api<Workspace> = Api::all(t.admin().await);
    root_ws.delete("fin", &DeleteParams::default()).await.unwrap();
    // The workspace stays, saying what it waits for; the content is marked for deletion.
    let waiting = wait_for(
        root_ws.clone(),
        "fin",
        |w| {
            w.and_then(|w| w.status.as_ref())
                .and_then(|s| s.conditions.as_deref())
                .and_then(|c| c.iter().find(|c| c.type_ == "WorkspaceContentDeleted"))
                .is_some_and(|c| c.status.to_string() == "False")
        },
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    let cond = waiting
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "WorkspaceContentDeleted")
        .unwrap();
    assert_eq!(cond.reason.as_deref(), Some("SomeResourcesRemain"));
    assert_eq!(
        cond.message.as_deref(),
        Some(
            "Some content in the logical cluster has finalizers remaining: tenancy.kcp.io/test-finalizer in 1 resource instances"
        )
    );
    let held = cms.get("held").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    // Its owner removes the finalizer: then the workspace and everything in it go.
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    wait_for(root_ws, "fin", |w| w.is_none(), WAIT).await.unwrap();
    assert_eq!(t.server.stored_keys(&cluster).unwrap(), vec![]);
}

#[tokio::test]
async fn inactive_logical_clusters_refuse_requests_but_can_be_reactivated() {
    let t = start().await;
    create_ready(&t, "root", "sleepy", json!({})).await;
    let client = t.client_as("root:sleepy", "admin", t.server.admin_token()).await;
    let lcs: Api<LogicalCluster> = Api::all(client.clone());
    let mark = |value: serde_json::Value| {
        let lcs = lcs.clone();
        async move {
            lcs.patch(
                "cluster",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"annotations": {"core.kcp.io/inactive": value}}})),
            )
            .await
            .unwrap()
        }
    };
    let lc = mark(json!("true")).await;
    let name = lc.metadata.annotations.unwrap()["kcp.io/cluster"].clone();
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    // Everyone is refused, the admin too.
    let err = api_err(cms.list(&Default::default()).await.unwrap_err());
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        format!("logicalclusters.core.kcp.io \"{name}\" is forbidden: logical cluster is marked inactive")
    );
    // The LogicalCluster itself stays reachable, so it can be reactivated.
    mark(serde_json::Value::Null).await;
    cms.list(&Default::default()).await.unwrap();
}

/// kcp's `system:apibindings` initializer binds a workspace's default APIs as its creator: one who
/// may `use` a type but not `bind` an export it names gets no binding, and the workspace stays
/// Initializing with `APIBindingsInitialized=False` on its LogicalCluster saying why.
#[tokio::test]
async fn default_bindings_are_made_as_the_creator() {
    let t = start().await;
    let types: Api<WorkspaceType> = Api::all(t.admin().await);
    types
        .create(
            &PostParams::default(),
            &wstype(
                "guarded",
                json!({"extend": {"with": [{"name": "universal", "path": "root"}]},
                       "defaultAPIBindings": [{"path": "root", "export": "widgets.example.io"}]}),
            ),
        )
        .await
        .unwrap();
    common::kcp::grant(
        t.admin().await,
        "guarded-creator",
        "alice",
        json!([{"apiGroups": ["tenancy.kcp.io"], "resources": ["workspaces"], "verbs": ["create", "get"]},
               {"apiGroups": ["tenancy.kcp.io"], "resources": ["workspacetypes"], "resourceNames": ["guarded"], "verbs": ["use"]}]),
    )
    .await;
    let alice_ws: Api<Workspace> = Api::all(t.alice().await);
    alice_ws
        .create(
            &PostParams::default(),
            &ws("gw", json!({"type": {"name": "guarded", "path": "root"}})),
        )
        .await
        .unwrap();
    let scheduled = wait_for(
        alice_ws.clone(),
        "gw",
        |w| w.and_then(|w| w.spec.cluster.as_ref()).is_some(),
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    let cluster = scheduled.spec.cluster.clone().unwrap();
    let inner = t.client_as(&cluster, "admin", t.server.admin_token()).await;
    let lcs: Api<kube::api::DynamicObject> = Api::all_with(
        inner.clone(),
        &common::kcp::ar("core.kcp.io", "v1alpha1", "LogicalCluster", "logicalclusters"),
    );
    let refused = |lc: &kube::api::DynamicObject| {
        lc.data["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "APIBindingsInitialized")
            .cloned()
    };
    let lc = wait_for(lcs, "cluster", |lc| lc.and_then(refused).is_some(), WAIT)
        .await
        .unwrap()
        .unwrap();
    let cond = refused(&lc).unwrap();
    assert_eq!(
        (&cond["status"], &cond["reason"], &cond["severity"]),
        (&json!("False"), &json!("APIBindingErrors"), &json!("Error"))
    );
    let widgets = names::default_binding_name(&cluster, "root", "widgets.example.io");
    assert_eq!(
        cond["message"],
        format!(
            "encountered errors: apibindings.apis.kcp.io \"{widgets}\" is forbidden: unable to create APIBinding: no permission to bind to export root:widgets.example.io"
        )
    );
    // The exports alice may bind (every authenticated user may bind root's tenancy and topology)
    // are bound; the one she may not is not, and the workspace does not become Ready.
    let bindings: Api<faros_core::kcp::apis::v1alpha2::APIBinding> = Api::all(inner);
    let mut listed: Vec<String> = bindings
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|b| b.metadata.name)
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            names::default_binding_name(&cluster, "root", "tenancy.kcp.io"),
            names::default_binding_name(&cluster, "root", "topology.kcp.io"),
        ]
    );
    let gw = alice_ws.get("gw").await.unwrap();
    assert_eq!(phase(&gw).as_deref(), Some("Initializing"));
}

/// kcp trims the creator annotation once a workspace is Ready, in a reconcile after the one that
/// made it Ready, and so does the embedded kcp. No state in between may show a trimmed
/// creator on a workspace that is not Ready yet, nor a Ready workspace whose initialization
/// condition went back to False (the kcp diff's waits on the trimmed creator rely on both).
#[tokio::test]
async fn the_creator_is_trimmed_only_with_ready() {
    let t = start().await;
    let_alice_create_workspaces(&t).await;
    let admin = t.admin().await;
    let api: Api<Workspace> = Api::all(admin);
    let rv = api
        .list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut events = api.watch(&WatchParams::default(), &rv).await.unwrap().boxed();
    let alice: Api<Workspace> = Api::all(t.alice().await);
    const N: usize = 8;
    for i in 0..N {
        let spec = json!({"type": {"name": "universal", "path": "root"}});
        alice
            .create(&PostParams::default(), &ws(&format!("t{i}"), spec))
            .await
            .unwrap();
    }
    let (mut ready, mut settled) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
    tokio::time::timeout(WAIT, async {
        while settled.len() < N {
            let w = match events.next().await.expect("the watch goes on").unwrap() {
                WatchEvent::Added(w) | WatchEvent::Modified(w) => w,
                WatchEvent::Bookmark(_) => continue,
                other => panic!("unexpected event {other:?}"),
            };
            let name = w.metadata.name.clone().unwrap();
            let owner = w
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("experimental.tenancy.kcp.io/owner").cloned());
            let label = w
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("tenancy.kcp.io/phase").cloned());
            let status = serde_json::to_value(w.status.as_ref()).unwrap();
            let initialized = status["conditions"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["type"] == "WorkspaceInitialized"))
                .cloned()
                .unwrap_or_default();
            let trimmed = owner.as_deref() == Some(r#"{"username":"alice"}"#);
            let state = format!(
                "{name}: phase {:?}, label {label:?}, owner {owner:?}, WorkspaceInitialized {initialized}",
                phase(&w)
            );
            if w.is_ready() {
                assert_eq!(initialized["status"], "True", "{state}");
                assert!(initialized.get("message").is_none(), "{state}");
                ready.insert(name.clone());
            } else {
                assert!(!trimmed, "the creator trimmed before Ready: {state}");
                assert!(!ready.contains(&name), "a Ready workspace went back: {state}");
            }
            if trimmed && label.as_deref() == Some("Ready") {
                settled.insert(name);
            }
        }
    })
    .await
    .expect("every workspace became Ready with its metadata");
}
