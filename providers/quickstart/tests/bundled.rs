//! The files quickstart ships: they validate, render in every environment, and `init` publishes them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use faros_core::kcp::apis::v1alpha2::APIExport;
use faros_provider_quickstart as quickstart;
use faros_sdk::bootstrap::inputs;
use kube::api::Api;
use pretty_assertions::assert_eq;
use serde_json::json;

#[test]
fn manifest_renders_for_dev_and_for_a_cluster() {
    let (schemas, manifest) = quickstart::app().bundled_paths();
    let dev = inputs::load_catalog_entry(&manifest, quickstart::EXPORT, &BTreeMap::new()).unwrap();
    assert_eq!(dev.spec.display_name, "Quickstart");
    assert_eq!(dev.spec.backend.as_ref().unwrap().url, "http://localhost:8081");
    assert_eq!(dev.spec.version.as_deref(), Some("0.1.0"));
    let env = BTreeMap::from([(
        "QUICKSTART_URL".to_string(),
        "http://quickstart.faros-provider-quickstart.svc.cluster.local:8081".to_string(),
    )]);
    let prod = inputs::load_catalog_entry(&manifest, quickstart::EXPORT, &env).unwrap();
    assert_eq!(
        prod.spec.ui.as_ref().unwrap().url.as_deref(),
        Some("http://quickstart.faros-provider-quickstart.svc.cluster.local:8081")
    );
    assert_eq!(
        serde_json::to_value(prod.spec.permission_claims()).unwrap(),
        json!([{"resource": "configmaps", "verbs": ["get", "list", "watch"], "tenantScoped": true}])
    );
    let loaded = inputs::load_schemas(&schemas, &[quickstart::EXPORT.to_string()], &BTreeMap::new()).unwrap();
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].name(), "v261207.greetings.quickstart.providers.faros.sh");
    // The manifest's claims are the ones init puts on the export.
    let export_claims: Vec<(String, Vec<String>)> = quickstart::app()
        .init_options()
        .claims
        .into_iter()
        .map(|c| (c.resource, c.verbs))
        .collect();
    let manifest_claims: Vec<(String, Vec<String>)> = prod
        .spec
        .permission_claims()
        .iter()
        .map(|c| (c.resource.clone(), c.verbs.clone()))
        .collect();
    assert_eq!(export_claims, manifest_claims);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_publishes_one_resource_and_the_configmaps_claim() {
    let kcp = common::Kcp::start().await;
    let client = kcp.client("quickstart-ws").await;
    let config = kcp.server.admin_config("quickstart-ws").await.unwrap();
    let (schemas, _) = quickstart::app().bundled_paths();
    let mut opts = quickstart::app().init_options();
    opts.schemas_dir = schemas;
    opts.catalog_entry_file = None;
    opts.workspace_path = None;
    // A plain logical cluster as the admin (the provider-workspace path is in init_checks.rs).
    opts.allow_foreign_workspace = true;
    quickstart::app().init(config.clone(), &opts).await.unwrap();
    let export = Api::<APIExport>::all(client.clone())
        .get(quickstart::EXPORT)
        .await
        .unwrap();
    assert_eq!(export.spec.resources.as_ref().unwrap().len(), 1);
    assert_eq!(export.spec.permission_claims.as_ref().unwrap().len(), 1);
    assert_eq!(
        export.spec.permission_claims.as_ref().unwrap()[0].resource,
        "configmaps"
    );
    assert!(quickstart::app().init(config, &opts).await.unwrap().unchanged());
}
