//! The APIExport virtual workspace through real kube-rs clients: wildcard list and watch across bound
//! workspaces, per-tenant writes, claimed resources with selectors and verbs, and authorization.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

mod common;

use common::kcp::*;
use common::{TestServer, USER_TOKEN};
use faros_core::kcp::apis::{v1alpha1, v1alpha2};
use faros_core::wait::wait_for;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

const EXPORT: &str = "widgets.example.io";

fn widget(name: &str, size: i64) -> DynamicObject {
    dynamic(
        json!({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": name, "namespace": "default"}, "spec": {"size": size}}),
    )
}

fn cm(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}})).unwrap()
}

/// A kube client for the export's virtual workspace scoped to `cluster` (`*` = all).
async fn vw_client(t: &TestServer, url: &str, cluster: &str, user: &str, token: &str) -> kube::Client {
    let yaml = t.server.kubeconfig("root", user, token).replace(
        &format!("{}/clusters/root", t.server.url()),
        &format!("{url}/clusters/{cluster}"),
    );
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    kube::Client::try_from(
        kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap(),
    )
    .unwrap()
}

#[tokio::test]
async fn wildcard_views_tenant_writes_claims_and_authorization() {
    let t = start().await;
    let root = t.admin().await;
    create_schema(&root, widget_schema("v1.widgets.example.io", "Widget", "widgets")).await;
    let claims = json!([{"group": "", "resource": "configmaps", "verbs": ["get", "list", "watch"]}]);
    create_export(&root, EXPORT, "v1.widgets.example.io", claims).await;
    for (cluster, state) in [("t1", "Accepted"), ("t2", "Rejected")] {
        make_cluster(&t, cluster).await;
        let api: Api<v1alpha2::APIBinding> = Api::all(admin_in(&t, cluster).await);
        let accepted = json!([{"group": "", "resource": "configmaps", "verbs": ["get", "list", "watch", "delete"],
            "selector": {"matchLabels": {"shared": "yes"}}, "state": state}]);
        api.create(&PostParams::default(), &binding("widgets", "root", EXPORT, accepted))
            .await
            .unwrap();
        wait_bound(&api, "widgets").await;
    }
    make_cluster(&t, "t3").await;
    let slices: Api<v1alpha1::APIExportEndpointSlice> = Api::all(root.clone());
    let slice = wait_for(slices, EXPORT, |s| s.is_some_and(|s| !s.urls().is_empty()), WAIT)
        .await
        .unwrap()
        .unwrap();
    let url = slice.urls()[0].to_string();
    assert_eq!(url, format!("{}/services/apiexport/root/{EXPORT}", t.server.url()));

    // Tenants create widgets and configmaps in their own workspaces.
    for cluster in ["t1", "t2"] {
        let client = admin_in(&t, cluster).await;
        let w: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &widgets());
        w.create(&PostParams::default(), &widget(&format!("w-{cluster}"), 1))
            .await
            .unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(client, "default");
        cms.create(&PostParams::default(), &cm("shared", json!({"shared": "yes"})))
            .await
            .unwrap();
        cms.create(&PostParams::default(), &cm("private", json!({})))
            .await
            .unwrap();
    }

    // The provider (admin of the export's workspace) sees every bound tenant's widgets at once.
    let all = vw_client(&t, &url, "*", "admin", &t.admin_token()).await;
    let all_widgets: Api<DynamicObject> = Api::all_with(all.clone(), &widgets());
    let listed = all_widgets.list(&ListParams::default()).await.unwrap();
    let mut seen: Vec<(String, String)> = listed
        .items
        .iter()
        .map(|o| (o.annotations()["kcp.io/cluster"].clone(), o.name_any()))
        .collect();
    seen.sort();
    assert_eq!(seen, [("t1".into(), "w-t1".into()), ("t2".into(), "w-t2".into())]);

    // A wildcard watch delivers a new tenant object.
    let rv = listed.metadata.resource_version.clone().unwrap();
    let mut events = all_widgets
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    let t1 = vw_client(&t, &url, "t1", "admin", &t.admin_token()).await;
    let t1_widgets: Api<DynamicObject> = Api::namespaced_with(t1.clone(), "default", &widgets());
    t1_widgets
        .create(&PostParams::default(), &widget("via-vw", 2))
        .await
        .unwrap();
    match events.try_next().await.unwrap().unwrap() {
        WatchEvent::Added(o) => {
            assert_eq!(o.name_any(), "via-vw");
            assert_eq!(o.annotations()["kcp.io/cluster"], "t1");
        }
        other => panic!("expected ADDED, got {other:?}"),
    }
    // The write through the virtual workspace landed in t1 itself.
    let direct: Api<DynamicObject> = Api::namespaced_with(admin_in(&t, "t1").await, "default", &widgets());
    assert_eq!(direct.get("via-vw").await.unwrap().data["spec"]["size"], 2);

    // A workspace without a binding is out of reach.
    let t3 = vw_client(&t, &url, "t3", "admin", &t.admin_token()).await;
    let t3_widgets: Api<DynamicObject> = Api::namespaced_with(t3, "default", &widgets());
    let err = t3_widgets
        .create(&PostParams::default(), &widget("nope", 1))
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 403), "{err:?}");

    // Claims: only t1 accepted, and only objects matching the selector are visible.
    let all_cms: Api<ConfigMap> = Api::all(all.clone());
    let mut visible: Vec<(String, String)> = all_cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| (c.annotations()["kcp.io/cluster"].clone(), c.name_any()))
        .collect();
    visible.sort();
    assert_eq!(visible, [("t1".to_string(), "shared".to_string())]);
    let t1_cms: Api<ConfigMap> = Api::namespaced(t1.clone(), "default");
    assert!(t1_cms.get("shared").await.is_ok());
    assert!(matches!(t1_cms.get("private").await.unwrap_err(), kube::Error::Api(ref s) if s.code == 404));
    // Verb intersection: the export claims get/list/watch; t1 also "accepted" delete, which is not effective.
    let err = t1_cms.delete("shared", &Default::default()).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(ref s) if s.code == 403), "{err:?}");
    let t2 = vw_client(&t, &url, "t2", "admin", &t.admin_token()).await;
    let t2_cms: Api<ConfigMap> = Api::namespaced(t2, "default");
    // t2 rejected the claim: as in kcp, its configmaps are served but none is visible.
    assert!(matches!(t2_cms.get("shared").await.unwrap_err(), kube::Error::Api(ref s) if s.code == 404));
    assert!(t2_cms.list(&ListParams::default()).await.unwrap().items.is_empty());

    // Discovery of the virtual workspace lists the exported and the claimed resources.
    let discovery = kube::Discovery::new(t1).run().await.unwrap();
    let groups: Vec<String> = discovery.groups().map(|g| g.name().to_string()).collect();
    assert!(
        groups.contains(&"example.io".to_string()) && groups.contains(&String::new()),
        "{groups:?}"
    );

    // Someone without apiexports/content in the export's workspace gets kcp's 403, worded for
    // the request.
    let alice = vw_client(&t, &url, "*", "alice", USER_TOKEN).await;
    let err = Api::<DynamicObject>::all_with(alice, &widgets())
        .list(&ListParams::default())
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 403);
            assert_eq!(
                s.message,
                "widgets.example.io is forbidden: User \"alice\" cannot list resource \"widgets\" in API group \"example.io\" at the cluster scope: access denied"
            );
        }
        other => panic!("expected 403, got {other:?}"),
    }
}
