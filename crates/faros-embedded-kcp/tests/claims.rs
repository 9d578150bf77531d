//! Permission claims in the APIExport virtual workspace, as kcp's virtual/apiexport e2e tests
//! expect: an accepted selector governs writes too (its matchLabels are stamped on creates, creates
//! and label edits outside it are refused, deletes and deletecollection reach only objects inside
//! it); claimed resources are served before any consumer accepted; an accepted `apibindings`
//! claim shows the consumer's bindings.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::TestServer;
use common::kcp::*;
use faros_core::kcp::apis::v1alpha2;
use futures::TryStreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use serde_json::json;

const EXPORT: &str = "widgets.example.io";

async fn vw_client(t: &TestServer, url: &str, cluster: &str) -> kube::Client {
    let yaml = t.server.kubeconfig("root", "admin", &t.admin_token()).replace(
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

fn labelled<K: serde::de::DeserializeOwned>(name: &str, labels: serde_json::Value) -> K {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
}

fn code(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Workspace `cluster`, bound to the export as `widgets` without accepting a claim; its bindings.
async fn bound_without_claims(t: &TestServer, cluster: &str) -> Api<v1alpha2::APIBinding> {
    make_cluster(t, cluster).await;
    let bindings: Api<v1alpha2::APIBinding> = Api::all(admin_in(t, cluster).await);
    bindings
        .create(&PostParams::default(), &binding("widgets", "root", EXPORT, json!([])))
        .await
        .unwrap();
    wait_bound(&bindings, "widgets").await;
    bindings
}

/// The export in root with `claims`; returns its virtual workspace URL.
async fn setup(t: &TestServer, claims: serde_json::Value) -> String {
    let root = t.admin().await;
    publish_widgets(&root, EXPORT, claims).await;
    format!("{}/services/apiexport/root/{EXPORT}", t.server.url())
}

#[tokio::test]
async fn accepted_selectors_govern_writes() {
    let t = TestServer::start().await;
    let all_verbs = json!([
        "get",
        "list",
        "watch",
        "create",
        "update",
        "patch",
        "delete",
        "deletecollection"
    ]);
    let url = setup(
        &t,
        json!([{"group": "", "resource": "configmaps", "verbs": all_verbs},
               {"group": "", "resource": "secrets", "verbs": all_verbs}]),
    )
    .await;
    make_cluster(&t, "c").await;
    let bindings: Api<v1alpha2::APIBinding> = Api::all(admin_in(&t, "c").await);
    bindings
        .create(
            &PostParams::default(),
            &binding(
                "widgets",
                "root",
                EXPORT,
                json!([
                    {"group": "", "resource": "configmaps", "verbs": all_verbs, "state": "Accepted",
                     "selector": {"matchLabels": {"test": "test"}}},
                    {"group": "", "resource": "secrets", "verbs": all_verbs, "state": "Accepted",
                     "selector": {"matchExpressions": [{"key": "test", "operator": "In", "values": ["test1", "test2"]}]}}]),
            ),
        )
        .await
        .unwrap();
    wait_bound(&bindings, "widgets").await;
    let tenant = admin_in(&t, "c").await;
    let tenant_cms: Api<ConfigMap> = Api::namespaced(tenant.clone(), "default");
    tenant_cms
        .create(&PostParams::default(), &labelled("cm1", json!({"env": "random1"})))
        .await
        .unwrap();
    tenant_cms
        .create(
            &PostParams::default(),
            &labelled("cm2", json!({"test": "test", "env": "random2"})),
        )
        .await
        .unwrap();
    let tenant_secrets: Api<Secret> = Api::namespaced(tenant, "default");
    tenant_secrets
        .create(
            &PostParams::default(),
            &labelled("s1", json!({"test": "test", "env": "random1"})),
        )
        .await
        .unwrap();
    tenant_secrets
        .create(&PostParams::default(), &labelled("s2", json!({"test": "test1"})))
        .await
        .unwrap();

    let vw = vw_client(&t, &url, "c").await;
    let cms: Api<ConfigMap> = Api::namespaced(vw.clone(), "default");
    let names: Vec<String> = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| c.name_any())
        .collect();
    assert_eq!(names, ["cm2"]);

    // A create without the selector's labels gets them stamped on.
    let created = cms
        .create(&PostParams::default(), &labelled("cm3", json!(null)))
        .await
        .unwrap();
    assert_eq!(created.labels()["test"], "test");
    // A matchExpressions selector cannot be stamped: the object must match it itself.
    let secrets: Api<Secret> = Api::namespaced(vw.clone(), "default");
    let (status, message) = code(
        secrets
            .create(&PostParams::default(), &labelled("s4", json!({"env": "prod"})))
            .await
            .unwrap_err(),
    );
    assert_eq!(status, 403);
    assert_eq!(
        message,
        "secrets \"s4\" is forbidden: object does not match required labels"
    );
    secrets
        .create(&PostParams::default(), &labelled("s4", json!({"test": "test1"})))
        .await
        .unwrap();

    // Deletes reach only objects inside the selector.
    let (status, message) = code(cms.delete("cm1", &DeleteParams::default()).await.unwrap_err());
    assert_eq!(status, 403, "{message}");
    assert_eq!(
        message,
        "configmaps \"cm1\" is forbidden: object does not match required labels"
    );
    cms.delete("cm2", &DeleteParams::default()).await.unwrap();
    assert_eq!(
        code(secrets.delete("s1", &DeleteParams::default()).await.unwrap_err()).0,
        403
    );
    secrets.delete("s2", &DeleteParams::default()).await.unwrap();

    // Label edits: a new label is fine, a dropped selector label comes back, a changed one is refused.
    let mut cm3 = cms.get("cm3").await.unwrap();
    cm3.labels_mut().insert("tier".into(), "random1".into());
    let cm3 = cms.replace("cm3", &PostParams::default(), &cm3).await.unwrap();
    assert_eq!(cm3.labels()["tier"], "random1");
    let mut dropped = cm3.clone();
    dropped.labels_mut().remove("test");
    let cm3 = cms.replace("cm3", &PostParams::default(), &dropped).await.unwrap();
    assert_eq!(cm3.labels()["test"], "test");
    let mut changed = cm3.clone();
    changed.labels_mut().insert("test".into(), "test1".into());
    let (status, message) = code(cms.replace("cm3", &PostParams::default(), &changed).await.unwrap_err());
    assert_eq!(status, 403);
    assert_eq!(
        message,
        "configmaps \"cm3\" is forbidden: protected label test must have value test"
    );

    // deletecollection deletes what the selector covers and nothing else.
    cms.delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .unwrap();
    let mut left: Vec<String> = tenant_cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| c.name_any())
        .collect();
    left.sort();
    assert_eq!(left, ["cm1", "kube-root-ca.crt"]);
}

#[tokio::test]
async fn claimed_resources_are_served_before_acceptance_and_apibindings_claims_show_bindings() {
    let t = TestServer::start().await;
    let url = setup(
        &t,
        json!([{"group": "", "resource": "configmaps", "verbs": ["get", "list", "watch"]},
               {"group": "apis.kcp.io", "resource": "apibindings", "verbs": ["get", "list", "watch"]}]),
    )
    .await;
    // Bound without accepting anything.
    let bindings = bound_without_claims(&t, "c").await;
    let vw = vw_client(&t, &url, "c").await;
    let cms: Api<ConfigMap> = Api::namespaced(vw.clone(), "default");
    assert!(cms.list(&ListParams::default()).await.unwrap().items.is_empty());
    let all = vw_client(&t, &url, "*").await;
    assert!(
        Api::<ConfigMap>::all(all.clone())
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    // A tenant binding to another export: invisible until the apibindings claim is accepted.
    let root = t.admin().await;
    create_schema(&root, widget_schema("v1.gadgets.example.io", "Gadget", "gadgets")).await;
    let exports: Api<v1alpha2::APIExport> = Api::all(root);
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
    bindings
        .create(
            &PostParams::default(),
            &binding("gadgets", "root", "gadgets", json!([])),
        )
        .await
        .unwrap();
    wait_bound(&bindings, "gadgets").await;
    let vw_bindings: Api<DynamicObject> =
        Api::all_with(vw.clone(), &ar("apis.kcp.io", "v1alpha2", "APIBinding", "apibindings"));
    let names = |l: kube::core::ObjectList<DynamicObject>| {
        let mut n: Vec<String> = l.items.iter().map(|b| b.name_any()).collect();
        n.sort();
        n
    };
    assert_eq!(
        names(vw_bindings.list(&ListParams::default()).await.unwrap()),
        ["widgets"]
    );
    // v1alpha1 clients get the same bindings, converted.
    let v1alpha1_bindings: Api<DynamicObject> =
        Api::all_with(vw.clone(), &ar("apis.kcp.io", "v1alpha1", "APIBinding", "apibindings"));
    let old = v1alpha1_bindings.list(&ListParams::default()).await.unwrap();
    assert_eq!(old.items.len(), 1);
    assert_eq!(old.items[0].name_any(), "widgets");
    assert_eq!(old.items[0].types.as_ref().unwrap().api_version, "apis.kcp.io/v1alpha1");
    // Accept the apibindings claim: the tenant's other bindings appear.
    let mut b = bindings.get("widgets").await.unwrap();
    b.spec.permission_claims = serde_json::from_value(json!([
        {"group": "apis.kcp.io", "resource": "apibindings", "verbs": ["get", "list", "watch"],
         "selector": {"matchAll": true}, "state": "Accepted"}]))
    .unwrap();
    bindings.replace("widgets", &PostParams::default(), &b).await.unwrap();
    // The visibility changes without the binding object changing: poll, as a relisting client would.
    common::eventually("the tenant's other binding to show", WAIT, || async {
        let listed = names(vw_bindings.list(&ListParams::default()).await.unwrap());
        (listed == ["gadgets", "widgets"]).then_some(())
    })
    .await;
}

/// A consumer deleting its binding is seen by a watch of the export's `apibindings` as DELETED,
/// even when the watch reaches that event after the export stopped counting the workspace as bound
/// (a slow watcher, or one resuming from an earlier resourceVersion). The hub's membership index
/// binds the workspace again on that event; dropping it left the workspace unbound.
#[tokio::test]
async fn a_deleted_binding_reaches_watchers_of_the_export_bindings() {
    let t = TestServer::start().await;
    let url = setup(&t, json!([])).await;
    let bindings = bound_without_claims(&t, "c").await;
    let vw = vw_client(&t, &url, "*").await;
    let vw_bindings: Api<DynamicObject> =
        Api::all_with(vw, &ar("apis.kcp.io", "v1alpha2", "APIBinding", "apibindings"));
    let before = vw_bindings.list(&ListParams::default()).await.unwrap();
    assert_eq!(before.items.len(), 1);
    let rv = before.metadata.resource_version.clone().unwrap();

    bindings.delete("widgets", &DeleteParams::default()).await.unwrap();
    common::eventually("the binding to be gone from the virtual workspace", WAIT, || async {
        let gone = bindings.get_opt("widgets").await.unwrap().is_none();
        let listed = vw_bindings.list(&ListParams::default()).await.unwrap();
        (gone && listed.items.is_empty()).then_some(())
    })
    .await;

    // Replayed from before the deletion: the export no longer has the workspace, the event still counts.
    let events: Vec<_> = vw_bindings
        .watch(&kube::api::WatchParams::default().timeout(2), &rv)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let deleted = events
        .iter()
        .any(|e| matches!(e, kube::api::WatchEvent::Deleted(o) if o.name_any() == "widgets"));
    assert!(deleted, "no DELETED event for the binding: {events:?}");
}
