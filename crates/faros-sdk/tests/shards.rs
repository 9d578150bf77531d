//! A controller follows the endpoint slice's URL set: one watch per URL, started when a URL appears
//! and stopped when it goes, the others untouched. Two exports of the same resource in one embedded
//! kcp stand in for two shards: each has its own virtual workspace URL and its own tenant, so a
//! tenant is seen only through "its" URL, as on a sharded kcp.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::Kcp;
use faros_core::kcp::Workspace;
use faros_core::kcp::apis::v1alpha1::APIExportEndpointSlice;
use faros_core::kcp::apis::v1alpha2::APIBinding;
use faros_core::wait::wait_for;
use faros_sdk::bootstrap::{InitOptions, init};
use faros_sdk::controller::{Action, Controller, Endpoints};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(60);
const GROUP: &str = "notes.example.faros.sh";

fn schema_yaml() -> String {
    format!(
        "apiVersion: apis.kcp.io/v1alpha1\nkind: APIResourceSchema\nmetadata:\n  name: v1.notes.{GROUP}\n\
         spec:\n  group: {GROUP}\n  names: {{kind: Note, listKind: NoteList, plural: notes, singular: note}}\n\
         \x20 scope: Namespaced\n  versions:\n  - name: v1alpha1\n    served: true\n    storage: true\n\
         \x20   subresources: {{status: {{}}}}\n    schema: {{type: object, properties: {{spec: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}}}\n"
    )
}

fn note() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, "v1alpha1", "Note"), "notes")
}

async fn workspace(kcp: &Kcp, name: &str) -> String {
    let workspaces: Api<Workspace> = Api::all(kcp.client("root").await);
    let ws: Workspace = serde_json::from_value(json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
        "metadata": {"name": name}, "spec": {"type": {"name": "universal", "path": "root"}}}))
    .unwrap();
    workspaces.create(&PostParams::default(), &ws).await.unwrap();
    let ws = wait_for(workspaces, name, |w| w.is_some_and(Workspace::is_ready), WAIT)
        .await
        .unwrap()
        .unwrap();
    ws.spec.cluster.unwrap()
}

/// A provider workspace `root:<provider>` exporting Notes, and a tenant `root:<tenant>` bound to it
/// with one Note; returns the export's virtual workspace URL and the tenant's cluster.
async fn provider_and_tenant(kcp: &Kcp, provider: &str, tenant: &str) -> (String, String) {
    workspace(kcp, provider).await;
    let path = format!("root:{provider}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.yaml"), schema_yaml()).unwrap();
    let opts = InitOptions {
        export: GROUP.into(),
        groups: vec![],
        schemas_dir: dir.path().to_path_buf(),
        claims: vec![],
        catalog_entry_file: None,
        workspace_path: Some(path.clone()),
        env: BTreeMap::new(),
        allow_prune: false,
        allow_foreign_workspace: true,
    };
    init(kcp.server.admin_config(&path).await.unwrap(), &opts)
        .await
        .unwrap();

    let cluster = workspace(kcp, tenant).await;
    let client = kcp.client(&format!("root:{tenant}")).await;
    let bindings: Api<APIBinding> = Api::all(client.clone());
    let binding: APIBinding =
        serde_json::from_value(json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
        "metadata": {"name": "notes"}, "spec": {"reference": {"export": {"path": path, "name": GROUP}}}}))
        .unwrap();
    bindings.create(&PostParams::default(), &binding).await.unwrap();
    wait_for(bindings, "notes", |b| b.is_some_and(APIBinding::is_ready), WAIT)
        .await
        .unwrap();
    let slices: Api<APIExportEndpointSlice> = Api::all(kcp.client(&path).await);
    let slice = wait_for(slices, GROUP, |s| s.is_some_and(|s| !s.urls().is_empty()), WAIT)
        .await
        .unwrap()
        .unwrap();
    let _ = Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap(),
        )
        .await;
    put_note(kcp, tenant, "1").await;
    (slice.urls()[0].to_string(), cluster)
}

async fn put_note(kcp: &Kcp, tenant: &str, text: &str) {
    let notes: Api<DynamicObject> =
        Api::namespaced_with(kcp.client(&format!("root:{tenant}")).await, "default", &note());
    let obj = json!({"apiVersion": format!("{GROUP}/v1alpha1"), "kind": "Note", "metadata": {"name": "n"}, "spec": {"text": text}});
    notes
        .patch("n", &PatchParams::apply("test").force(), &Patch::Apply(&obj))
        .await
        .unwrap();
}

/// The next reconcile: (tenant cluster, spec.text, URL it came through).
async fn next(log: &mut mpsc::UnboundedReceiver<(String, String, String)>) -> (String, String, String) {
    tokio::time::timeout(WAIT, log.recv())
        .await
        .expect("a reconcile")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controllers_watch_every_url_and_follow_the_slice() {
    let kcp = Kcp::start().await;
    let (url_a, tenant_a) = provider_and_tenant(&kcp, "provider-a", "tenant-a").await;
    let (url_b, tenant_b) = provider_and_tenant(&kcp, "provider-b", "tenant-b").await;
    assert_ne!(url_a, url_b);

    let (urls, endpoints) = Endpoints::manual(vec![url_a.clone()]);
    let (log_tx, mut log) = mpsc::unbounded_channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controller = Controller::new(kcp.factory().await, endpoints, note());
    let run = tokio::spawn(controller.run(
        move |obj: Arc<DynamicObject>, tenant| {
            let log_tx = log_tx.clone();
            async move {
                let text = obj.data["spec"]["text"].as_str().unwrap_or_default().to_string();
                // The tenant's client works: it reads the object back through the same URL.
                let api: Api<DynamicObject> = Api::namespaced_with(tenant.client.clone(), "default", &tenant.resource);
                api.get("n").await.map_err(|e| e.to_string())?;
                let _ = log_tx.send((tenant.key.cluster.clone(), text, tenant.url.to_string()));
                Ok::<_, String>(Action::AwaitChange)
            }
        },
        async move {
            let _ = stopped.await;
        },
    ));

    // One URL: only its tenant.
    assert_eq!(next(&mut log).await, (tenant_a.clone(), "1".into(), url_a.clone()));
    // The slice gains the second shard's URL: its tenant is reconciled, the first one is not again.
    urls.send(vec![url_a.clone(), url_b.clone()]).unwrap();
    assert_eq!(next(&mut log).await, (tenant_b.clone(), "1".into(), url_b.clone()));
    put_note(&kcp, "tenant-a", "2").await;
    assert_eq!(next(&mut log).await, (tenant_a.clone(), "2".into(), url_a.clone()));
    // The slice loses the first URL: tenant-a's changes are no longer seen, tenant-b's are.
    urls.send(vec![url_b.clone()]).unwrap();
    put_note(&kcp, "tenant-a", "3").await;
    put_note(&kcp, "tenant-b", "3").await;
    assert_eq!(next(&mut log).await, (tenant_b.clone(), "3".into(), url_b.clone()));
    // And regains it: tenant-a is relisted with its newest object.
    urls.send(vec![url_b.clone(), url_a.clone()]).unwrap();
    assert_eq!(next(&mut log).await, (tenant_a.clone(), "3".into(), url_a.clone()));

    let _ = stop.send(());
    run.await.unwrap().unwrap();
    assert!(log.try_recv().is_err(), "nothing reconciled twice");
}
