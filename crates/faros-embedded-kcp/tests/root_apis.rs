//! Root's default APIs, as kcp's workspace and workspacetype e2e tests see them: root exports
//! `tenancy.kcp.io` and `topology.kcp.io`, universal workspaces bind both by default, and a
//! workspace whose type does not extend universal has no tenancy API (it cannot create
//! workspaces) until someone binds it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::TestServer;
use common::kcp::{WAIT, ar, binding, dynamic, wait_bound};
use faros_core::kcp::apis::v1alpha2::{APIBinding, APIExport};
use faros_core::kcp::{Workspace, WorkspaceType};
use faros_core::wait::wait_for;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::json;

fn ws(name: &str, spec: serde_json::Value) -> Workspace {
    serde_json::from_value(json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
        "metadata": {"name": name}, "spec": spec}))
    .unwrap()
}

async fn create_ready(t: &TestServer, parent: &str, name: &str, spec: serde_json::Value) -> Workspace {
    let api: Api<Workspace> = Api::all(t.client_as(parent, "admin", t.server.admin_token()).await);
    api.create(&PostParams::default(), &ws(name, spec)).await.unwrap();
    wait_for(api, name, |w| w.is_some_and(Workspace::is_ready), WAIT)
        .await
        .unwrap()
        .unwrap()
}

async fn get_status(t: &TestServer, path: &str) -> u16 {
    t.http()
        .get(t.url(path))
        .bearer_auth(t.admin_token())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn root_exports_tenancy_and_topology_and_universal_workspaces_bind_them() {
    let t = TestServer::start().await;
    let exports: Api<APIExport> = Api::all(t.admin().await);
    for name in ["tenancy.kcp.io", "topology.kcp.io"] {
        wait_for(
            exports.clone(),
            name,
            |e| e.is_some_and(|e| e.identity_hash().is_some()),
            WAIT,
        )
        .await
        .unwrap();
    }
    assert_eq!(get_status(&t, "/apis/topology.kcp.io/v1alpha1/partitions").await, 200);

    let made = create_ready(&t, "root", "uni", json!({})).await;
    let cluster = made.spec.cluster.clone().unwrap();
    // Ready only once both default bindings are bound, named like kcp names them.
    let bindings: Api<APIBinding> = Api::all(t.client_as("root:uni", "admin", t.server.admin_token()).await);
    for export in ["tenancy.kcp.io", "topology.kcp.io"] {
        let name = faros_embedded_kcp::names::default_binding_name(&cluster, "root", export);
        let b = wait_bound(&bindings, &name).await;
        let reference = b.spec.reference.export.unwrap();
        assert_eq!(
            (reference.path.as_deref(), reference.name.as_str()),
            (Some("root"), export)
        );
    }
    // The bound tenancy API works: nested workspaces, `kubectl get ws`, partitions.
    create_ready(&t, "root:uni", "child", json!({})).await;
    assert_eq!(
        get_status(&t, "/clusters/root:uni/apis/topology.kcp.io/v1alpha1/partitions").await,
        200
    );
    let types: Api<WorkspaceType> = Api::all(t.client_as("root:uni", "admin", t.server.admin_token()).await);
    assert!(types.list(&Default::default()).await.unwrap().items.is_empty());
}

#[tokio::test]
async fn a_type_not_extending_universal_has_no_tenancy_api() {
    let t = TestServer::start().await;
    let types: Api<WorkspaceType> = Api::all(t.admin().await);
    types
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType",
                "metadata": {"name": "plain"}, "spec": {}}))
            .unwrap(),
        )
        .await
        .unwrap();
    create_ready(&t, "root", "p", json!({"type": {"name": "plain", "path": "root"}})).await;

    // Not in discovery, not served: kcp's 404s.
    assert_eq!(get_status(&t, "/clusters/root:p/apis/tenancy.kcp.io").await, 404);
    assert_eq!(
        get_status(&t, "/clusters/root:p/apis/tenancy.kcp.io/v1alpha1/workspaces").await,
        404
    );
    let groups: serde_json::Value = t
        .http()
        .get(t.url("/clusters/root:p/apis"))
        .bearer_auth(t.admin_token())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert!(
        names.contains(&"apis.kcp.io") && names.contains(&"core.kcp.io"),
        "{names:?}"
    );
    assert!(
        !names.contains(&"tenancy.kcp.io") && !names.contains(&"topology.kcp.io"),
        "{names:?}"
    );
    let in_p: Api<Workspace> = Api::all(t.client_as("root:p", "admin", t.server.admin_token()).await);
    let err = match in_p.create(&PostParams::default(), &ws("nested", json!({}))).await {
        Err(kube::Error::Api(s)) => s,
        other => panic!("a workspace was created without the tenancy API: {other:?}"),
    };
    // kcp has no handler for a group it does not serve there: Go's plain-text 404, no Status.
    assert_eq!(err.code, 404);
    assert_eq!(err.message.trim(), "404 page not found", "{err:?}");
    // No default bindings, and no universal namespaces either.
    let bindings: Api<APIBinding> = Api::all(t.client_as("root:p", "admin", t.server.admin_token()).await);
    assert!(bindings.list(&Default::default()).await.unwrap().items.is_empty());

    // kubectl agrees.
    let kubeconfig = t.dir.path().join("p.kubeconfig");
    std::fs::write(&kubeconfig, t.server.kubeconfig("root:p", "admin", &t.admin_token())).unwrap();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("kubectl")
            .args(["--kubeconfig", kubeconfig.to_str().unwrap(), "get", "workspaces"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the server doesn't have a resource type \"workspaces\""),
        "{stderr}"
    );

    // Any authenticated user may bind root's tenancy export; then the API is there.
    bindings
        .create(
            &PostParams::default(),
            &binding("tenancy", "root", "tenancy.kcp.io", json!([])),
        )
        .await
        .unwrap();
    wait_bound(&bindings, "tenancy").await;
    let nested: Api<DynamicObject> = Api::all_with(
        t.client_as("root:p", "admin", t.server.admin_token()).await,
        &ar("tenancy.kcp.io", "v1alpha1", "Workspace", "workspaces"),
    );
    nested
        .create(
            &PostParams::default(),
            &dynamic(json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
                "metadata": {"name": "nested"}, "spec": {"type": {"name": "universal", "path": "root"}}})),
        )
        .await
        .unwrap();
    create_ready(
        &t,
        "root:p",
        "second",
        json!({"type": {"name": "universal", "path": "root"}}),
    )
    .await;
}
