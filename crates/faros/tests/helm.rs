//! helm (client-go: protobuf for its release Secrets and their DeleteOptions) against `faros dev`:
//! a chart of Providers and a ConfigMap in `root:faros:system:providers` is installed, upgraded,
//! rolled back, listed in history and uninstalled, and after each step the platform is in the state
//! helm reports — down to no release Secret and no Provider after `helm uninstall`.
//!
//! Needs `helm` 3 (or `FAROS_HELM`); `.ci/run` installs it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

mod devproc;

use std::path::Path;
use std::time::Duration;

use faros_core::conditions::is_true;
use faros_core::provider::Provider;
use faros_core::wait::wait_for;
use faros_test_support::helm::Helm;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(90);
const CLUSTER: &str = "root:faros:system:providers";

const CHART: &str = "apiVersion: v2\nname: providers\nversion: 0.1.0\n";
const VALUES: &str = "displayName: one\nsecond: true\n";
const TEMPLATE: &str = r#"apiVersion: admin.faros.sh/v1alpha1
kind: Provider
metadata:
  name: {{ .Release.Name }}-a
spec:
  displayName: {{ .Values.displayName | quote }}
{{- if .Values.second }}
---
apiVersion: admin.faros.sh/v1alpha1
kind: Provider
metadata:
  name: {{ .Release.Name }}-b
spec:
  displayName: {{ .Values.displayName | quote }}
{{- end }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
data:
  displayName: {{ .Values.displayName | quote }}
"#;

/// helm pointed at the providers workspace of a `faros dev`.
struct InWorkspace {
    helm: Helm,
    kubeconfig: std::path::PathBuf,
    server: String,
}

impl InWorkspace {
    /// Runs helm in the providers workspace, namespace `default`, off the test's runtime.
    async fn run(&self, args: &[&str]) -> String {
        let out = tokio::process::Command::new(self.helm.program())
            .args(args)
            .args(["--namespace", "default", "--kubeconfig"])
            .arg(&self.kubeconfig)
            .args(["--kube-apiserver", &self.server])
            .output()
            .await
            .expect("helm runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "helm {args:?} failed:\n{text}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `(revision, status, description)` of every revision, oldest first.
    async fn history(&self, release: &str) -> Vec<(u64, String, String)> {
        let out = self.run(&["history", release, "-o", "json"]).await;
        let revisions: Vec<Value> = serde_json::from_str(&out).unwrap();
        revisions
            .iter()
            .map(|r| {
                (
                    r["revision"].as_u64().unwrap(),
                    r["status"].as_str().unwrap().to_string(),
                    r["description"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }
}

fn write_chart(dir: &Path) {
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(dir.join("Chart.yaml"), CHART).unwrap();
    std::fs::write(dir.join("values.yaml"), VALUES).unwrap();
    std::fs::write(dir.join("templates/objects.yaml"), TEMPLATE).unwrap();
}

/// Waits until Provider `name` is provisioned (Ready) with `display_name`.
async fn provider_ready(api: &Api<Provider>, name: &str, display_name: &str) {
    wait_for(
        api.clone(),
        name,
        |p| {
            p.is_some_and(|p| {
                p.spec.display_name.as_deref() == Some(display_name)
                    && p.status.as_ref().is_some_and(|s| is_true(&s.conditions, "Ready"))
            })
        },
        WAIT,
    )
    .await
    .unwrap_or_else(|e| panic!("Provider {name} never became Ready with displayName {display_name}: {e}"));
}

async fn gone<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + serde::Serialize
        + Send
        + Sync
        + 'static,
{
    wait_for(api.clone(), name, |o| o.is_none(), WAIT)
        .await
        .unwrap_or_else(|e| panic!("{name} was never deleted: {e}"));
}

/// The release Secrets helm keeps, by name.
async fn release_secrets(secrets: &Api<Secret>, release: &str) -> Vec<String> {
    let lp = ListParams::default().labels(&format!("owner=helm,name={release}"));
    let mut names: Vec<String> = secrets
        .list(&lp)
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_installs_upgrades_rolls_back_and_uninstalls_a_chart_of_providers() {
    let bin = Helm::find().unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap();
    let dev = devproc::launch(&dir.path().join("state"))
        .args(["--no-quickstart"])
        .start()
        .await
        .unwrap();
    let chart = dir.path().join("chart");
    write_chart(&chart);
    let helm = InWorkspace {
        helm: bin,
        kubeconfig: dev.kubeconfig.clone(),
        server: format!("{}:faros:system:providers", dev.server),
    };
    let factory = faros_core::client::ClientFactory::new(dev.admin_config().await.unwrap()).unwrap();
    let client = factory.cluster(CLUSTER).unwrap();
    let providers: Api<Provider> = Api::all(client.clone());
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(client, "default");
    let chart = chart.to_str().unwrap();
    let display_name = |cm: Option<ConfigMap>| cm.and_then(|c| c.data).and_then(|d| d.get("displayName").cloned());

    // install: both Providers provisioned, the ConfigMap written, one release Secret.
    helm.run(&["install", "p", chart]).await;
    provider_ready(&providers, "p-a", "one").await;
    provider_ready(&providers, "p-b", "one").await;
    assert_eq!(
        display_name(config_maps.get_opt("p-settings").await.unwrap()).as_deref(),
        Some("one")
    );
    assert_eq!(release_secrets(&secrets, "p").await, ["sh.helm.release.v1.p.v1"]);

    // upgrade: new values, and the second Provider leaves the chart, so helm deletes it.
    helm.run(&["upgrade", "p", chart, "--set", "displayName=two,second=false"])
        .await;
    provider_ready(&providers, "p-a", "two").await;
    gone(&providers, "p-b").await;
    assert_eq!(
        display_name(config_maps.get_opt("p-settings").await.unwrap()).as_deref(),
        Some("two")
    );

    // rollback to 1: the first values and the second Provider come back.
    helm.run(&["rollback", "p", "1"]).await;
    provider_ready(&providers, "p-a", "one").await;
    provider_ready(&providers, "p-b", "one").await;
    assert_eq!(
        display_name(config_maps.get_opt("p-settings").await.unwrap()).as_deref(),
        Some("one")
    );

    // history: what helm recorded is what happened.
    let history = helm.history("p").await;
    let statuses: Vec<(u64, &str)> = history.iter().map(|(r, s, _)| (*r, s.as_str())).collect();
    assert_eq!(statuses, [(1, "superseded"), (2, "superseded"), (3, "deployed")]);
    assert_eq!(history[2].2, "Rollback to 1");
    assert_eq!(
        release_secrets(&secrets, "p").await,
        [
            "sh.helm.release.v1.p.v1",
            "sh.helm.release.v1.p.v2",
            "sh.helm.release.v1.p.v3"
        ]
    );
    let listed = helm.run(&["list", "-o", "json"]).await;
    let listed: Vec<Value> = serde_json::from_str(&listed).unwrap();
    assert_eq!((listed.len(), listed[0]["status"].as_str()), (1, Some("deployed")));

    // uninstall: helm deletes its release Secrets (protobuf DeleteOptions) and every object.
    helm.run(&["uninstall", "p"]).await;
    assert_eq!(release_secrets(&secrets, "p").await, Vec::<String>::new());
    gone(&config_maps, "p-settings").await;
    gone(&providers, "p-a").await;
    gone(&providers, "p-b").await;
    let listed = helm.run(&["list", "-o", "json"]).await;
    assert_eq!(
        serde_json::from_str::<Vec<Value>>(&listed).unwrap(),
        Vec::<Value>::new()
    );
}
