//! kcp API rules from kcp's apibinding, apiexportendpointslice and workspacedeletion e2e tests:
//! an APIBinding's reference and an endpoint slice's export are immutable, a slice for an export
//! that does not exist (or may not be bound) is refused, and namespace `default` cannot be deleted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::kcp::*;
use common::{BOB_TOKEN, TestServer};
use faros_core::kcp::apis::{v1alpha1, v1alpha2};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use serde_json::json;

fn err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn slice(name: &str, path: &str, export: &str) -> DynamicObject {
    dynamic(
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExportEndpointSlice",
        "metadata": {"name": name}, "spec": {"export": {"path": path, "name": export}}}),
    )
}

#[tokio::test]
async fn binding_references_and_slice_exports_are_immutable_and_checked() {
    let t = TestServer::start().await;
    let root = t.admin().await;
    publish_widgets(&root, "widgets.example.io", json!([])).await;
    create_schema(&root, widget_schema("v1.gadgets.example.io", "Gadget", "gadgets")).await;
    let exports: Api<v1alpha2::APIExport> = Api::all(root.clone());
    exports
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
                "metadata": {"name": "gadgets"},
                "spec": {"resources": [{"group": "example.io", "name": "gadgets",
                    "schema": "v1.gadgets.example.io", "storage": {"crd": {}}}]}}))
            .unwrap(),
        )
        .await
        .unwrap();

    // APIBinding: spec.reference cannot change, whatever the caller may bind.
    make_cluster(&t, "c").await;
    let bindings: Api<v1alpha2::APIBinding> = Api::all(admin_in(&t, "c").await);
    bindings
        .create(
            &PostParams::default(),
            &binding("b", "root", "widgets.example.io", json!([])),
        )
        .await
        .unwrap();
    let mut b = wait_bound(&bindings, "b").await;
    b.spec.reference.export.as_mut().unwrap().name = "gadgets".into();
    let e = err(bindings.replace("b", &PostParams::default(), &b).await.unwrap_err());
    assert_eq!(e.code, 422);
    assert_eq!(
        e.message,
        "APIBinding.apis.kcp.io \"b\" is invalid: spec.reference: Invalid value: \"object\": APIExport reference must not be changed"
    );

    // Endpoint slices: a missing export (or workspace) is the same 403 as a missing permission.
    let slices: Api<DynamicObject> = Api::all_with(
        admin_in(&t, "c").await,
        &ar(
            "apis.kcp.io",
            "v1alpha1",
            "APIExportEndpointSlice",
            "apiexportendpointslices",
        ),
    );
    for (path, export) in [("root", "nope"), ("root:nowhere", "widgets.example.io")] {
        let e = err(slices
            .create(&PostParams::default(), &slice("s", path, export))
            .await
            .unwrap_err());
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            format!(
                "apiexportendpointslices.apis.kcp.io \"s\" is forbidden: unable to create APIExportEndpointSlice: no permission to bind to export {path}:{export}"
            )
        );
    }
    // bob may not bind in root (only the tenancy and topology exports are open to everyone).
    common::kcp::grant(
        admin_in(&t, "c").await,
        "bob-slices",
        "bob",
        json!([{"apiGroups": ["apis.kcp.io"], "resources": ["apiexportendpointslices"], "verbs": ["create"]},
               {"nonResourceURLs": ["/"], "verbs": ["access"]}]),
    )
    .await;
    let bob_slices: Api<DynamicObject> = Api::all_with(
        t.client_as("c", "bob", BOB_TOKEN).await,
        &ar(
            "apis.kcp.io",
            "v1alpha1",
            "APIExportEndpointSlice",
            "apiexportendpointslices",
        ),
    );
    let e = err(bob_slices
        .create(&PostParams::default(), &slice("bobs", "root", "widgets.example.io"))
        .await
        .unwrap_err());
    assert_eq!(e.code, 403, "{}", e.message);
    assert!(
        e.message
            .contains("no permission to bind to export root:widgets.example.io"),
        "{}",
        e.message
    );
    bob_slices
        .create(&PostParams::default(), &slice("bobs", "root", "tenancy.kcp.io"))
        .await
        .unwrap();
    // The admin may; the export reference is then immutable.
    slices
        .create(&PostParams::default(), &slice("s", "root", "widgets.example.io"))
        .await
        .unwrap();
    let typed: Api<v1alpha1::APIExportEndpointSlice> = Api::all(admin_in(&t, "c").await);
    let mut s = typed.get("s").await.unwrap();
    s.spec.export.name = "gadgets".into();
    let e = err(typed.replace("s", &PostParams::default(), &s).await.unwrap_err());
    assert_eq!(e.code, 422);
    assert!(
        e.message
            .ends_with("spec.export: Invalid value: \"object\": APIExport reference must not be changed"),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn namespace_default_cannot_be_deleted() {
    let t = TestServer::start().await;
    let namespaces: Api<Namespace> = Api::all(t.admin().await);
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "kube-system"}})).unwrap(),
        )
        .await
        .ok();
    for name in ["default", "kube-system"] {
        let e = err(namespaces.delete(name, &DeleteParams::default()).await.unwrap_err());
        assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
        assert_eq!(
            e.message,
            format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
        );
        assert!(
            namespaces
                .get(name)
                .await
                .unwrap()
                .metadata
                .deletion_timestamp
                .is_none()
        );
    }
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "mortal"}})).unwrap(),
        )
        .await
        .unwrap();
    namespaces.delete("mortal", &DeleteParams::default()).await.unwrap();
}

#[tokio::test]
async fn an_export_reacts_when_its_identity_secret_appears() {
    let t = TestServer::start().await;
    let root = t.admin().await;
    create_schema(&root, widget_schema("v1.widgets.example.io", "Widget", "widgets")).await;
    let exports: Api<v1alpha2::APIExport> = Api::all(root.clone());
    exports
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
                "metadata": {"name": "late"},
                "spec": {"identity": {"secretRef": {"namespace": "default", "name": "late-identity"}},
                    "resources": [{"group": "example.io", "name": "widgets",
                        "schema": "v1.widgets.example.io", "storage": {"crd": {}}}]}}))
            .unwrap(),
        )
        .await
        .unwrap();
    let identity_valid = |e: &v1alpha2::APIExport| {
        e.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "IdentityValid"))
            .map(|c| c.status.to_string())
    };
    let waiting = faros_core::wait::wait_for(
        exports.clone(),
        "late",
        |e| e.is_some_and(|e| identity_valid(e).as_deref() == Some("False")),
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    assert!(waiting.identity_hash().is_none());
    // The Secret appears; nothing touches the export, yet it becomes valid with the key's hash.
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(root, "default");
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": "late-identity"}, "stringData": {"key": "s3cret-identity"}}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let valid = faros_core::wait::wait_for(
        exports,
        "late",
        |e| e.is_some_and(|e| identity_valid(e).as_deref() == Some("True")),
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    assert!(
        valid.identity_hash().is_some_and(|h| h.len() == 64),
        "{:?}",
        valid.identity_hash()
    );
}

#[tokio::test]
async fn default_api_bindings_of_a_workspace_type_need_bind_on_the_export() {
    use faros_core::kcp::{Workspace, WorkspaceType};
    let t = TestServer::start().await;
    let root = t.admin().await;
    publish_widgets(&root, "widgets.example.io", json!([])).await;
    // bob administers workspace root:tenant.
    let workspaces: Api<Workspace> = Api::all(root.clone());
    workspaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "tenant"}, "spec": {}})).unwrap(),
        )
        .await
        .unwrap();
    faros_core::wait::wait_for(workspaces, "tenant", |w| w.is_some_and(Workspace::is_ready), WAIT)
        .await
        .unwrap();
    common::kcp::grant(
        t.client_as("root:tenant", "admin", &t.admin_token()).await,
        "bob-admin",
        "bob",
        json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
    )
    .await;
    let types: Api<WorkspaceType> = Api::all(t.client_as("root:tenant", "bob", BOB_TOKEN).await);
    let wt = |name: &str, bindings: serde_json::Value| -> WorkspaceType {
        serde_json::from_value(json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType",
            "metadata": {"name": name},
            "spec": {"extend": {"with": [{"name": "universal", "path": "root"}]}, "defaultAPIBindings": bindings}}))
        .unwrap()
    };
    let widgets = json!([{"path": "root", "export": "widgets.example.io"}]);
    let e = err(types
        .create(&PostParams::default(), &wt("bad", widgets.clone()))
        .await
        .unwrap_err());
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "workspacetypes.tenancy.kcp.io \"bad\" is forbidden: unable to create or update WorkspaceType: no permission to bind to export root:widgets.example.io"
    );
    // Adding it later is checked too; root's tenancy export is bindable by everyone.
    let mut later = types
        .create(
            &PostParams::default(),
            &wt("later", json!([{"path": "root", "export": "tenancy.kcp.io"}])),
        )
        .await
        .unwrap();
    later.spec.default_api_bindings = serde_json::from_value(json!([
        {"path": "root", "export": "tenancy.kcp.io"}, {"path": "root", "export": "widgets.example.io"}]))
    .unwrap();
    assert_eq!(
        err(types
            .replace("later", &PostParams::default(), &later)
            .await
            .unwrap_err())
        .code,
        403
    );
    // With bind on the export, both go through.
    common::kcp::grant(
        root,
        "bob-binds-widgets",
        "bob",
        json!([{"apiGroups": ["apis.kcp.io"], "resources": ["apiexports"], "resourceNames": ["widgets.example.io"], "verbs": ["bind"]}]),
    )
    .await;
    types.create(&PostParams::default(), &wt("bad", widgets)).await.unwrap();
    let mut current = types.get("later").await.unwrap();
    current.spec.default_api_bindings = later.spec.default_api_bindings.clone();
    types.replace("later", &PostParams::default(), &current).await.unwrap();
}
