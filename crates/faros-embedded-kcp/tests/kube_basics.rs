//! Kubernetes behaviour kcp inherits and clients rely on without noticing: `Secret.stringData`,
//! each namespace's `default` ServiceAccount and `kube-root-ca.crt`, in-cluster ServiceAccount
//! tokens on bare paths, `metadata.labels: null`, and kcp objects without `spec` where kcp's CRDs
//! allow it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::TestServer;
use common::kcp::{ar, dynamic};
use faros_core::wait::wait_for;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn secret_string_data_is_merged_into_data_on_every_write() {
    let t = TestServer::start().await;
    let secrets: Api<Secret> = Api::namespaced(t.admin().await, "default");
    let created = secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "s"},
                "data": {"keep": "a2VlcA==", "over": "b2xk"}, "stringData": {"over": "new", "plain": "text"}}))
            .unwrap(),
        )
        .await
        .unwrap();
    let data = created.data.clone().unwrap();
    assert_eq!(data["plain"].0, b"text");
    assert_eq!(data["over"].0, b"new", "stringData wins over data");
    assert_eq!(data["keep"].0, b"keep");
    assert!(created.string_data.is_none(), "stringData is write-only");
    // Stored that way, not only answered.
    let read = secrets.get("s").await.unwrap();
    assert_eq!(read.data, created.data);
    assert!(read.string_data.is_none());

    // A merge patch and a server-side apply with stringData merge too.
    let patched = secrets
        .patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"patched": "yes"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data.as_ref().unwrap()["patched"].0, b"yes");
    assert_eq!(patched.data.as_ref().unwrap()["plain"].0, b"text");
    let applied = secrets
        .patch(
            "applied",
            &PatchParams::apply("test").force(),
            &Patch::Apply(
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "applied"},
                "stringData": {"token": "abc"}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(applied.data.as_ref().unwrap()["token"].0, b"abc");
    assert!(secrets.get("applied").await.unwrap().string_data.is_none());

    // Replace (PUT) with stringData only.
    let mut replace = secrets.get("s").await.unwrap();
    replace.data = None;
    replace.string_data = Some([("only".to_string(), "this".to_string())].into());
    let replaced = secrets.replace("s", &PostParams::default(), &replace).await.unwrap();
    let data = replaced.data.unwrap();
    assert_eq!(data.len(), 1);
    assert_eq!(data["only"].0, b"this");

    // kubectl's manifests use stringData all the time.
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, t.server.admin_kube_config_yaml("root")).unwrap();
    let manifest = dir.path().join("secret.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: Secret\nmetadata: {name: from-kubectl, namespace: default}\nstringData: {password: s3cret}\n",
    )
    .unwrap();
    // Blocking: run kubectl off the runtime the in-process server answers on.
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["apply", "-f"])
            .arg(&manifest)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = secrets.get("from-kubectl").await.unwrap();
    assert_eq!(s.data.unwrap()["password"].0, b"s3cret");

    // stringData values must be strings: refused, never silently dropped.
    let resp = t
        .http()
        .post(t.url("/api/v1/namespaces/default/secrets"))
        .bearer_auth(t.admin_token())
        .json(&json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bad"}, "stringData": {"n": 1}}))
        .send()
        .await
        .unwrap();
    assert!(matches!(resp.status().as_u16(), 400 | 422), "{}", resp.status());
    assert_eq!(api_err(secrets.get("bad").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn every_namespace_gets_a_default_service_account_and_the_root_ca() {
    let t = TestServer::start().await;
    let client = t.admin().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "team"}})).unwrap(),
        )
        .await
        .unwrap();
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "team");
    let sa = wait_for(sas.clone(), "default", |s| s.is_some(), WAIT)
        .await
        .unwrap()
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    let cm = wait_for(cms.clone(), "kube-root-ca.crt", |c| c.is_some(), WAIT)
        .await
        .unwrap()
        .unwrap();
    let ca = cm.data.as_ref().unwrap()["ca.crt"].clone();
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");
    assert_eq!(ca, t.server.ca_pem(), "the CA clients must trust for this server");

    // Deleted, both come back (a new ServiceAccount, not the old one).
    sas.delete("default", &DeleteParams::default()).await.unwrap();
    let old_uid = sa.metadata.uid.clone();
    wait_for(sas, "default", |s| s.is_some_and(|s| s.metadata.uid != old_uid), WAIT)
        .await
        .unwrap();
    cms.delete("kube-root-ca.crt", &DeleteParams::default()).await.unwrap();
    wait_for(cms.clone(), "kube-root-ca.crt", |c| c.is_some(), WAIT)
        .await
        .unwrap();
    // Edited, the content is restored.
    cms.patch(
        "kube-root-ca.crt",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"ca.crt": "tampered", "extra": "x"}})),
    )
    .await
    .unwrap();
    wait_for(
        cms,
        "kube-root-ca.crt",
        |c| c.is_some_and(|c| c.data == Some([("ca.crt".to_string(), ca.clone())].into())),
        WAIT,
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn service_account_tokens_without_a_cluster_prefix_address_their_own_workspace() {
    let t = TestServer::start().await;
    common::kcp::make_cluster(&t, "team").await;
    let admin = common::kcp::admin_in(&t, "team").await;
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "app"}})).unwrap(),
    )
    .await
    .unwrap();
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), "default");
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "app-token",
                "annotations": {"kubernetes.io/service-account.name": "app"}},
                "type": "kubernetes.io/service-account-token"}))
            .unwrap(),
        )
        .await
        .unwrap();
    let secret = wait_for(
        secrets,
        "app-token",
        |s| s.is_some_and(|s| s.data.as_ref().is_some_and(|d| d.contains_key("token"))),
        WAIT,
    )
    .await
    .unwrap()
    .unwrap();
    let token = String::from_utf8(secret.data.unwrap()["token"].0.clone()).unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(admin, "default");
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "mine"}})).unwrap(),
    )
    .await
    .unwrap();
    // The SA may read configmaps in its workspace.
    common::kcp::grant(
        common::kcp::admin_in(&t, "team").await,
        "app-reads",
        "system:serviceaccount:default:app",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]),
    )
    .await;
    // Bare path, as an in-cluster client (KUBERNETES_SERVICE_HOST + the mounted token) sends it.
    let resp = t
        .http()
        .get(t.url("/api/v1/namespaces/default/configmaps/mine"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_ne!(body["metadata"]["annotations"]["kcp.io/cluster"], "root");
    assert_eq!(body["metadata"]["name"], "mine");
    // An explicit /clusters/root is still root, where this SA has no access.
    let resp = t
        .http()
        .get(t.url("/clusters/root/api/v1/namespaces/default/configmaps/mine"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
}

#[tokio::test]
async fn null_labels_and_missing_spec_are_accepted_where_kcp_accepts_them() {
    let t = TestServer::start().await;
    let client = t.admin().await;
    let cms: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &ar("", "v1", "ConfigMap", "configmaps"));
    let created = cms
        .create(
            &PostParams::default(),
            &dynamic(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "n", "labels": null, "annotations": null}})),
        )
        .await
        .unwrap();
    assert!(created.metadata.labels.is_none());
    let patched = cms
        .patch(
            "n",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.labels.unwrap()["a"], "b");
    let mut replace = cms.get("n").await.unwrap();
    let mut raw = serde_json::to_value(&replace).unwrap();
    raw["metadata"]["labels"] = serde_json::Value::Null;
    replace = dynamic(raw);
    let replaced = cms.replace("n", &PostParams::default(), &replace).await.unwrap();
    assert!(replaced.metadata.labels.is_none());

    // kcp's CRDs do not require spec on APIExports, endpoint slices, schemas' peers or WorkspaceTypes.
    for (group, version, kind, plural) in [
        ("apis.kcp.io", "v1alpha2", "APIExport", "apiexports"),
        ("apis.kcp.io", "v1alpha1", "APIExport", "apiexports"),
        ("tenancy.kcp.io", "v1alpha1", "WorkspaceType", "workspacetypes"),
    ] {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar(group, version, kind, plural));
        let name = format!("no-spec-{}", version);
        api.create(
            &PostParams::default(),
            &dynamic(json!({"apiVersion": format!("{group}/{version}"), "kind": kind, "metadata": {"name": name}})),
        )
        .await
        .unwrap_or_else(|e| panic!("{kind} {version} without spec: {e}"));
    }
    // A Workspace requires it but kcp's CRD defaults it to `{}` first, so one without is created
    // (kcp v0.32 answers 201, e2e/kcp-diff/recorded/).
    let workspaces: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ar("tenancy.kcp.io", "v1alpha1", "Workspace", "workspaces"),
    );
    let ws = workspaces
        .create(
            &PostParams::default(),
            &dynamic(
                json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "no-spec"}}),
            ),
        )
        .await
        .unwrap_or_else(|e| panic!("Workspace without spec: {e}"));
    assert!(
        ws.data.get("spec").is_some_and(serde_json::Value::is_object),
        "{:?}",
        ws.data
    );
    // APIBindings do require it, as kcp's CRD says.
    for (group, version, kind, plural) in [("apis.kcp.io", "v1alpha2", "APIBinding", "apibindings")] {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar(group, version, kind, plural));
        let err = api_err(
            api.create(
                &PostParams::default(),
                &dynamic(json!({"apiVersion": format!("{group}/{version}"), "kind": kind, "metadata": {"name": "x"}})),
            )
            .await
            .unwrap_err(),
        );
        assert_eq!(err.code, 422, "{kind}: {err:?}");
        assert!(err.message.contains("spec: Required value"), "{kind}: {}", err.message);
    }
}
