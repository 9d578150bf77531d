//! Test harness: a real embedded kcp on 127.0.0.1:0 with real kube clients, and a provider
//! workspace exporting Notes with tenants bound to it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use faros_core::kcp::Workspace;
use faros_core::kcp::apis::v1alpha1::APIExportEndpointSlice;
use faros_core::kcp::apis::v1alpha2::APIBinding;
use faros_core::wait::wait_for;
use faros_sdk::bootstrap::{InitOptions, init};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use serde_json::json;

pub use faros_embedded_kcp::testing::TempServer as Kcp;

pub const WAIT: Duration = Duration::from_secs(60);
pub const GROUP: &str = "notes.example.faros.sh";

fn schema_yaml() -> String {
    format!(
        "apiVersion: apis.kcp.io/v1alpha1\nkind: APIResourceSchema\nmetadata:\n  name: v1.notes.{GROUP}\n\
         spec:\n  group: {GROUP}\n  names: {{kind: Note, listKind: NoteList, plural: notes, singular: note}}\n\
         \x20 scope: Namespaced\n  versions:\n  - name: v1alpha1\n    served: true\n    storage: true\n\
         \x20   subresources: {{status: {{}}}}\n    schema: {{type: object, properties: {{spec: {{type: object, x-kubernetes-preserve-unknown-fields: true}}, status: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}}}\n"
    )
}

pub fn note() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, "v1alpha1", "Note"), "notes")
}

pub async fn workspace(kcp: &Kcp, name: &str) -> String {
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
pub async fn provider_and_tenant(kcp: &Kcp, provider: &str, tenant: &str) -> (String, String) {
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

pub async fn put_note(kcp: &Kcp, tenant: &str, text: &str) {
    let notes: Api<DynamicObject> =
        Api::namespaced_with(kcp.client(&format!("root:{tenant}")).await, "default", &note());
    let obj = json!({"apiVersion": format!("{GROUP}/v1alpha1"), "kind": "Note", "metadata": {"name": "n"}, "spec": {"text": text}});
    notes
        .patch("n", &PatchParams::apply("test").force(), &Patch::Apply(&obj))
        .await
        .unwrap();
}
