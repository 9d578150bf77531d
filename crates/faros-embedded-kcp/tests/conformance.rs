//! kube-rs conformance suite against an in-process embedded kcp on 127.0.0.1:0.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

mod common;

use std::time::Duration;

use common::TestServer;
use faros_core::wait::wait_for;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);

fn cm(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}))
        .unwrap()
}

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn crud_conflicts_and_generate_name() {
    let t = TestServer::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(t.admin().await, "default");

    let created = cms
        .create(&PostParams::default(), &cm("a", json!({"k": "v"})))
        .await
        .unwrap();
    let meta = &created.metadata;
    assert!(meta.uid.as_deref().is_some_and(|u| u.len() == 36));
    assert!(meta.creation_timestamp.is_some());
    assert_eq!(meta.annotations.as_ref().unwrap()["kcp.io/cluster"], "root");
    let rv1: u64 = meta.resource_version.as_deref().unwrap().parse().unwrap();

    let err = api_err(
        cms.create(&PostParams::default(), &cm("a", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(err.message, "configmaps \"a\" already exists");

    let mut update = created.clone();
    update.data = Some([("k".to_string(), "w".to_string())].into());
    let updated = cms.replace("a", &PostParams::default(), &update).await.unwrap();
    let rv2: u64 = updated.metadata.resource_version.as_deref().unwrap().parse().unwrap();
    assert!(rv2 > rv1);
    // A stale resourceVersion is a 409 Conflict with Kubernetes' exact text.
    let err = api_err(cms.replace("a", &PostParams::default(), &update).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on configmaps \"a\": the object has been modified; please apply your changes to the latest version and try again"
    );

    let got = cms.get("a").await.unwrap();
    assert_eq!(got.data.unwrap()["k"], "w");
    let err = api_err(cms.get("missing").await.unwrap_err());
    assert_eq!(
        (err.code, err.reason.as_str(), err.message.as_str()),
        (404, "NotFound", "configmaps \"missing\" not found")
    );

    let generated: ConfigMap = serde_json::from_value(json!({"metadata": {"generateName": "gen-"}})).unwrap();
    let g = cms.create(&PostParams::default(), &generated).await.unwrap();
    let name = g.metadata.name.unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");

    // dryRun=All validates and returns the object without persisting it.
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    cms.create(&dry, &cm("dry", json!({}))).await.unwrap();
    assert_eq!(api_err(cms.get("dry").await.unwrap_err()).code, 404);

    // Namespace must exist.
    let missing: Api<ConfigMap> = Api::namespaced(t.admin().await, "nope");
    let err = api_err(
        missing
            .create(&PostParams::default(), &cm("x", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.message.as_str()), (404, "namespaces \"nope\" not found"));

    cms.delete("a", &DeleteParams::default()).await.unwrap();
    assert_eq!(api_err(cms.get("a").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn finalizers_and_namespace_cascade() {
    let t = TestServer::start().await;
    let client = t.admin().await;
    let nss: Api<Namespace> = Api::all(client.clone());
    nss.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "team"}})).unwrap(),
    )
    .await
    .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    let mut held = cm("held", json!({}));
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();
    cms.create(&PostParams::default(), &cm("plain", json!({})))
        .await
        .unwrap();

    // Deleting an object with a finalizer only marks it.
    cms.delete("held", &DeleteParams::default()).await.unwrap();
    let marked = cms.get("held").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    // No new finalizers while deleting.
    let err = api_err(
        cms.patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/hold", "x.io/y"]}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message
            .contains("no new finalizers can be added if the object is being deleted"),
        "{}",
        err.message
    );

    // Namespace deletion: Terminating, content removed, creates forbidden.
    nss.delete("team", &DeleteParams::default()).await.unwrap();
    let ns = nss.get("team").await.unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Terminating"));
    wait_for(cms.clone(), "plain", |o| o.is_none(), WAIT).await.unwrap();
    let err = api_err(
        cms.create(&PostParams::default(), &cm("late", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "configmaps \"late\" is forbidden: unable to create new content in namespace team because it is being terminated"
    );
    // The namespace waits for the finalizer; releasing it lets both go.
    assert!(nss.get("team").await.is_ok());
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    wait_for(cms.clone(), "held", |o| o.is_none(), WAIT).await.unwrap();
    wait_for(nss.clone(), "team", |o| o.is_none(), WAIT).await.unwrap();
}

#[tokio::test]
async fn garbage_collection_by_owner_references() {
    let t = TestServer::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(t.admin().await, "default");
    let owner = cms
        .create(&PostParams::default(), &cm("owner", json!({})))
        .await
        .unwrap();
    let mut dep = cm("dependent", json!({}));
    dep.metadata.owner_references = Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "owner".into(),
        uid: owner.metadata.uid.clone().unwrap(),
        ..Default::default()
    }]);
    cms.create(&PostParams::default(), &dep).await.unwrap();
    let mut orphan = dep.clone();
    orphan.metadata.name = Some("orphaned".into());
    cms.create(&PostParams::default(), &orphan).await.unwrap();
    // Orphan propagation strips the reference instead of deleting.
    let owner2 = cms
        .create(&PostParams::default(), &cm("owner2", json!({})))
        .await
        .unwrap();
    let mut kept = cm("kept", json!({}));
    kept.metadata.owner_references = Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "owner2".into(),
        uid: owner2.metadata.uid.clone().unwrap(),
        ..Default::default()
    }]);
    cms.create(&PostParams::default(), &kept).await.unwrap();

    cms.delete("owner", &DeleteParams::background()).await.unwrap();
    wait_for(cms.clone(), "dependent", |o| o.is_none(), WAIT).await.unwrap();
    wait_for(cms.clone(), "orphaned", |o| o.is_none(), WAIT).await.unwrap();
    // A dependent written after its owner is gone (a dangling reference) is collected too.
    let mut late = dep.clone();
    late.metadata.name = Some("late".into());
    cms.create(&PostParams::default(), &late).await.unwrap();
    wait_for(cms.clone(), "late", |o| o.is_none(), WAIT).await.unwrap();

    cms.delete("owner2", &DeleteParams::orphan()).await.unwrap();
    wait_for(cms.clone(), "owner2", |o| o.is_none(), WAIT).await.unwrap();
    let kept = cms.get("kept").await.unwrap();
    assert!(kept.metadata.owner_references.unwrap_or_default().is_empty());
}

#[tokio::test]
async fn every_patch_type() {
    let t = TestServer::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(t.admin().await, "default");
    cms.create(&PostParams::default(), &cm("p", json!({"a": "1", "b": "2"})))
        .await
        .unwrap();
    let pp = PatchParams::default();

    let merged = cms
        .patch("p", &pp, &Patch::Merge(json!({"data": {"a": null, "c": "3"}})))
        .await
        .unwrap();
    assert_eq!(serde_json::to_value(merged.data).unwrap(), json!({"b": "2", "c": "3"}));

    // RFC 6902 JSON patch over the wire (kube's Patch::Json needs an extra crate feature).
    let http = t.http();
    let json_patch = |ops: Value| {
        http.patch(t.url("/api/v1/namespaces/default/configmaps/p"))
            .bearer_auth(t.admin_token())
            .header("content-type", "application/json-patch+json")
            .body(ops.to_string())
            .send()
    };
    let resp = json_patch(json!([
        {"op": "test", "path": "/data/b", "value": "2"},
        {"op": "replace", "path": "/data/b", "value": "20"},
        {"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}
    ]))
    .await
    .unwrap();
    assert_eq!(resp.status(), 200);
    let patched = cms.get("p").await.unwrap();
    assert_eq!(patched.data.unwrap()["b"], "20");
    assert_eq!(patched.metadata.labels.unwrap()["x"], "y");
    let failing = json_patch(json!([{"op": "test", "path": "/data/b", "value": "nope"}]))
        .await
        .unwrap();
    assert_eq!(failing.status(), 422);
    let body: Value = failing.json().await.unwrap();
    assert_eq!(body["kind"], "Status");

    let smp = cms
        .patch(
            "p",
            &pp,
            &Patch::Strategic(json!({"metadata": {"finalizers": ["a.io/one"]}, "data": {"d": "4"}})),
        )
        .await
        .unwrap();
    assert_eq!(smp.data.unwrap()["d"], "4");
    let smp = cms
        .patch(
            "p",
            &pp,
            &Patch::Strategic(json!({"metadata": {"finalizers": ["b.io/two"]}})),
        )
        .await
        .unwrap();
    // Finalizers merge as a set under strategic merge patch.
    let mut finalizers = smp.metadata.finalizers.unwrap();
    finalizers.sort();
    assert_eq!(finalizers, vec!["a.io/one".to_string(), "b.io/two".to_string()]);
    cms.patch("p", &pp, &Patch::Merge(json!({"metadata": {"finalizers": null}})))
        .await
        .unwrap();
}

#[tokio::test]
async fn server_side_apply_conflicts_and_force() {
    let t = TestServer::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(t.admin().await, "default");
    let body =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"a": "1", "b": "2"}});
    let created = cms
        .patch("s", &PatchParams::apply("alpha"), &Patch::Apply(&body))
        .await
        .unwrap();
    let mf = created.metadata.managed_fields.unwrap();
    assert_eq!(mf.len(), 1);
    assert_eq!(mf[0].manager.as_deref(), Some("alpha"));
    assert_eq!(mf[0].operation.as_deref(), Some("Apply"));

    // Another manager changing an owned field conflicts with a FieldManagerConflict cause.
    let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"a": "9"}});
    let err = api_err(
        cms.patch("s", &PatchParams::apply("beta"), &Patch::Apply(&other))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(
        err.message.starts_with("Apply failed with 1 conflict"),
        "{}",
        err.message
    );
    assert!(err.message.contains("conflict with \"alpha\""), "{}", err.message);
    let causes = err.details.unwrap().causes;
    assert_eq!(causes[0].reason, "FieldManagerConflict");
    assert_eq!(causes[0].field, ".data.a");

    // force takes ownership.
    let forced = cms
        .patch("s", &PatchParams::apply("beta").force(), &Patch::Apply(&other))
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["a"], "9");
    // alpha stops applying b: it is removed because nobody else owns it.
    let alpha2 = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {}});
    let after = cms
        .patch("s", &PatchParams::apply("alpha"), &Patch::Apply(&alpha2))
        .await
        .unwrap();
    assert_eq!(serde_json::to_value(after.data).unwrap(), json!({"a": "9"}));
    // A missing fieldManager is kube's PatchOptions validation error; a wrong apiVersion a 400.
    let err = api_err(
        cms.patch("s", &PatchParams::default(), &Patch::Apply(&other))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    let bad = json!({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "s"}});
    let err = api_err(
        cms.patch("s", &PatchParams::apply("alpha"), &Patch::Apply(&bad))
            .await
            .unwrap_err(),
    );
    assert!(
        err.message.contains("Incorrect version specified in apply patch"),
        "{}",
        err.message
    );
}

/// An apply body's `metadata.resourceVersion` is a precondition, as an update's is (kube-apiserver
/// compares it in Store.Update): the current one applies, a stale one is 409 Conflict, on the main
/// resource and on `/status`; without one the apply is unconditional, and apply-as-create ignores it
/// (as kcp v0.32.3 does).
#[tokio::test]
async fn server_side_apply_resource_version_precondition() {
    let t = TestServer::start().await;
    let client = t.admin().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let apply = |rv: Option<&str>, v: &str| {
        let mut meta = json!({"name": "p"});
        if let Some(rv) = rv {
            meta["resourceVersion"] = json!(rv);
        }
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": v}})
    };
    let conflict = "Operation cannot be fulfilled on configmaps \"p\": the object has been modified; please apply your changes to the latest version and try again";

    // Without a resourceVersion: no precondition, whatever the object's version.
    let first = cms
        .patch("p", &PatchParams::apply("m"), &Patch::Apply(apply(None, "1")))
        .await
        .unwrap();
    let rv1 = first.metadata.resource_version.unwrap();
    // With the current one: applied.
    let second = cms
        .patch("p", &PatchParams::apply("m"), &Patch::Apply(apply(Some(&rv1), "2")))
        .await
        .unwrap();
    assert_eq!(second.data.unwrap()["k"], "2");
    let rv2 = second.metadata.resource_version.unwrap();
    assert_ne!(rv1, rv2);
    // With a stale one: 409 Conflict, nothing written, not retried on the client's behalf.
    let err = api_err(
        cms.patch("p", &PatchParams::apply("m"), &Patch::Apply(apply(Some(&rv1), "3")))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (err.code, err.reason.as_str(), err.message.as_str()),
        (409, "Conflict", conflict)
    );
    let details = err.details.unwrap();
    assert_eq!((details.name.as_str(), details.kind.as_str()), ("p", "configmaps"));
    // Also when the stale apply would change nothing.
    let err = api_err(
        cms.patch("p", &PatchParams::apply("m"), &Patch::Apply(apply(Some(&rv1), "2")))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    let now = cms.get("p").await.unwrap();
    assert_eq!(
        (now.data.unwrap()["k"].as_str(), now.metadata.resource_version.unwrap()),
        ("2", rv2.clone())
    );
    // Without one again: applied over whatever version is stored.
    let fourth = cms
        .patch("p", &PatchParams::apply("m"), &Patch::Apply(apply(None, "4")))
        .await
        .unwrap();
    assert_eq!(fourth.data.unwrap()["k"], "4");
    // Apply-as-create ignores a resourceVersion in the body: kcp creates the object.
    let missing = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "q", "resourceVersion": rv1}, "data": {"k": "1"}});
    let created = cms
        .patch("q", &PatchParams::apply("m"), &Patch::Apply(&missing))
        .await
        .unwrap();
    assert_ne!(created.metadata.resource_version, Some(rv1.clone()));
    assert_eq!(cms.get("q").await.unwrap().data.unwrap()["k"], "1");

    // The same on /status.
    let nss: Api<Namespace> = Api::all(client);
    nss.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "p"}})).unwrap(),
    )
    .await
    .unwrap();
    let ns_rv = nss.get("p").await.unwrap().metadata.resource_version.unwrap();
    let status = |rv: Option<&str>| {
        let mut meta = json!({"name": "p"});
        if let Some(rv) = rv {
            meta["resourceVersion"] = json!(rv);
        }
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": meta, "status": {"phase": "Active"}})
    };
    nss.patch_status("p", &PatchParams::apply("m"), &Patch::Apply(status(Some(&ns_rv))))
        .await
        .unwrap();
    let err = api_err(
        nss.patch_status("p", &PatchParams::apply("m"), &Patch::Apply(status(Some(&rv1))))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on namespaces \"p\": the object has been modified; please apply your changes to the latest version and try again"
    );
    nss.patch_status("p", &PatchParams::apply("m"), &Patch::Apply(status(None)))
        .await
        .unwrap();
}

#[tokio::test]
async fn pagination_is_consistent_under_concurrent_writes() {
    let t = TestServer::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(t.admin().await, "default");
    wait_for(cms.clone(), "kube-root-ca.crt", |c| c.is_some(), WAIT)
        .await
        .unwrap();
    for i in 0..25 {
        cms.create(&PostParams::default(), &cm(&format!("item-{i:02}"), json!({})))
            .await
            .unwrap();
    }
    let first = cms.list(&ListParams::default().limit(10)).await.unwrap();
    assert_eq!(first.items.len(), 10);
    let token = first.metadata.continue_.clone().unwrap();
    // Writes after the first page must not show up in later pages of the same list.
    cms.create(&PostParams::default(), &cm("item-99", json!({})))
        .await
        .unwrap();
    cms.delete("item-20", &DeleteParams::default()).await.unwrap();
    let mut names: Vec<String> = first.items.iter().map(|c| c.metadata.name.clone().unwrap()).collect();
    let mut cont = Some(token);
    while let Some(c) = cont {
        let page = cms
            .list(&ListParams::default().limit(10).continue_token(&c))
            .await
            .unwrap();
        names.extend(page.items.iter().map(|c| c.metadata.name.clone().unwrap()));
        cont = page.metadata.continue_.filter(|c| !c.is_empty());
    }
    // Every namespace also holds the root CA ConfigMap, as in Kubernetes.
    let mut want: Vec<String> = (0..25).map(|i| format!("item-{i:02}")).collect();
    want.push("kube-root-ca.crt".into());
    assert_eq!(names, want);
}

#[tokio::test]
async fn selectors() {
    let t = TestServer::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(t.admin().await, "default");
    wait_for(cms.clone(), "kube-root-ca.crt", |c| c.is_some(), WAIT)
        .await
        .unwrap();
    for (name, labels) in [
        ("a", json!({"app": "web", "tier": "front"})),
        ("b", json!({"app": "db"})),
        ("c", json!({})),
    ] {
        let mut c = cm(name, json!({}));
        c.metadata.labels = serde_json::from_value(labels).unwrap();
        cms.create(&PostParams::default(), &c).await.unwrap();
    }
    let names = |l: kube::core::ObjectList<ConfigMap>| {
        l.items
            .into_iter()
            .map(|c| c.metadata.name.unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(cms.list(&ListParams::default().labels("app=web")).await.unwrap()),
        ["a"]
    );
    assert_eq!(
        names(
            cms.list(&ListParams::default().labels("app in (web,db)"))
                .await
                .unwrap()
        ),
        ["a", "b"]
    );
    assert_eq!(
        names(cms.list(&ListParams::default().labels("!app")).await.unwrap()),
        ["c", "kube-root-ca.crt"]
    );
    assert_eq!(
        names(cms.list(&ListParams::default().labels("app!=web")).await.unwrap()),
        ["b", "c", "kube-root-ca.crt"]
    );
    assert_eq!(
        names(
            cms.list(&ListParams::default().fields("metadata.name=b"))
                .await
                .unwrap()
        ),
        ["b"]
    );
    // A pinned name is one key (kube's MatchesSingle); the rest of the selector still applies,
    // across namespaces the name is no key, and cluster-scoped kinds pin it too.
    assert!(
        names(
            cms.list(&ListParams::default().fields("metadata.name=b").labels("app=web"))
                .await
                .unwrap()
        )
        .is_empty()
    );
    assert_eq!(
        names(
            cms.list(&ListParams::default().fields("metadata.name=b,metadata.namespace=default"))
                .await
                .unwrap()
        ),
        ["b"]
    );
    let everywhere: Api<ConfigMap> = Api::all(t.admin().await);
    let roots = everywhere
        .list(&ListParams::default().fields("metadata.name=kube-root-ca.crt"))
        .await
        .unwrap();
    assert!(roots.items.len() > 1, "one per namespace: {:?}", roots.items.len());
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(t.admin().await);
    let found = namespaces
        .list(&ListParams::default().fields("metadata.name=default"))
        .await
        .unwrap();
    assert_eq!(found.items.len(), 1);
    assert_eq!(found.items[0].metadata.name.as_deref(), Some("default"));
    let err = api_err(
        cms.list(&ListParams::default().fields("spec.foo=bar"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (
            400,
            "\"spec.foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        )
    );
    let err = api_err(cms.list(&ListParams::default().labels("app in (")).await.unwrap_err());
    assert_eq!(err.code, 400);
    // Cross-namespace list.
    let all: Api<ConfigMap> = Api::all(t.admin().await);
    let mine = all
        .list(&ListParams::default().fields("metadata.name!=kube-root-ca.crt"))
        .await
        .unwrap();
    assert_eq!(mine.items.len(), 3);
}

#[tokio::test]
async fn watch_resume_selector_transitions_and_bookmarks() {
    let t = TestServer::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(t.admin().await, "default");
    // The namespace's own content first, so that the resumed watch below replays only ours.
    wait_for(cms.clone(), "kube-root-ca.crt", |c| c.is_some(), WAIT)
        .await
        .unwrap();
    let list = cms.list(&ListParams::default()).await.unwrap();
    let rv = list.metadata.resource_version.unwrap();
    let wp = WatchParams::default().labels("watched=yes").timeout(10);
    let mut stream = cms.watch(&wp, &rv).await.unwrap().boxed();
    let mut c = cm("w", json!({}));
    c.metadata.labels = Some([("watched".to_string(), "yes".to_string())].into());
    cms.create(&PostParams::default(), &c).await.unwrap();
    cms.patch("w", &PatchParams::default(), &Patch::Merge(json!({"data": {"x": "1"}})))
        .await
        .unwrap();
    cms.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"watched": "no"}}})),
    )
    .await
    .unwrap();
    cms.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"watched": "yes"}}})),
    )
    .await
    .unwrap();
    cms.delete("w", &DeleteParams::default()).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 5 {
        match stream.try_next().await.unwrap().unwrap() {
            WatchEvent::Added(_) => seen.push("ADDED"),
            WatchEvent::Modified(_) => seen.push("MODIFIED"),
            WatchEvent::Deleted(_) => seen.push("DELETED"),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("watch error {e:?}"),
        }
    }
    assert_eq!(seen, ["ADDED", "MODIFIED", "DELETED", "ADDED", "DELETED"]);

    // Resuming from a resourceVersion replays exactly what happened after it.
    let mut resumed = cms
        .watch(&WatchParams::default().timeout(5), &rv)
        .await
        .unwrap()
        .boxed();
    let first = resumed.try_next().await.unwrap().unwrap();
    assert!(matches!(first, WatchEvent::Added(ref o) if o.metadata.name.as_deref() == Some("w")));

    // sendInitialEvents ends the initial state with the k8s.io/initial-events-end bookmark.
    let streaming = WatchParams::default().initial_events().timeout(5);
    let mut s = cms.watch(&streaming, "").await.unwrap().boxed();
    let mut got_end = false;
    while let Some(ev) = s.try_next().await.unwrap() {
        if let WatchEvent::Bookmark(b) = ev {
            got_end = b
                .metadata
                .annotations
                .get("k8s.io/initial-events-end")
                .map(String::as_str)
                == Some("true");
            break;
        }
    }
    assert!(got_end);
}

#[tokio::test]
async fn too_old_resource_version_makes_kube_runtime_relist() {
    let t = TestServer::start_with(|c| c.history_capacity = 5).await;
    let cms: Api<ConfigMap> = Api::namespaced(t.admin().await, "default");
    // Polled, not watched: with a 5-event history a watch could itself be too old.
    common::eventually("the namespace's root CA ConfigMap", WAIT, || async {
        cms.get_opt("kube-root-ca.crt").await.unwrap().map(|_| ())
    })
    .await;
    for i in 0..20 {
        cms.create(&PostParams::default(), &cm(&format!("old-{i}"), json!({})))
            .await
            .unwrap();
    }
    // A watch from RV 1 is far behind the 5-event history: HTTP 200 with an in-stream 410 ERROR.
    let mut stream = cms
        .watch(&WatchParams::default().timeout(5), "1")
        .await
        .unwrap()
        .boxed();
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Error(e)) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
    // kube-runtime's watcher relists and sees everything.
    let (reader, writer) = kube::runtime::reflector::store::<ConfigMap>();
    let w = watcher(cms.clone(), watcher::Config::default()).default_backoff();
    let handle = tokio::spawn(kube::runtime::reflector(writer, w).for_each(|_| futures::future::ready(())));
    tokio::time::timeout(WAIT, reader.wait_until_ready())
        .await
        .unwrap()
        .unwrap();
    // The 20 and the namespace's root CA ConfigMap.
    assert_eq!(reader.state().len(), 21);
    handle.abort();
}

#[tokio::test]
async fn token_review_sar_and_rbac_denials() {
    // Denials end in kcp's anonymised reason, as kcp v0.32 answers (e2e/kcp-diff/recorded/).
    let t = TestServer::start().await;
    let admin = t.admin().await;
    let alice = t.alice().await;
    let alice_cms: Api<ConfigMap> = Api::namespaced(alice.clone(), "default");
    let err = api_err(alice_cms.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\": access denied"
    );
    let err = api_err(alice_cms.get("x").await.unwrap_err());
    assert_eq!(
        err.message,
        "configmaps \"x\" is forbidden: User \"alice\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"default\": access denied"
    );

    // A group binding grants access immediately.
    common::kcp::grant_to(
        admin.clone(),
        "cm-reader",
        ("Group", "devs"),
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]),
    )
    .await;
    alice_cms.list(&ListParams::default()).await.unwrap();
    let err = api_err(
        alice_cms
            .create(&PostParams::default(), &cm("no", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        "configmaps is forbidden: User \"alice\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\": access denied"
    );

    // SelfSubjectAccessReview (kubectl auth can-i) and SubjectAccessReview.
    let http = t.http();
    let can = |token: String, verb: &'static str| {
        let http = http.clone();
        let url = t.url("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews");
        async move {
            let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": {"verb": verb, "resource": "configmaps", "namespace": "default"}}});
            let resp: Value = http
                .post(url)
                .bearer_auth(token)
                .json(&body)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            resp["status"]["allowed"].as_bool().unwrap()
        }
    };
    assert!(can(common::USER_TOKEN.into(), "list").await);
    assert!(!can(common::USER_TOKEN.into(), "delete").await);
    let sar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {"user": "bob", "resourceAttributes": {"verb": "get", "resource": "configmaps", "namespace": "default"}}});
    let resp: Value = http
        .post(t.url("/apis/authorization.k8s.io/v1/subjectaccessreviews"))
        .bearer_auth(t.admin_token())
        .json(&sar)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(resp["status"]["allowed"], false);
    // Alice may not review others.
    let resp = http
        .post(t.url("/apis/authorization.k8s.io/v1/subjectaccessreviews"))
        .bearer_auth(common::USER_TOKEN)
        .json(&sar)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);

    // ServiceAccount tokens: filled by the token controller, valid in TokenReview, invalid after deletion.
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "robot"}})).unwrap(),
    )
    .await
    .unwrap();
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), "default");
    secrets.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "robot-token", "annotations": {"kubernetes.io/service-account.name": "robot"}}, "type": "kubernetes.io/service-account-token"})).unwrap()).await.unwrap();
    let secret = wait_for(
        secrets.clone(),
        "robot-token",
        |s| s.is_some_and(|s: &Secret| s.data.as_ref().is_some_and(|d| d.contains_key("token"))),
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    let data = secret.data.unwrap();
    let token = String::from_utf8(data["token"].0.clone()).unwrap();
    assert_eq!(String::from_utf8(data["namespace"].0.clone()).unwrap(), "default");
    assert!(
        String::from_utf8(data["ca.crt"].0.clone())
            .unwrap()
            .contains("BEGIN CERTIFICATE")
    );
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}});
    let resp: Value = http
        .post(t.url("/apis/authentication.k8s.io/v1/tokenreviews"))
        .bearer_auth(t.admin_token())
        .json(&review)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(resp["status"]["authenticated"], true);
    assert_eq!(
        resp["status"]["user"]["username"],
        "system:serviceaccount:default:robot"
    );
    let groups = resp["status"]["user"]["groups"].as_array().unwrap();
    assert!(
        groups.contains(&json!("system:serviceaccounts:default")) && groups.contains(&json!("system:authenticated"))
    );
    secrets.delete("robot-token", &DeleteParams::default()).await.unwrap();
    let resp: Value = http
        .post(t.url("/apis/authentication.k8s.io/v1/tokenreviews"))
        .bearer_auth(t.admin_token())
        .json(&review)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // As kube writes it: `authenticated: false` omitted, an empty user.
    assert_eq!(resp["status"], json!({"user": {}, "error": "invalid bearer token"}));
}

#[tokio::test]
async fn a_request_without_credentials_is_system_anonymous_and_refused() {
    let t = TestServer::start().await;
    let http = t.http();
    let list = http.get(t.url("/api/v1/namespaces")).send().await.unwrap();
    assert_eq!(list.status().as_u16(), 403);
    let body: Value = list.json().await.unwrap();
    assert_eq!(
        body["message"],
        "namespaces is forbidden: User \"system:anonymous\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope: access denied"
    );
    // Reviews answer about their caller, who must be someone.
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let who = http
        .post(t.url("/apis/authentication.k8s.io/v1/selfsubjectreviews"))
        .json(&review)
        .send()
        .await
        .unwrap();
    assert_eq!(who.status().as_u16(), 403);
    // A token that does not authenticate is still a 401, not anonymous.
    let wrong = http
        .get(t.url("/api/v1/namespaces"))
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
}

#[tokio::test]
async fn bad_input_gets_status_errors_and_server_keeps_serving() {
    let t = TestServer::start_with(|c| c.max_body_bytes = 64 * 1024).await;
    let http = t.http();
    let token = t.admin_token();
    let post = |path: &str, body: Vec<u8>, query: &str| {
        http.post(format!("{}{path}{query}", t.server.url()))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(body)
    };
    let cases: Vec<(reqwest::RequestBuilder, u16, &str)> = vec![
        (
            post("/api/v1/namespaces/default/configmaps", b"{not json".to_vec(), ""),
            400,
            "BadRequest",
        ),
        (
            post(
                "/api/v1/namespaces/default/configmaps",
                br#"{"metadata":{"name":"u"},"datax":{}}"#.to_vec(),
                "?fieldValidation=Strict",
            ),
            400,
            "BadRequest",
        ),
        (
            post("/api/v1/namespaces/default/configmaps", vec![b' '; 100 * 1024], ""),
            413,
            "RequestEntityTooLarge",
        ),
        (
            post("/api/v1/namespaces/default/widgets", b"{}".to_vec(), ""),
            404,
            "NotFound",
        ),
        (
            http.get(t.url("/api/v1/namespaces/default/configmaps?labelSelector=a%20in%20("))
                .bearer_auth(&token),
            400,
            "BadRequest",
        ),
        // No credentials: kube's anonymous user, refused by authorization like any other.
        (http.get(t.url("/api/v1/namespaces")), 403, "Forbidden"),
        (
            http.get(t.url("/api/v1/namespaces")).bearer_auth("wrong"),
            401,
            "Unauthorized",
        ),
    ];
    for (req, code, reason) in cases {
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status().as_u16(), code);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["kind"], "Status", "{body}");
        assert_eq!(body["reason"], reason, "{body}");
        assert_eq!(body["code"], code, "{body}");
    }
    // A path no API handler claims gets Go's plain-text 404, as from kube-apiserver and kcp.
    let nowhere = http
        .get(t.url("/no/such/path"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(nowhere.status().as_u16(), 404);
    assert_eq!(nowhere.text().await.unwrap(), "404 page not found\n");
    let strict = post(
        "/api/v1/namespaces/default/configmaps",
        br#"{"metadata":{"name":"u"},"datax":{}}"#.to_vec(),
        "?fieldValidation=Strict",
    )
    .send()
    .await
    .unwrap();
    let body: Value = strict.json().await.unwrap();
    assert_eq!(
        body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"datax\""
    );
    // Warn keeps the object (minus the unknown field) and says so in a Warning header.
    let warn = post(
        "/api/v1/namespaces/default/configmaps",
        br#"{"metadata":{"name":"u"},"datax":{}}"#.to_vec(),
        "?fieldValidation=Warn",
    )
    .send()
    .await
    .unwrap();
    assert_eq!(warn.status(), 201);
    assert!(
        warn.headers()
            .get("warning")
            .unwrap()
            .to_str()
            .unwrap()
            .contains("unknown field")
    );
    // Still serving.
    assert_eq!(http.get(t.url("/healthz")).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn discovery_openapi_tables_and_metrics() {
    let t = TestServer::start().await;
    let client = t.admin().await;
    let discovery = kube::Discovery::new(client.clone()).run().await.unwrap();
    let groups: Vec<String> = discovery.groups().map(|g| g.name().to_string()).collect();
    for g in [
        "",
        "rbac.authorization.k8s.io",
        "coordination.k8s.io",
        "authorization.k8s.io",
    ] {
        assert!(groups.iter().any(|x| x == g), "missing group {g:?} in {groups:?}");
    }
    let http = t.http();
    let token = t.admin_token();
    let index: Value = http
        .get(t.url("/openapi/v3"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let core = index["paths"]["api/v1"]["serverRelativeURL"].as_str().unwrap();
    let doc: Value = http
        .get(t.url(core))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
    assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "ConfigMap");
    assert!(
        patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation")
    );
    let table: Value = http
        .get(t.url("/api/v1/namespaces"))
        .bearer_auth(&token)
        .header(
            "accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(table["kind"], "Table");
    let cols: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols, ["Name", "Status", "Age"]);
    assert_eq!(table["rows"][0]["cells"][0], "default");
    assert_eq!(table["rows"][0]["cells"][1], "Active");
    let scrape = || async {
        http.get(t.url("/metrics"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    let gauge = |text: &str, name: &str| -> i64 {
        let line = text.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let metrics = scrape().await;
    assert!(metrics.contains("faros_kcp_apiserver_requests_total"), "{metrics}");
    // The store's size: twenty more objects, and their keys and stored texts in the image (the
    // server's own controllers may write meanwhile: a few kilobytes).
    let (objects, bytes) = (
        gauge(&metrics, "faros_kcp_storage_objects"),
        gauge(&metrics, "faros_kcp_storage_image_bytes"),
    );
    for i in 0..20 {
        let created = http
            .post(t.url("/api/v1/namespaces/default/configmaps"))
            .bearer_auth(&token)
            .json(&json!({"metadata": {"name": format!("counted-{i}")}, "data": {"k": "x".repeat(1000)}}))
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 201);
    }
    let metrics = scrape().await;
    let added = gauge(&metrics, "faros_kcp_storage_objects") - objects;
    assert!((20..=22).contains(&added), "{added} objects more after 20 creates");
    let each = (gauge(&metrics, "faros_kcp_storage_image_bytes") - bytes) / 20;
    assert!(
        (1000..2000).contains(&each),
        "the image grew by {each} bytes per 1 KB ConfigMap"
    );
    assert_eq!(http.get(t.url("/metrics")).send().await.unwrap().status(), 401);
    let version: Value = http
        .get(t.url("/version"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(version["major"], "1");
}

#[tokio::test]
async fn state_survives_restart() {
    faros_core::telemetry::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let mut config = faros_embedded_kcp::Config::new(dir.path());
    let server = faros_embedded_kcp::Server::start(config.clone()).await.unwrap();
    let token = server.admin_token().to_string();
    let client = {
        let kc = kube::config::Kubeconfig::from_yaml(&server.admin_kubeconfig()).unwrap();
        kube::Client::try_from(
            kube::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .unwrap(),
        )
        .unwrap()
    };
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let created = cms
        .create(&PostParams::default(), &cm("persist", json!({"k": "v"})))
        .await
        .unwrap();
    server.shutdown().await;
    config.listen = "127.0.0.1:0".parse().unwrap();
    let server = faros_embedded_kcp::Server::start(config).await.unwrap();
    assert_eq!(server.admin_token(), token);
    let kc = kube::config::Kubeconfig::from_yaml(&server.admin_kubeconfig()).unwrap();
    let client = kube::Client::try_from(
        kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap(),
    )
    .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let got = cms.get("persist").await.unwrap();
    assert_eq!(got.metadata.uid, created.metadata.uid);
    let next = cms
        .create(&PostParams::default(), &cm("after", json!({})))
        .await
        .unwrap();
    let rv = |c: &ConfigMap| c.metadata.resource_version.as_deref().unwrap().parse::<u64>().unwrap();
    assert!(rv(&next) > rv(&got));
    server.shutdown().await;
}
