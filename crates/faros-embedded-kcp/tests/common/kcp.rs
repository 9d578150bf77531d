//! Shared kcp fixtures: logical clusters, grants, APIResourceSchemas, APIExports and APIBindings.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use faros_core::kcp::apis::v1alpha2;
use faros_core::wait::wait_for;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::TestServer;

pub const WAIT: Duration = Duration::from_secs(20);

pub fn ar(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

pub fn widgets() -> ApiResource {
    ar("example.io", "v1", "Widget", "widgets")
}

pub fn dynamic(v: Value) -> DynamicObject {
    serde_json::from_value(v).unwrap()
}

pub async fn start() -> TestServer {
    TestServer::start().await
}

pub async fn admin_in(t: &TestServer, cluster: &str) -> kube::Client {
    t.client_as(cluster, "admin", &t.admin_token()).await
}

/// Makes logical cluster `name` (path `root:<name>`) exist and serve, with namespace `default`.
pub async fn make_cluster(t: &TestServer, name: &str) {
    let client = admin_in(t, name).await;
    let lcs: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ar("core.kcp.io", "v1alpha1", "LogicalCluster", "logicalclusters"),
    );
    lcs.create(
        &PostParams::default(),
        &dynamic(json!({"apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster",
            "metadata": {"name": "cluster", "annotations": {"kcp.io/path": format!("root:{name}")}}, "spec": {}})),
    )
    .await
    .unwrap();
    lcs.patch_status(
        "cluster",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Ready"}})),
    )
    .await
    .unwrap();
    let ns: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client);
    let _ = ns
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap(),
        )
        .await;
}

/// A ClusterRole + binding for `user` in the cluster `client` points at.
pub async fn grant(client: kube::Client, name: &str, user: &str, rules: Value) {
    grant_to(client, name, ("User", user), rules).await;
}

/// A ClusterRole + binding for a `("User" | "Group", name)` subject in the cluster `client`
/// points at.
pub async fn grant_to(client: kube::Client, name: &str, subject: (&str, &str), rules: Value) {
    let roles: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ar("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles"),
    );
    roles
        .create(
            &PostParams::default(),
            &dynamic(
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": name}, "rules": rules}),
            ),
        )
        .await
        .unwrap();
    bind_cluster_role(client, name, name, subject).await;
}

/// ClusterRoleBinding `name` of ClusterRole `role` (one of the cluster's own or one of kcp's
/// global roles) to a `("User" | "Group", name)` subject, in the cluster `client` points at.
pub async fn bind_cluster_role(client: kube::Client, name: &str, role: &str, (kind, subject): (&str, &str)) {
    let bindings: Api<DynamicObject> = Api::all_with(
        client,
        &ar(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
        ),
    );
    bindings
        .create(
            &PostParams::default(),
            &dynamic(
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": subject}]}),
            ),
        )
        .await
        .unwrap();
}

pub fn widget_schema(name: &str, kind: &str, plural: &str) -> DynamicObject {
    dynamic(
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema", "metadata": {"name": name},
        "spec": {"group": "example.io", "scope": "Namespaced",
            "names": {"kind": kind, "listKind": format!("{kind}List"), "plural": plural, "singular": kind.to_lowercase()},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                "schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer", "minimum": 1},
                        "color": {"type": "string", "default": "blue"}}},
                    "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}}]}}),
    )
}

pub async fn create_schema(root: &kube::Client, schema: DynamicObject) {
    let schemas: Api<DynamicObject> = Api::all_with(
        root.clone(),
        &ar("apis.kcp.io", "v1alpha1", "APIResourceSchema", "apiresourceschemas"),
    );
    schemas.create(&PostParams::default(), &schema).await.unwrap();
}

/// The Widget schema (`v1.widgets.example.io`) and export `name` of it with `claims`, in `root`.
pub async fn publish_widgets(root: &kube::Client, name: &str, claims: Value) -> v1alpha2::APIExport {
    create_schema(root, widget_schema("v1.widgets.example.io", "Widget", "widgets")).await;
    create_export(root, name, "v1.widgets.example.io", claims).await
}

pub async fn create_export(root: &kube::Client, name: &str, schema: &str, claims: Value) -> v1alpha2::APIExport {
    let exports: Api<v1alpha2::APIExport> = Api::all(root.clone());
    exports
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
                "metadata": {"name": name},
                "spec": {"resources": [{"group": "example.io", "name": schema.split('.').nth(1).unwrap(),
                    "schema": schema, "storage": {"crd": {}}}],
                  "permissionClaims": claims}}))
            .unwrap(),
        )
        .await
        .unwrap();
    wait_for(exports, name, |e| e.is_some_and(|e| e.identity_hash().is_some()), WAIT)
        .await
        .unwrap()
        .unwrap()
}

pub fn binding(name: &str, path: &str, export: &str, claims: Value) -> v1alpha2::APIBinding {
    serde_json::from_value(json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
        "metadata": {"name": name},
        "spec": {"reference": {"export": {"path": path, "name": export}}, "permissionClaims": claims}}))
    .unwrap()
}

pub async fn wait_bound(api: &Api<v1alpha2::APIBinding>, name: &str) -> v1alpha2::APIBinding {
    wait_for(
        api.clone(),
        name,
        |b| b.is_some_and(|b| b.phase() == Some(&v1alpha2::APIBindingPhase::Bound)),
        WAIT,
    )
    .await
    .unwrap()
    .unwrap()
}
