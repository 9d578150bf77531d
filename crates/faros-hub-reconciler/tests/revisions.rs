//! Provider revisions on an embedded kcp: the reconciler records each published state of a provider
//! as a ProviderRevision, moves the APIExport to a new schema only when the compatibility gate
//! allows, refuses a schema that would break a tenant's objects before anything changes, and rolls
//! back to a retained revision by the Provider's `spec.revision`.
//!
//! The provider's side (`init`'s writes: schemas, export, endpoint slice, CatalogEntry) is done with
//! the admin client, and the CatalogEntry's status (heartbeat, health) is written the way the hub API
//! writes it, since neither the SDK nor the hub API runs here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Kcp, Running, WAIT, create_provider, reconciler_config, wait_ready};
use faros_core::catalog::{ApiExportRef, CatalogEntry, CatalogEntrySpec, PublishedSchema};
use faros_core::kcp::Workspace;
use faros_core::kcp::apis::v1alpha1::{APIExportEndpointSlice, APIResourceSchema};
use faros_core::kcp::apis::v1alpha2::{APIBinding, APIBindingSpec, APIExport, BindingReference};
use faros_core::names;
use faros_core::provider::{Provider, ProviderSpec};
use faros_core::provider_revision::{LABEL_PROVIDER, ProviderRevision, RevisionPhase};
use faros_core::revision;
use faros_core::wait::wait_for;
use faros_hub_reconciler::leader::Role;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const PROVIDER: &str = "shop";
const GROUP: &str = "shop.example.com";

fn schema(prefix: &str, props: Value) -> APIResourceSchema {
    serde_json::from_value(json!({
        "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema",
        "metadata": {"name": format!("{prefix}.orders.{GROUP}")},
        "spec": {"group": GROUP, "names": {"kind": "Order", "listKind": "OrderList", "plural": "orders", "singular": "order"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": props}}}}]}
    }))
    .unwrap()
}

fn published(s: &APIResourceSchema) -> PublishedSchema {
    PublishedSchema {
        group: GROUP.into(),
        resource: "orders".into(),
        name: s.metadata.name.clone().unwrap(),
        sha256: revision::schema_sha256(&serde_json::to_value(&s.spec).unwrap()),
    }
}

fn entry_spec(version: &str, s: &APIResourceSchema) -> CatalogEntrySpec {
    CatalogEntrySpec {
        display_name: "Shop".into(),
        version: Some(version.into()),
        api_export: Some(ApiExportRef {
            name: GROUP.into(),
            permission_claims: None,
        }),
        schemas: Some(vec![published(s)]),
        ..Default::default()
    }
}

/// What `init` does for a new version: publish the schema, record it in the CatalogEntry.
async fn publish(ws: &kube::Client, version: &str, s: &APIResourceSchema) -> String {
    Api::<APIResourceSchema>::all(ws.clone())
        .create(&PostParams::default(), s)
        .await
        .unwrap();
    let spec = entry_spec(version, s);
    let entries: Api<CatalogEntry> = Api::all(ws.clone());
    match entries.get_opt(PROVIDER).await.unwrap() {
        None => {
            entries
                .create(&PostParams::default(), &CatalogEntry::new(PROVIDER, spec.clone()))
                .await
                .unwrap();
        }
        Some(_) => {
            entries
                .patch(PROVIDER, &PatchParams::default(), &Patch::Merge(json!({"spec": spec})))
                .await
                .unwrap();
        }
    }
    heartbeat(ws, version).await;
    revision::revision_name(PROVIDER, &spec)
}

/// The hub API's record of a heartbeat from `version` and a healthy backend.
async fn heartbeat(ws: &kube::Client, version: &str) {
    let now = k8s_openapi::jiff::Timestamp::now()
        .round(k8s_openapi::jiff::Unit::Second)
        .unwrap();
    let status = json!({"status": {"lastHeartbeat": now.to_string(), "reportedVersion": version,
        "conditions": [{"type": "Ready", "status": "True", "reason": "EndpointsResolved", "message": "ok",
            "lastTransitionTime": now.to_string()}]}});
    Api::<CatalogEntry>::all(ws.clone())
        .patch_status(PROVIDER, &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();
}

async fn workspace(kcp: &Kcp, parent: &str, name: &str) -> String {
    let api: Api<Workspace> = Api::all(kcp.client(parent).await);
    let ws: Workspace = serde_json::from_value(json!({"metadata": {"name": name}, "spec": {}})).unwrap();
    api.create(&PostParams::default(), &ws).await.unwrap();
    let ws = wait_for(api, name, |w| w.is_some_and(Workspace::is_ready), WAIT)
        .await
        .unwrap()
        .unwrap();
    ws.spec.cluster.clone().unwrap()
}

fn orders() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: "v1".into(),
        api_version: format!("{GROUP}/v1"),
        kind: "Order".into(),
        plural: "orders".into(),
    }
}

/// A tenant binding the export, with `specs` as its Orders.
async fn tenant(kcp: &Kcp, name: &str, specs: &[Value]) -> String {
    let cluster = workspace(kcp, "root", name).await;
    let path = format!("root:{name}");
    let client = kcp.client(&path).await;
    let bindings: Api<APIBinding> = Api::all(client.clone());
    let binding = APIBinding::new(
        PROVIDER,
        APIBindingSpec {
            reference: BindingReference::export(names::provider_workspace_path(PROVIDER), GROUP),
            ..Default::default()
        },
    );
    bindings.create(&PostParams::default(), &binding).await.unwrap();
    wait_for(bindings, PROVIDER, |b| b.is_some_and(APIBinding::is_ready), WAIT)
        .await
        .unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &orders());
    for (i, spec) in specs.iter().enumerate() {
        let obj: DynamicObject = serde_json::from_value(json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Order",
            "metadata": {"name": format!("order-{i}")}, "spec": spec}))
        .unwrap();
        // The bound CRD may take a moment to serve after the binding is Ready.
        faros_test_support::eventually::eventually_some(&format!("order-{i} created in {name}"), WAIT, || {
            let (api, obj) = (api.clone(), obj.clone());
            async move { api.create(&PostParams::default(), &obj).await.ok().map(|_| ()) }
        })
        .await;
    }
    cluster
}

async fn wait_revision(api: &Api<ProviderRevision>, name: &str, phase: RevisionPhase) -> ProviderRevision {
    wait_for(
        api.clone(),
        name,
        |r| r.is_some_and(|r| r.status.as_ref().and_then(|s| s.phase) == Some(phase)),
        WAIT,
    )
    .await
    .unwrap_or_else(|e| panic!("revision {name} never reached {phase:?}: {e}"))
    .unwrap()
}

async fn export_schema(ws: &kube::Client) -> String {
    let export = Api::<APIExport>::all(ws.clone()).get(GROUP).await.unwrap();
    export.spec.resources.unwrap()[0].schema.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compatible_revision_moves_tenants_and_a_breaking_one_is_refused_before_the_export_moves() {
    let kcp = Kcp::start().await;
    let running = Running::start(reconciler_config(&kcp, "r").await);
    running.wait_role("leader", |r| *r == Role::Leader).await;
    create_provider(&kcp, PROVIDER, ProviderSpec::default()).await;
    wait_ready(&kcp, PROVIDER).await;
    let ws = kcp.client(&names::provider_workspace_path(PROVIDER)).await;

    // v1, published as a first `init` does: the export points at it.
    let v1 = schema("v1", json!({"item": {"type": "string"}, "note": {"type": "string"}}));
    let v1_name = publish(&ws, "1.0.0", &v1).await;
    let mut export = faros_core::kcp::apis::v1alpha2::APIExport::new(GROUP, Default::default());
    export.spec.resources = Some(vec![faros_core::kcp::apis::v1alpha2::ResourceSchema::crd(
        GROUP,
        "orders",
        v1.metadata.name.as_deref().unwrap(),
    )]);
    Api::<APIExport>::all(ws.clone())
        .create(&PostParams::default(), &export)
        .await
        .unwrap();
    let slice = APIExportEndpointSlice::new(
        GROUP,
        serde_json::from_value(json!({"export": {"name": GROUP, "path": names::provider_workspace_path(PROVIDER)}}))
            .unwrap(),
    );
    Api::<APIExportEndpointSlice>::all(ws.clone())
        .create(&PostParams::default(), &slice)
        .await
        .unwrap();
    // Tenant a uses `note` on two Orders; tenant b never does.
    let a = tenant(
        &kcp,
        "tenant-a",
        &[json!({"item": "x", "note": "gift"}), json!({"note": "fragile"})],
    )
    .await;
    let b = tenant(&kcp, "tenant-b", &[json!({"item": "y"})]).await;

    let revisions: Api<ProviderRevision> = Api::all(kcp.client(names::SYSTEM_PROVIDERS_PATH).await);
    heartbeat(&ws, "1.0.0").await;
    wait_revision(&revisions, &v1_name, RevisionPhase::Serving).await;

    // v2 adds an optional field: the export moves, tenants' Orders are intact.
    let v2 = schema(
        "v2",
        json!({"item": {"type": "string"}, "note": {"type": "string"}, "color": {"type": "string"}}),
    );
    let v2_name = publish(&ws, "2.0.0", &v2).await;
    let served = wait_revision(&revisions, &v2_name, RevisionPhase::Serving).await;
    assert_eq!(export_schema(&ws).await, v2.metadata.name.clone().unwrap());
    assert!(served.status.unwrap().findings.is_empty());
    wait_revision(&revisions, &v1_name, RevisionPhase::Retired).await;
    let tenant_a: Api<DynamicObject> = Api::namespaced_with(kcp.client("root:tenant-a").await, "default", &orders());
    let kept = tenant_a.get("order-0").await.unwrap();
    assert_eq!(kept.data["spec"], json!({"item": "x", "note": "gift"}));

    // v3 removes `note`, which tenant a uses: refused, the export stays on v2.
    let v3 = schema("v3", json!({"item": {"type": "string"}, "color": {"type": "string"}}));
    let v3_name = publish(&ws, "3.0.0", &v3).await;
    let failed = wait_revision(&revisions, &v3_name, RevisionPhase::Failed).await;
    assert_eq!(export_schema(&ws).await, v2.metadata.name.clone().unwrap());
    let findings = failed.status.unwrap().findings;
    let live: Vec<_> = findings.iter().filter(|f| f.rule == "LiveObjectsRefused").collect();
    assert_eq!(live.len(), 1, "{findings:#?}");
    assert_eq!(live[0].field.as_deref(), Some(".spec.note"));
    assert_eq!(live[0].resource, format!("orders.{GROUP}"));
    let counts: Vec<(String, u64)> = live[0]
        .workspaces
        .iter()
        .map(|w| (w.cluster.clone(), w.objects))
        .collect();
    assert_eq!(
        counts,
        vec![(a.clone(), 2)],
        "only tenant a's Orders use the field (tenant b is {b})"
    );
    assert_eq!(
        tenant_a.get("order-1").await.unwrap().data["spec"],
        json!({"note": "fragile"}),
        "nothing changed for the tenant"
    );

    // History: v1 → v2 served, v3 refused; the Provider names v2 as current.
    let history = revisions
        .list(&ListParams::default().labels(&format!("{LABEL_PROVIDER}={PROVIDER}")))
        .await
        .unwrap();
    let mut phases: Vec<(String, Option<String>, RevisionPhase)> = history
        .items
        .iter()
        .map(|r| {
            (
                r.metadata.name.clone().unwrap(),
                r.spec.catalog.version.clone(),
                r.status.as_ref().and_then(|s| s.phase).unwrap(),
            )
        })
        .collect();
    phases.sort_by(|x, y| x.1.cmp(&y.1));
    assert_eq!(
        phases,
        vec![
            (v1_name.clone(), Some("1.0.0".into()), RevisionPhase::Retired),
            (v2_name.clone(), Some("2.0.0".into()), RevisionPhase::Serving),
            (v3_name.clone(), Some("3.0.0".into()), RevisionPhase::Failed),
        ]
    );
    let providers: Api<Provider> = Api::all(kcp.client(names::SYSTEM_PROVIDERS_PATH).await);
    let p = wait_for(
        providers,
        PROVIDER,
        |p| p.is_some_and(|p| p.status.as_ref().and_then(|s| s.current_revision.as_deref()) == Some(v2_name.as_str())),
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(p.status.unwrap().target_revision.as_deref(), Some(v3_name.as_str()));

    // Rollback, the GitOps field: pin v1. Once v1's heartbeats are back it serves again; the schema
    // stays on v2 (schemas only move forward, and v2 only added an optional field).
    let providers: Api<Provider> = Api::all(kcp.client(names::SYSTEM_PROVIDERS_PATH).await);
    providers
        .patch(
            PROVIDER,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"revision": v1_name}})),
        )
        .await
        .unwrap();
    heartbeat(&ws, "1.0.0").await;
    wait_revision(&revisions, &v1_name, RevisionPhase::Serving).await;
    wait_revision(&revisions, &v2_name, RevisionPhase::Retired).await;
    wait_for(
        providers,
        PROVIDER,
        |p| p.is_some_and(|p| p.status.as_ref().and_then(|s| s.current_revision.as_deref()) == Some(v1_name.as_str())),
        WAIT,
    )
    .await
    .unwrap();
    assert_eq!(export_schema(&ws).await, v2.metadata.name.clone().unwrap());
    running.stop().await;
}
