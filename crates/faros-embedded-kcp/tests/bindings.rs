//! APIExports, endpoint slices, APIBindings and permission claims against an in-process embedded kcp,
//! through real kube-rs clients (and kubectl for printer columns). The provider lives in `root`;
//! tenant logical clusters `t1`, `t2` are made by creating their LogicalCluster objects.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

mod common;

use common::kcp::*;
use common::{USER_TOKEN, eventually};
use faros_core::kcp::apis::{v1alpha1, v1alpha2};
use faros_core::wait::wait_for;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use sha2::Digest;

const EXPORT: &str = "widgets.example.io";

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn conditions(b: &v1alpha2::APIBinding) -> Vec<(String, String, Option<String>)> {
    b.status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.type_, c.status.to_string(), c.reason))
        .collect()
}

fn endpoints(s: &v1alpha1::APIExportEndpointSlice) -> Vec<String> {
    s.status
        .as_ref()
        .and_then(|s| s.endpoints.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|e| e.url)
        .collect()
}

async fn discovery_has(client: &kube::Client, path: &str) -> bool {
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    client.request::<Value>(req).await.is_ok()
}

#[tokio::test]
async fn bind_check_phases_crud_endpoint_slice_and_deletion() {
    let t = start().await;
    let root = t.admin().await;
    let export = publish_widgets(&root, EXPORT, json!([])).await;

    // Identity: secret kcp-system/<export> in the export's cluster, hash = sha256 of its key.
    let identity = export.identity_hash().unwrap().to_string();
    assert_eq!(identity.len(), 64);
    let secret_ref = export.spec.identity.as_ref().unwrap().secret_ref.as_ref().unwrap();
    assert_eq!(secret_ref.namespace.as_deref(), Some("kcp-system"));
    assert_eq!(secret_ref.name.as_deref(), Some(EXPORT));
    let secret = Api::<Secret>::namespaced(root.clone(), "kcp-system")
        .get(EXPORT)
        .await
        .unwrap();
    let key = &secret.data.unwrap()["key"].0;
    let digest: String = sha2::Sha256::digest(key).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(digest, identity);
    let export_conditions = export.status.as_ref().unwrap().conditions.clone().unwrap();
    assert_eq!(export_conditions[0].type_, "IdentityValid");
    assert!(export_conditions[0].is_true());

    // The endpoint slice named like the export exists at once, owned by it, without endpoints.
    let slices: Api<v1alpha1::APIExportEndpointSlice> = Api::all(root.clone());
    let slice = wait_for(slices.clone(), EXPORT, |s| s.is_some(), WAIT)
        .await
        .unwrap()
        .unwrap();
    let owner = &slice.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("APIExport", EXPORT));
    assert_eq!(Some(&owner.uid), export.metadata.uid.as_ref());
    assert_eq!(slice.spec.export.path.as_deref(), Some("root"));
    assert!(endpoints(&slice).is_empty());

    make_cluster(&t, "t1").await;
    make_cluster(&t, "t2").await;
    grant(
        admin_in(&t, "t1").await,
        "alice-admin",
        "alice",
        json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
    )
    .await;

    // Without `bind` on the export: kcp's exact 403.
    let alice_t1 = t.client_as("root:t1", "alice", USER_TOKEN).await;
    let alice_bindings: Api<v1alpha2::APIBinding> = Api::all(alice_t1.clone());
    let err = api_err(
        alice_bindings
            .create(&PostParams::default(), &binding("widgets", "root", EXPORT, json!([])))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    assert_eq!(err.reason, "Forbidden");
    assert_eq!(
        err.message,
        "apibindings.apis.kcp.io \"widgets\" is forbidden: unable to create APIBinding: no permission to bind to export root:widgets.example.io"
    );
    let details = err.details.unwrap();
    assert_eq!(
        (details.name.as_str(), details.group.as_str(), details.kind.as_str()),
        ("widgets", "apis.kcp.io", "apibindings")
    );
    // An unknown workspace path gets the same answer (existence does not leak).
    let err = api_err(
        alice_bindings
            .create(
                &PostParams::default(),
                &binding("other", "root:nope", EXPORT, json!([])),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "apibindings.apis.kcp.io \"other\" is forbidden: unable to create APIBinding: no permission to bind to export root:nope:widgets.example.io"
    );

    // With the grant in the export's workspace: created with finalizer and export label, then Bound.
    grant(
        root.clone(),
        "alice-bind",
        "alice",
        json!([{"apiGroups": ["apis.kcp.io"], "resources": ["apiexports"], "resourceNames": [EXPORT], "verbs": ["bind"]}]),
    )
    .await;
    let created = alice_bindings
        .create(&PostParams::default(), &binding("widgets", "root", EXPORT, json!([])))
        .await
        .unwrap();
    assert_eq!(
        created.metadata.finalizers,
        Some(vec!["apis.kcp.io/apibinding-finalizer".to_string()])
    );
    assert_eq!(
        created.metadata.labels.as_ref().unwrap()["internal.apis.kcp.io/export"],
        faros_embedded_kcp::names::export_hash("root", EXPORT)
    );
    assert_eq!(created.metadata.annotations.as_ref().unwrap()["kcp.io/path"], "root:t1");
    let bound = wait_bound(&alice_bindings, "widgets").await;
    let status = bound.status.clone().unwrap();
    assert_eq!(status.api_export_cluster_name.as_deref(), Some("root"));
    let br = &status.bound_resources.unwrap()[0];
    assert_eq!((br.group.as_str(), br.resource.as_str()), ("example.io", "widgets"));
    assert_eq!(br.schema.name, "v1.widgets.example.io");
    assert_eq!(br.schema.identity_hash, identity);
    assert_eq!(br.storage_versions, Some(vec!["v1".to_string()]));
    let t_ = |s: &str| (s.to_string(), "True".to_string(), None);
    assert_eq!(
        conditions(&bound),
        vec![
            t_("Ready"),
            t_("APIExportValid"),
            t_("BindingUpToDate"),
            t_("InitialBindingCompleted"),
            t_("PermissionClaimsApplied"),
            t_("PermissionClaimsValid")
        ]
    );

    // The endpoint slice publishes the virtual workspace URL once the first binding is Bound.
    let slice = wait_for(
        slices.clone(),
        EXPORT,
        |s| s.is_some_and(|s| !endpoints(s).is_empty()),
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        endpoints(&slice),
        vec![format!("{}/services/apiexport/root/{EXPORT}", t.server.url())]
    );
    let view = eventually("export view with t1", WAIT, || async {
        t.server
            .export_view("root", EXPORT)
            .filter(|v| v.bindings.contains_key("t1"))
    })
    .await;
    assert_eq!(view.identity_hash, identity);
    assert_eq!(view.bindings["t1"].binding_name, "widgets");
    assert_eq!(view.resources, ["example.io/v1/widgets"]);

    // CRUD of the bound resource in t1, with CR semantics.
    let ws: Api<DynamicObject> = Api::namespaced_with(alice_t1.clone(), "default", &widgets());
    let w = ws
        .create(
            &PostParams::default(),
            &dynamic(
                json!({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w1"},
                "spec": {"size": 3, "bogus": true}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        w.data["spec"],
        json!({"size": 3, "color": "blue"}),
        "defaulted and pruned"
    );
    assert_eq!(w.metadata.generation, Some(1));
    assert_eq!(w.metadata.annotations.as_ref().unwrap()["kcp.io/cluster"], "t1");
    let err = api_err(
        ws.create(
            &PostParams::default(),
            &dynamic(
                json!({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "bad"},
                "spec": {"size": 0}}),
            ),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert!(err.message.contains("spec.size"), "{}", err.message);
    let w = ws
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(w.metadata.generation, Some(2));
    let w = ws
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Ready"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        (w.data["status"]["phase"].as_str(), w.metadata.generation),
        (Some("Ready"), Some(2))
    );
    // kubectl shows the schema's printer column.
    let kubeconfig = t.dir.path().join("t1.kubeconfig");
    std::fs::write(&kubeconfig, t.server.kubeconfig("t1", "admin", &t.admin_token())).unwrap();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("kubectl")
            .args([
                "--kubeconfig",
                kubeconfig.to_str().unwrap(),
                "get",
                "widgets",
                "-n",
                "default",
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "kubectl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Vec<&str>> = stdout.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0], ["NAME", "SIZE", "AGE"]);
    assert_eq!(lines[1][..2], ["w1", "5"]);
    // Only t1 serves the resource.
    assert!(discovery_has(&alice_t1, "/apis/example.io/v1").await);
    let t2 = admin_in(&t, "t2").await;
    assert!(!discovery_has(&t2, "/apis/example.io/v1").await);

    // A second consumer; the export view has both.
    let t2_bindings: Api<v1alpha2::APIBinding> = Api::all(t2.clone());
    t2_bindings
        .create(&PostParams::default(), &binding("widgets", "root", EXPORT, json!([])))
        .await
        .unwrap();
    wait_bound(&t2_bindings, "widgets").await;
    eventually("export view with t1 and t2", WAIT, || async {
        t.server.export_view("root", EXPORT).filter(|v| v.bindings.len() == 2)
    })
    .await;

    // Deleting the t1 binding deletes its widgets; a foreign finalizer blocks it, reported in
    // BindingResourceDeleteSuccess, until removed. Then the resource leaves t1's discovery.
    ws.create(
        &PostParams::default(),
        &dynamic(json!({"apiVersion": "example.io/v1", "kind": "Widget",
            "metadata": {"name": "kept", "finalizers": ["example.io/keep"]}, "spec": {"size": 1}})),
    )
    .await
    .unwrap();
    alice_bindings
        .delete("widgets", &DeleteParams::default())
        .await
        .unwrap();
    let blocked = wait_for(
        alice_bindings.clone(),
        "widgets",
        |b| {
            b.is_some_and(|b| {
                conditions(b).contains(&(
                    "BindingResourceDeleteSuccess".into(),
                    "False".into(),
                    Some("SomeFinalizersRemain".into()),
                ))
            })
        },
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    let c = faros_core::kcp::Condition::find(
        blocked.status.as_ref().unwrap().conditions.as_deref(),
        "BindingResourceDeleteSuccess",
    )
    .unwrap();
    assert_eq!(
        c.message.as_deref(),
        Some("Some content in the workspace has finalizers remaining: example.io/keep in 1 resource instances")
    );
    assert_eq!(
        ws.get_opt("w1").await.unwrap().map(|o| o.metadata.name),
        None,
        "w1 deleted"
    );
    // While the binding is deleted, its resources take no new objects and discovery says so, once
    // it has caught up with the deletion (discovery follows bindings as kcp's does: eventually).
    eventually("discovery of a deleting binding without create", WAIT, || async {
        let req = http::Request::get("/apis/example.io/v1").body(Vec::new()).unwrap();
        let list: Value = alice_t1.request(req).await.ok()?;
        let widgets = list["resources"].as_array()?.iter().find(|r| r["name"] == "widgets")?;
        let verbs: Vec<&str> = widgets["verbs"].as_array()?.iter().filter_map(Value::as_str).collect();
        (!verbs.contains(&"create") && verbs.contains(&"delete")).then_some(())
    })
    .await;
    match ws
        .create(
            &PostParams::default(),
            &dynamic(json!({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "late"}, "spec": {"size": 1}})),
        )
        .await
    {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 403);
            assert!(s.message.contains("create not allowed while custom resource definition is terminating"), "{}", s.message);
        }
        other => panic!("a create during binding deletion was accepted: {other:?}"),
    }
    ws.patch(
        "kept",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    wait_for(alice_bindings.clone(), "widgets", |b| b.is_none(), WAIT)
        .await
        .unwrap();
    assert!(!discovery_has(&alice_t1, "/apis/example.io/v1").await);
    let t1_admin = admin_in(&t, "t1").await;
    let leftovers = t.server.stored_keys("t1").unwrap();
    assert!(!leftovers.iter().any(|k| k.group == "example.io"), "{leftovers:?}");
    drop(t1_admin);
    // t2 still binds: the URL stays; after the last binding it goes.
    let slice = slices.get(EXPORT).await.unwrap();
    assert_eq!(endpoints(&slice).len(), 1);
    t2_bindings.delete("widgets", &DeleteParams::default()).await.unwrap();
    wait_for(
        slices.clone(),
        EXPORT,
        |s| s.is_some_and(|s| endpoints(s).is_empty()),
        WAIT,
    )
    .await
    .unwrap();
    // Deleting the export deletes its slice (owner reference).
    Api::<v1alpha2::APIExport>::all(root.clone())
        .delete(EXPORT, &DeleteParams::default())
        .await
        .unwrap();
    wait_for(slices, EXPORT, |s| s.is_none(), WAIT).await.unwrap();
    t.server.shutdown().await;
}

#[tokio::test]
async fn claims_conflicts_versions_and_export_changes() {
    let t = start().await;
    let root = t.admin().await;
    let claims = json!([{"resource": "configmaps", "verbs": ["get", "list", "create"]},
                        {"resource": "secrets", "verbs": ["get"]}]);
    publish_widgets(&root, EXPORT, claims).await;
    make_cluster(&t, "t1").await;
    let t1 = admin_in(&t, "t1").await;
    let cms: Api<ConfigMap> = Api::namespaced(t1.clone(), "default");
    for (name, app) in [("match", "x"), ("other", "y")] {
        cms.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name, "labels": {"app": app}}})).unwrap(),
        )
        .await
        .unwrap();
    }
    let bindings: Api<v1alpha2::APIBinding> = Api::all(t1.clone());
    bindings
        .create(
            &PostParams::default(),
            &binding(
                "widgets",
                "root",
                EXPORT,
                json!([{"resource": "configmaps", "verbs": ["get", "list"], "state": "Accepted",
                        "selector": {"matchLabels": {"app": "x"}}},
                       {"resource": "secrets", "verbs": ["get"], "state": "Rejected", "selector": {"matchAll": true}}]),
            ),
        )
        .await
        .unwrap();
    let bound = wait_bound(&bindings, "widgets").await;
    let status = bound.status.clone().unwrap();
    assert_eq!(status.export_permission_claims.as_ref().map(Vec::len), Some(2));
    let applied = status.applied_permission_claims.unwrap();
    assert_eq!(applied.len(), 1);
    assert_eq!(
        (applied[0].resource.as_str(), applied[0].verbs.clone()),
        ("configmaps", vec!["get".to_string(), "list".to_string()])
    );
    let valid = faros_core::kcp::Condition::find(status.conditions.as_deref(), "PermissionClaimsValid").unwrap();
    assert_eq!(valid.reason.as_deref(), Some("PermissionClaimsMismatch"));
    assert_eq!(valid.severity.as_deref(), Some("Warning"));
    assert_eq!(
        valid.message.as_deref(),
        Some(
            "1 permission claim(s) have mismatched verbs or selectors (showing first 1): configmaps. (verbs: accepted [get list], exported [get list create])"
        )
    );
    // The view: accepted claim with intersected verbs and its selector; the rejected one absent.
    let view = eventually("export view with t1", WAIT, || async {
        t.server
            .export_view("root", EXPORT)
            .filter(|v| v.bindings.contains_key("t1"))
    })
    .await;
    let claims = &view.bindings["t1"].claims;
    assert_eq!(claims.len(), 1);
    assert_eq!(
        (claims[0].resource.as_str(), claims[0].verbs.clone()),
        ("configmaps", vec!["get".to_string(), "list".to_string()])
    );
    assert_eq!(claims[0].selector.clone(), Some("app=x".to_string()));
    // Claim labels on the matching existing object only.
    let label_key = faros_embedded_kcp::names::claim_label_key("root", EXPORT);
    let label_value = faros_embedded_kcp::names::claim_label_value("", "configmaps", "");
    let labels = |c: &ConfigMap| c.metadata.labels.clone().unwrap_or_default();
    let matched = cms.get("match").await.unwrap();
    assert_eq!(labels(&matched).get(&label_key), Some(&label_value));
    assert_eq!(labels(&cms.get("other").await.unwrap()).get(&label_key), None);

    // v1alpha1 clients see the same binding and export.
    let v1_bindings: Api<v1alpha1::APIBinding> = Api::all(t1.clone());
    let old = v1_bindings.get("widgets").await.unwrap();
    assert_eq!(old.metadata.uid, bound.metadata.uid);
    assert_eq!(
        serde_json::to_value(&old.spec.reference).unwrap(),
        json!({"export": {"path": "root", "name": EXPORT}})
    );
    assert_eq!(
        old.status.as_ref().and_then(|s| s.phase.clone()),
        Some(v1alpha2::APIBindingPhase::Bound)
    );
    let v1_export = Api::<v1alpha1::APIExport>::all(root.clone()).get(EXPORT).await.unwrap();
    assert_eq!(
        v1_export.spec.latest_resource_schemas,
        Some(vec!["v1.widgets.example.io".to_string()])
    );

    // A second export of the same group/resource bound in the same workspace: naming conflict.
    create_schema(&root, widget_schema("v2.widgets.example.io", "Widget", "widgets")).await;
    create_export(&root, "other.example.io", "v2.widgets.example.io", json!([])).await;
    bindings
        .create(
            &PostParams::default(),
            &binding("other", "root", "other.example.io", json!([])),
        )
        .await
        .unwrap();
    let conflict = wait_for(
        bindings.clone(),
        "other",
        |b| b.is_some_and(|b| conditions(b).iter().any(|c| c.2.as_deref() == Some("NamingConflicts"))),
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    let c = faros_core::kcp::Condition::find(
        conflict.status.as_ref().unwrap().conditions.as_deref(),
        "BindingUpToDate",
    )
    .unwrap();
    assert_eq!(
        c.message.as_deref(),
        Some(
            "Unable to bind APIs because they are bound by other APIBindings or CRDs: map[widgets.example.io:{widgets false}]"
        )
    );
    assert_eq!(conflict.phase(), Some(&v1alpha2::APIBindingPhase::Binding));
    assert!(!conflict.is_ready());

    // Export changes propagate: a new resource on the export shows up in the bound workspace.
    create_schema(&root, widget_schema("v1.gadgets.example.io", "Gadget", "gadgets")).await;
    Api::<v1alpha2::APIExport>::all(root.clone())
        .patch(
            EXPORT,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"resources": [
                {"group": "example.io", "name": "widgets", "schema": "v1.widgets.example.io", "storage": {"crd": {}}},
                {"group": "example.io", "name": "gadgets", "schema": "v1.gadgets.example.io", "storage": {"crd": {}}}]}})),
        )
        .await
        .unwrap();
    wait_for(
        bindings.clone(),
        "widgets",
        |b| {
            b.and_then(|b| b.status.as_ref())
                .and_then(|s| s.bound_resources.as_ref())
                .is_some_and(|r| r.len() == 2)
        },
        WAIT,
    )
    .await
    .unwrap();
    let gadgets: Api<DynamicObject> =
        Api::namespaced_with(t1.clone(), "default", &ar("example.io", "v1", "Gadget", "gadgets"));
    gadgets
        .create(
            &PostParams::default(),
            &dynamic(json!({"apiVersion": "example.io/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"size": 2}})),
        )
        .await
        .unwrap();
    t.server.shutdown().await;
}

#[tokio::test]
async fn bound_resources_survive_restart() {
    faros_core::telemetry::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let mut config = faros_embedded_kcp::Config::new(dir.path());
    let server = faros_embedded_kcp::Server::start(config.clone()).await.unwrap();
    let client_for = |server: &faros_embedded_kcp::Server, cluster: &str| {
        let yaml = server.admin_kube_config_yaml(cluster);
        async move {
            let kc = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
            kube::Client::try_from(
                kube::Config::from_custom_kubeconfig(kc, &Default::default())
                    .await
                    .unwrap(),
            )
            .unwrap()
        }
    };
    let root = client_for(&server, "root").await;
    publish_widgets(&root, EXPORT, json!([])).await;
    let bindings: Api<v1alpha2::APIBinding> = Api::all(root.clone());
    bindings
        .create(&PostParams::default(), &binding("widgets", "", EXPORT, json!([])))
        .await
        .unwrap();
    wait_bound(&bindings, "widgets").await;
    let ws: Api<DynamicObject> = Api::namespaced_with(root.clone(), "default", &widgets());
    ws.create(
        &PostParams::default(),
        &dynamic(
            json!({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}),
        ),
    )
    .await
    .unwrap();
    server.shutdown().await;
    config.listen = "127.0.0.1:0".parse().unwrap();
    let server = faros_embedded_kcp::Server::start(config).await.unwrap();
    let root = client_for(&server, "root").await;
    let ws: Api<DynamicObject> = Api::namespaced_with(root, "default", &widgets());
    let got = eventually("widgets served after restart", WAIT, || async {
        ws.get("w").await.ok()
    })
    .await;
    assert_eq!(got.data["spec"], json!({"size": 1, "color": "blue"}), "{got:?}");
    server.shutdown().await;
}

/// A binding's change recomputes only its consumer's entry of the export's view; a restarted
/// server builds the view whole from storage. After binds, a claim rejected later and a consumer
/// that left, both views must be the same.
#[tokio::test]
async fn the_view_kept_per_consumer_equals_the_view_built_whole() {
    let t = start().await;
    let root = t.admin().await;
    publish_widgets(
        &root,
        EXPORT,
        json!([{"resource": "configmaps", "verbs": ["get", "list"]}]),
    )
    .await;
    let claim = |state: &str| {
        json!([{"resource": "configmaps", "verbs": ["get", "list"], "state": state,
                "selector": {"matchAll": true}}])
    };
    for (cluster, claims) in [("t1", claim("Accepted")), ("t2", json!([])), ("t3", claim("Accepted"))] {
        make_cluster(&t, cluster).await;
        let bindings: Api<v1alpha2::APIBinding> = Api::all(admin_in(&t, cluster).await);
        bindings
            .create(&PostParams::default(), &binding("widgets", "root", EXPORT, claims))
            .await
            .unwrap();
        wait_bound(&bindings, "widgets").await;
    }
    let t3: Api<v1alpha2::APIBinding> = Api::all(admin_in(&t, "t3").await);
    t3.delete("widgets", &DeleteParams::default()).await.unwrap();
    wait_for(t3, "widgets", |b| b.is_none(), WAIT).await.unwrap();
    let t1: Api<v1alpha2::APIBinding> = Api::all(admin_in(&t, "t1").await);
    t1.patch(
        "widgets",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"permissionClaims": claim("Rejected")}})),
    )
    .await
    .unwrap();
    let kept = eventually("t1 without claims and t2, t3 gone", WAIT, || async {
        t.server
            .export_view("root", EXPORT)
            .filter(|v| v.bindings.len() == 2 && v.bindings.get("t1").is_some_and(|c| c.claims.is_empty()))
    })
    .await;
    assert!(kept.bindings.contains_key("t2"), "{kept:?}");

    let common::TestServer { server, dir } = t;
    server.shutdown().await;
    let mut config = faros_embedded_kcp::Config::new(dir.path().join("state"));
    config.token_file = Some(dir.path().join("tokens.csv"));
    let server = faros_embedded_kcp::Server::start(config).await.unwrap();
    let whole = eventually("the view rebuilt after a restart", WAIT, || async {
        server.export_view("root", EXPORT).filter(|v| v.bindings.len() == 2)
    })
    .await;
    assert_eq!(kept, whole);
    server.shutdown().await;
}

/// kcp's move of a binding when its export names a new schema: the old schema stays bound while
/// the new one's bound copy is made (`BindingUpToDate` False, `WaitingForEstablished`, seen on a
/// watch), then `boundResources` names the new one, and objects stored before are read under it.
#[tokio::test]
async fn an_export_moved_to_a_new_schema_moves_its_bindings_once_established() {
    let t = start().await;
    let root = t.admin().await;
    publish_widgets(&root, EXPORT, json!([])).await;
    make_cluster(&t, "t1").await;
    let t1 = admin_in(&t, "t1").await;
    let bindings: Api<v1alpha2::APIBinding> = Api::all(t1.clone());
    bindings
        .create(&PostParams::default(), &binding("widgets", "root", EXPORT, json!([])))
        .await
        .unwrap();
    let bound = wait_bound(&bindings, "widgets").await;
    let ws: Api<DynamicObject> = Api::namespaced_with(t1.clone(), "default", &widgets());
    eventually("a widget in t1", WAIT, || async {
        ws.create(
            &PostParams::default(),
            &dynamic(
                json!({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w1"},
                "spec": {"size": 2}}),
            ),
        )
        .await
        .ok()
    })
    .await;

    let rv = bound.metadata.resource_version.clone().unwrap();
    let mut events = bindings
        .watch(&kube::api::WatchParams::default().fields("metadata.name=widgets"), &rv)
        .await
        .unwrap()
        .boxed();
    let mut v2 = widget_schema("v2.widgets.example.io", "Widget", "widgets");
    v2.data["spec"]["versions"][0]["schema"]["properties"]["spec"]["properties"]["shape"] =
        json!({"type": "string", "default": "round"});
    create_schema(&root, v2).await;
    Api::<v1alpha2::APIExport>::all(root.clone())
        .patch(
            EXPORT,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"resources": [{"group": "example.io", "name": "widgets",
                "schema": "v2.widgets.example.io", "storage": {"crd": {}}}]}})),
        )
        .await
        .unwrap();

    let mut waited = false;
    let moved = tokio::time::timeout(WAIT, async {
        while let Some(event) = events.try_next().await.unwrap() {
            let kube::api::WatchEvent::Modified(b) = event else {
                continue;
            };
            let status = b.status.clone().unwrap_or_default();
            let schema = status.bound_resources.clone().unwrap_or_default()[0]
                .schema
                .name
                .clone();
            let up_to_date = status
                .conditions
                .unwrap_or_default()
                .into_iter()
                .find(|c| c.type_ == "BindingUpToDate")
                .unwrap();
            if up_to_date.reason.as_deref() == Some("WaitingForEstablished") {
                assert_eq!(schema, "v1.widgets.example.io", "the old schema stays bound meanwhile");
                assert_eq!(
                    up_to_date.message.as_deref(),
                    Some("Waiting for API(s) to be established: v2.widgets.example.io")
                );
                waited = true;
            }
            if schema == "v2.widgets.example.io" {
                return b;
            }
        }
        panic!("the watch ended");
    })
    .await
    .expect("the binding moves to the new schema");
    assert!(waited, "BindingUpToDate was WaitingForEstablished before the move");
    assert!(
        conditions(&moved).contains(&("BindingUpToDate".into(), "True".into(), None)),
        "{:?}",
        conditions(&moved)
    );
    let br = &moved.status.unwrap().bound_resources.unwrap()[0];
    assert_eq!(br.storage_versions.as_deref(), Some(&["v1".to_string()][..]));
    // The stored widget, read under the new schema: its default applies, nothing was rewritten.
    let w1 = ws.get("w1").await.unwrap();
    assert_eq!(
        (&w1.data["spec"]["size"], &w1.data["spec"]["shape"]),
        (&json!(2), &json!("round"))
    );
}
