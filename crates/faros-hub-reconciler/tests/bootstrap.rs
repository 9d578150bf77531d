//! Bootstrap against an in-process embedded kcp.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{Kcp, WAIT};
use faros_core::client::ClientFactory;
use faros_core::kcp::apis::v1alpha1::APIExportEndpointSlice;
use faros_core::kcp::apis::v1alpha2::{APIBinding, APIExport};
use faros_core::kcp::{Workspace, WorkspaceType};
use faros_core::names;
use faros_core::provider::{Provider, ProviderSpec};
use faros_embedded_kcp::Server;
use faros_hub_reconciler::bootstrap::{self, BootstrapSettings};
use faros_test_support::kubeconfig::config_from_yaml;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, ResourceExt};
use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;

/// `(cluster, kind, name) -> resourceVersion` of every object bootstrap writes.
async fn snapshot(factory: &ClientFactory) -> BTreeMap<(String, &'static str, String), String> {
    let mut out = BTreeMap::new();
    for ws in faros_hub_reconciler::tree::workspace_tree() {
        let api: Api<Workspace> = Api::all(factory.cluster(ws.parent).unwrap());
        let got = api.get(ws.name).await.unwrap();
        out.insert(
            (ws.parent.to_string(), "Workspace", ws.name.to_string()),
            got.resource_version().unwrap(),
        );
    }
    let controllers = factory.cluster(names::SYSTEM_CONTROLLERS_PATH).unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apis.kcp.io", "v1alpha1", "APIResourceSchema"),
        "apiresourceschemas",
    );
    let schemas: Api<DynamicObject> = Api::all_with(controllers.clone(), &ar);
    for name in [
        "v1alpha1r2.providers.admin.faros.sh",
        "v1alpha1r2.catalogentries.providers.faros.sh",
        "v1alpha1r2.providerrevisions.admin.faros.sh",
    ] {
        let got = schemas.get(name).await.unwrap();
        out.insert(
            (names::SYSTEM_CONTROLLERS_PATH.into(), "APIResourceSchema", name.into()),
            got.resource_version().unwrap(),
        );
    }
    let exports: Api<APIExport> = Api::all(controllers.clone());
    for name in [names::ADMIN_EXPORT, names::PROVIDERS_EXPORT] {
        let got = exports.get(name).await.unwrap();
        out.insert(
            (names::SYSTEM_CONTROLLERS_PATH.into(), "APIExport", name.into()),
            got.resource_version().unwrap(),
        );
    }
    let bindings: Api<APIBinding> = Api::all(factory.cluster(names::SYSTEM_PROVIDERS_PATH).unwrap());
    for name in [names::ADMIN_EXPORT, names::PROVIDERS_EXPORT] {
        let got = bindings.get(name).await.unwrap();
        out.insert(
            (names::SYSTEM_PROVIDERS_PATH.into(), "APIBinding", name.into()),
            got.resource_version().unwrap(),
        );
    }
    let types: Api<WorkspaceType> = Api::all(factory.cluster(names::FAROS_PATH).unwrap());
    for name in ["provider", "organization", "workspace"] {
        let got = types.get(name).await.unwrap();
        out.insert(
            (names::FAROS_PATH.into(), "WorkspaceType", name.into()),
            got.resource_version().unwrap(),
        );
    }
    let ns: Api<Namespace> = Api::all(controllers.clone());
    let got = ns.get(names::SYSTEM_NAMESPACE).await.unwrap();
    out.insert(
        (
            names::SYSTEM_CONTROLLERS_PATH.into(),
            "Namespace",
            names::SYSTEM_NAMESPACE.into(),
        ),
        got.resource_version().unwrap(),
    );
    let slices: Api<APIExportEndpointSlice> = Api::all(controllers);
    let got = slices.get(names::ADMIN_EXPORT).await.unwrap();
    out.insert(
        (
            names::SYSTEM_CONTROLLERS_PATH.into(),
            "APIExportEndpointSlice",
            names::ADMIN_EXPORT.into(),
        ),
        got.resource_version().unwrap(),
    );
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_twice_is_identical_and_serves_the_provider_api() {
    let kcp = Kcp::start().await;
    let factory = kcp.factory().await;
    bootstrap::bootstrap(&factory, BootstrapSettings { wait: WAIT }, None)
        .await
        .unwrap();
    let first = snapshot(&factory).await;
    assert_eq!(first.len(), 6 + 3 + 2 + 2 + 3 + 1 + 1);

    bootstrap::bootstrap(&factory, BootstrapSettings { wait: WAIT }, None)
        .await
        .unwrap();
    let second = snapshot(&factory).await;
    assert_eq!(first, second, "a second bootstrap must change nothing");

    // The tree is what docs/architecture.md#workspace-tree says.
    let types: Api<WorkspaceType> = Api::all(factory.cluster(names::FAROS_PATH).unwrap());
    let provider_type = types.get("provider").await.unwrap();
    // What bootstrap sets, as set; kcp's CRD defaults the rest (`defaultChildWorkspaceType` is
    // `root:universal` when not given, also on the embedded kcp).
    let stored = serde_json::to_value(&provider_type.spec).unwrap();
    let wanted = serde_json::to_value(&bootstrap::workspace_types()[0].spec).unwrap();
    for (field, value) in wanted.as_object().unwrap() {
        assert_eq!(&stored[field], value, "provider WorkspaceType spec.{field}");
    }
    assert_eq!(
        stored["defaultChildWorkspaceType"],
        serde_json::json!({"name": "universal", "path": "root"}),
        "kcp's default"
    );
    let bindings: Api<APIBinding> = Api::all(factory.cluster(names::SYSTEM_PROVIDERS_PATH).unwrap());
    for name in [names::ADMIN_EXPORT, names::PROVIDERS_EXPORT] {
        assert!(bindings.get(name).await.unwrap().is_ready(), "{name} bound");
    }
    // Providers can be created in system:providers once bootstrap is done.
    let providers: Api<Provider> = Api::all(factory.cluster(names::SYSTEM_PROVIDERS_PATH).unwrap());
    providers
        .create(&PostParams::default(), &Provider::new("smoke", ProviderSpec::default()))
        .await
        .unwrap();
    // The admin export's virtual workspace is published.
    let slices: Api<APIExportEndpointSlice> = Api::all(factory.cluster(names::SYSTEM_CONTROLLERS_PATH).unwrap());
    let slice = faros_core::wait::wait_for(
        slices,
        names::ADMIN_EXPORT,
        |s| {
            s.and_then(|s| s.status.as_ref())
                .and_then(|s| s.endpoints.as_ref())
                .is_some_and(|e| !e.is_empty())
        },
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    let url = &slice.status.unwrap().endpoints.unwrap()[0].url;
    assert!(url.contains("/services/apiexport/"), "{url}");
    assert!(url.ends_with("/admin.faros.sh"), "{url}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_converges_when_kcp_starts_late() {
    faros_core::telemetry::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    // Start once to learn the address, CA and admin token (all persisted in the state dir), then stop.
    let first = Server::start(faros_embedded_kcp::Config::new(&state)).await.unwrap();
    let addr = first.addr();
    let kubeconfig = first.admin_kubeconfig();
    first.shutdown().await;

    let factory = ClientFactory::new(config_from_yaml(&kubeconfig).await.unwrap()).unwrap();
    let cancel = CancellationToken::new();
    let task = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            bootstrap::bootstrap_until_done(&factory, BootstrapSettings { wait: WAIT }, None, &cancel).await
        })
    };
    // Nothing listens: bootstrap keeps retrying instead of giving up.
    assert!(!task.is_finished());

    let mut config = faros_embedded_kcp::Config::new(&state);
    config.listen = addr;
    let server = Server::start(config).await.unwrap();
    let done = tokio::time::timeout(WAIT + Duration::from_secs(10), task)
        .await
        .expect("bootstrap converged")
        .unwrap();
    assert!(done);
    let workspaces: Api<Workspace> = Api::all(
        ClientFactory::new(config_from_yaml(&kubeconfig).await.unwrap())
            .unwrap()
            .root()
            .unwrap(),
    );
    assert!(workspaces.get("faros").await.unwrap().is_ready());
    cancel.cancel();
    server.shutdown().await;
}
