//! The Helm charts under `charts/`, rendered by the real helm and checked three ways:
//!
//! 1. every chart and every `ci/*-values.yaml` passes `helm lint --strict`, renders, and validates
//!    offline against the Kubernetes schemas (`kubernetes-validate --strict`); every pod is locked down
//!    and every in-cluster URL names a Service the render contains;
//! 2. bad values are refused by the schemas (or the templates) with a message naming the key;
//! 3. the **contract**: every container of the umbrella chart is run as a process of the real binary
//!    with exactly its rendered command line and environment. File paths it reads must come from a
//!    rendered volume mount (materialised from the rendered Secrets and ConfigMaps, or from the
//!    Secrets the platform itself publishes) or from the image (the Dockerfile's `COPY`); each
//!    long-running container must report ready on its rendered probe. The quickstart's init container
//!    must publish its CatalogEntry with in-cluster URLs. A renamed flag or a moved mount path fails it.
//!    Then every chart's `helm test` Pod runs its curl, as rendered, against the running components.
//!
//! The contract test substitutes two things a pod gets from its node: the in-cluster ServiceAccount
//! (a second `faros kcp` stands in for the hosting cluster's API, passed as `FAROS_HOSTING_KUBECONFIG`
//! and `FAROS_MIRROR_KUBECONFIG`), and cluster DNS (the values point the URLs clients dial at
//! `localhost`; the in-cluster defaults are checked by test 1 instead).
//!
//! Needs `helm` (or `FAROS_HELM`) and `kubernetes-validate` on PATH (`.ci/run` installs both), and
//! curl (the `helm test` Pods' command).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use faros_core::catalog::CatalogEntry;
use faros_core::provider::Provider;
use faros_test_support::eventually_some;
use faros_test_support::helm::Helm;
use faros_test_support::kubeconfig::{client_from_yaml, client_once_written};
use faros_test_support::ports::free_port;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

#[path = "charts/argocd_health.rs"]
mod argocd_health;
#[path = "charts/gitops_docs.rs"]
mod gitops_docs;
#[path = "charts/knobs.rs"]
mod knobs;
#[path = "charts/providers_namespace.rs"]
mod providers_namespace;
#[path = "charts/tlsroute.rs"]
mod tlsroute;
#[path = "charts/wiring.rs"]
mod wiring;

const NAMESPACE: &str = "faros";
const RELEASE: &str = "r";
/// The Kubernetes versions rendered manifests are validated against (`kubernetes-validate` bundles
/// their schemas): the oldest the charts declare (`kubeVersion`; the hub's preStop `sleep` needs
/// 1.30), one between, and the newest the pinned `kubernetes-validate` knows.
const KUBERNETES_VERSIONS: [&str; 3] = ["1.30.0", "1.33.0", "1.37.0"];
/// Kinds from CRDs that `kubernetes-validate` has no schema for.
const CRD_KINDS: [&str; 4] = ["Certificate", "Issuer", "ServiceMonitor", "TLSRoute"];
const WAIT: Duration = Duration::from_secs(90);

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn helm() -> Helm {
    Helm::find().unwrap_or_else(|e| panic!("{e}"))
}

fn run(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// A copy of `charts/` with the umbrella's dependencies vendored, so tests never write the tree.
fn charts() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let (ok, text) = run(Command::new("cp").arg("-r").arg(root().join("charts")).arg(dir.path()));
    assert!(ok, "copying charts: {text}");
    helm()
        .dependency_update(&dir.path().join("charts/faros"))
        .unwrap_or_else(|e| panic!("helm dependency update charts/faros: {}", e.output()));
    dir
}

fn chart_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("charts"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("Chart.yaml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn ci_values(chart: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(chart.join("ci"))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.to_string_lossy().ends_with("-values.yaml"));
    files.sort();
    assert!(!files.is_empty(), "{} has no ci/*-values.yaml", chart.display());
    files
}

/// `helm template` output as objects; `Err` is helm's message.
fn template(chart: &Path, values: &[&Path], sets: &[&str]) -> Result<(String, Vec<Value>), String> {
    let text = helm()
        .template(RELEASE, NAMESPACE, chart, values, sets)
        .map_err(|e| e.output())?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
    Ok((text, docs.into_iter().filter(|d| d.is_object()).collect()))
}

fn kind<'a>(docs: &'a [Value], kind: &str) -> impl Iterator<Item = &'a Value> + 'a {
    let kind = kind.to_string();
    docs.iter().filter(move |d| d["kind"] == kind.as_str())
}

fn pod_specs(docs: &[Value]) -> Vec<(String, &Value)> {
    docs.iter()
        .filter(|d| matches!(d["kind"].as_str(), Some("Deployment" | "StatefulSet")))
        .map(|d| {
            (
                d["metadata"]["name"].as_str().unwrap().to_string(),
                &d["spec"]["template"]["spec"],
            )
        })
        .collect()
}

/// The namespace of workload `name` (the release namespace unless the template names another).
fn namespace_of(docs: &[Value], name: &str) -> String {
    docs.iter()
        .find(|d| d["metadata"]["name"] == name && d["spec"]["template"].is_object())
        .and_then(|d| d["metadata"]["namespace"].as_str())
        .unwrap_or(NAMESPACE)
        .to_string()
}

fn containers(pod: &Value) -> impl Iterator<Item = (bool, &Value)> {
    let init = pod["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| (true, c));
    init.chain(pod["containers"].as_array().into_iter().flatten().map(|c| (false, c)))
}

/// Least privilege on every pod and container.
fn check_locked_down(file: &str, name: &str, pod: &Value) {
    let sc = &pod["securityContext"];
    assert_eq!(sc["runAsNonRoot"], true, "{file}: {name}: runAsNonRoot");
    assert_eq!(sc["runAsUser"], 65532, "{file}: {name}: runAsUser");
    assert_eq!(
        sc["seccompProfile"]["type"], "RuntimeDefault",
        "{file}: {name}: seccomp"
    );
    for (_, c) in containers(pod) {
        let c_name = c["name"].as_str().unwrap();
        let csc = &c["securityContext"];
        assert_eq!(
            csc["readOnlyRootFilesystem"], true,
            "{file}: {name}/{c_name}: read-only root"
        );
        assert_eq!(
            csc["allowPrivilegeEscalation"], false,
            "{file}: {name}/{c_name}: privilege escalation"
        );
        assert_eq!(
            csc["capabilities"]["drop"],
            json!(["ALL"]),
            "{file}: {name}/{c_name}: capabilities"
        );
        assert!(
            c["resources"]["limits"]["memory"].is_string(),
            "{file}: {name}/{c_name}: memory limit"
        );
        assert!(
            c["resources"]["requests"]["cpu"].is_string(),
            "{file}: {name}/{c_name}: cpu request"
        );
    }
    for (init, c) in containers(pod) {
        if !init {
            assert!(
                c["readinessProbe"]["httpGet"].is_object(),
                "{file}: {name}: readiness probe"
            );
            assert!(
                c["livenessProbe"]["httpGet"].is_object(),
                "{file}: {name}: liveness probe"
            );
        }
    }
}

/// Every `<scheme>://<name>.<namespace>.svc:<port>` a container is given, where `<name>` starts with
/// `own`, names a rendered Service with that port.
fn check_in_cluster_urls(file: &str, docs: &[Value], own: &str) {
    let services: BTreeMap<String, Vec<u64>> = kind(docs, "Service")
        .map(|s| {
            let ports = s["spec"]["ports"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["port"].as_u64().unwrap());
            (s["metadata"]["name"].as_str().unwrap().to_string(), ports.collect())
        })
        .collect();
    let suffix = format!(".{NAMESPACE}.svc:");
    for (pod_name, pod) in pod_specs(docs) {
        for (_, c) in containers(pod) {
            let args = c["args"].as_array().into_iter().flatten().filter_map(Value::as_str);
            let env = c["env"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e["value"].as_str());
            for value in args.chain(env) {
                let Some(at) = value.find("://") else { continue };
                let rest = &value[at + 3..];
                let Some(dot) = rest.find(&suffix) else { continue };
                let service = &rest[..dot];
                if !service.starts_with(own) {
                    continue;
                }
                let port: u64 = rest[dot + suffix.len()..]
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert!(
                    services.get(service).is_some_and(|p| p.contains(&port)),
                    "{file}: {pod_name} is given {value}, but the render has no Service {service} with port {port}"
                );
            }
        }
    }
}

/// `yaml` validates offline against the Kubernetes schemas of every version of
/// [`KUBERNETES_VERSIONS`]; only the CRD kinds have none.
fn validate(dir: &Path, label: &str, yaml: &str) {
    let rendered = dir.join("rendered.yaml");
    std::fs::write(&rendered, yaml).unwrap();
    for version in KUBERNETES_VERSIONS {
        let (ok, text) = run(Command::new("kubernetes-validate")
            .args(["--strict", "--quiet", "-k", version])
            .arg(&rendered));
        assert!(ok, "kubernetes-validate -k {version} {label}:\n{text}");
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            assert!(
                line.contains("Couldn't find schema") && CRD_KINDS.iter().any(|k| line.contains(&format!("kind {k} "))),
                "kubernetes-validate -k {version} {label}: {line}"
            );
        }
    }
}

#[test]
fn every_chart_lints_renders_and_validates_for_every_ci_values_file() {
    let copy = charts();
    for chart in chart_names() {
        let dir = copy.path().join("charts").join(&chart);
        for values in ci_values(&dir) {
            let file = format!("{chart}/ci/{}", values.file_name().unwrap().to_string_lossy());
            helm()
                .lint(&dir, true, &[&values], &[])
                .unwrap_or_else(|e| panic!("helm lint --strict {file}:\n{}", e.output()));
            let (yaml, docs) = template(&dir, &[&values], &[]).unwrap_or_else(|e| panic!("{file}: {e}"));
            // GitOps tools render without the cluster and compare: nothing may differ between renders.
            let (again, _) = template(&dir, &[&values], &[]).unwrap();
            assert!(
                yaml == again,
                "{file}: two renders differ (lookup or random generation in a template)"
            );
            validate(copy.path(), &file, &yaml);
            for (name, pod) in pod_specs(&docs) {
                check_locked_down(&file, &name, pod);
            }
            // Only the umbrella renders every Service; a component chart's own URLs must resolve in it.
            let own = if chart == "faros" {
                String::new()
            } else {
                format!("{RELEASE}-{chart}")
            };
            check_in_cluster_urls(&file, &docs, &own);
        }
    }
}

#[test]
fn umbrella_defaults_wire_the_components_together() {
    let copy = charts();
    let (defaults, _) = template(&copy.path().join("charts/faros"), &[], &[]).unwrap();
    // Off by default: its pod waits for a Provider registered after the install, which would hold
    // `helm install --wait` forever.
    assert!(
        !defaults.contains("faros-provider-quickstart"),
        "quickstart is on by default"
    );
    let (_, docs) = template(
        &copy.path().join("charts/faros"),
        &[],
        &["faros-provider-quickstart.enabled=true"],
    )
    .unwrap();
    let pods: BTreeMap<String, &Value> = pod_specs(&docs).into_iter().collect();
    let arg = |pod: &str, flag: &str| -> String {
        let pod = pods[pod];
        let prefix = format!("{flag}=");
        containers(pod)
            .flat_map(|(_, c)| c["args"].as_array().cloned().unwrap_or_default())
            .filter_map(|a| a.as_str().and_then(|a| a.strip_prefix(&prefix)).map(str::to_string))
            .next()
            .unwrap_or_else(|| panic!("{pod:?} has no {flag}"))
    };
    let secret_volumes = |pod: &str| -> Vec<String> {
        pods[pod]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v["secret"]["secretName"].as_str().map(str::to_string))
            .collect()
    };
    // The hub and the reconciler each read the kubeconfig of their own kcp user faros-kcp mints and
    // publishes (docs/install.md#kcp-identities), under the key faros-kcp writes, and never the admin
    // kubeconfig or each other's; the reconciler grants the hub's user as it provisions.
    let admin = arg("r-faros-kcp", "--admin-kubeconfig-secret");
    let own = [
        ("r-faros-hub-api", arg("r-faros-kcp", "--hub-kubeconfig-secret")),
        (
            "r-faros-hub-reconciler",
            arg("r-faros-kcp", "--reconciler-kubeconfig-secret"),
        ),
    ];
    for (pod, secret) in &own {
        let mounted = secret_volumes(pod);
        assert!(mounted.contains(secret), "{pod} does not mount {secret}: {mounted:?}");
        for other in own.iter().map(|(_, s)| s).chain([&admin]).filter(|s| *s != secret) {
            assert!(!mounted.contains(other), "{pod} mounts {other}");
        }
        let kubeconfig = pods[*pod]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["secret"]["secretName"] == secret.as_str())
            .unwrap();
        assert_eq!(
            kubeconfig["secret"]["items"][0]["key"],
            faros::kcp::COMPONENT_KUBECONFIG_KEY,
            "{pod}"
        );
    }
    assert_eq!(
        arg("r-faros-hub-reconciler", "--hub-user"),
        faros_core::names::HUB_KCP_USER
    );
    assert_eq!(arg("r-faros-kcp", "--admin-kubeconfig-secret-namespace"), NAMESPACE);
    // Two hub replicas, under a PodDisruptionBudget, sign with the one key faros-kcp makes and
    // publishes (no template renders a key, so every render is the same); the hub reads it under the
    // key faros-kcp writes.
    let signing_key = arg("r-faros-kcp", "--hub-signing-key-secret");
    let hub = docs
        .iter()
        .find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == "r-faros-hub-api")
        .unwrap();
    assert_eq!(hub["spec"]["replicas"], 2);
    assert!(
        kind(&docs, "PodDisruptionBudget").any(|p| p["metadata"]["name"] == "r-faros-hub-api"),
        "no PodDisruptionBudget over the hub"
    );
    assert!(
        secret_volumes("r-faros-hub-api").contains(&signing_key),
        "{signing_key}"
    );
    assert!(
        arg("r-faros-hub-api", "--signing-key-file").ends_with(&format!("/{}", faros::kcp::HUB_SIGNING_KEY_KEY)),
        "the hub reads another key of {signing_key}"
    );
    let render = || {
        template(
            &copy.path().join("charts/faros"),
            &[],
            &["faros-provider-quickstart.enabled=true"],
        )
        .unwrap()
        .0
    };
    assert!(render() == render(), "two renders of the defaults differ");
    // faros-kcp may change only the Secrets it publishes.
    let role = kind(&docs, "Role")
        .find(|r| r["metadata"]["name"] == "r-faros-kcp")
        .unwrap();
    let named: BTreeSet<String> = role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["resourceNames"].as_array().cloned().unwrap_or_default())
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    let published: BTreeSet<String> = own
        .iter()
        .map(|(_, s)| s.clone())
        .chain([admin.clone(), signing_key.clone()])
        .collect();
    assert_eq!(named, published, "{role}");
    // The reconciler mirrors into a providers namespace of its own (never the release namespace, whose
    // Secrets its Role would then read), which the chart creates and where quickstart runs and mounts
    // `<provider>-kubeconfig`, the hub's CA (`ca.crt`) included.
    let providers_ns = format!("{NAMESPACE}-providers");
    assert_eq!(arg("r-faros-hub-reconciler", "--mirror-namespace"), providers_ns);
    assert!(kind(&docs, "Namespace").any(|n| n["metadata"]["name"] == providers_ns.as_str()));
    let mirror_rbac = kind(&docs, "Role")
        .chain(kind(&docs, "RoleBinding"))
        .filter(|r| r["metadata"]["name"] == "r-faros-hub-reconciler-mirror")
        .collect::<Vec<_>>();
    assert_eq!(mirror_rbac.len(), 2);
    for role in mirror_rbac {
        assert_eq!(role["metadata"]["namespace"], providers_ns.as_str(), "{role}");
    }
    let quickstart = docs
        .iter()
        .find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == "r-faros-provider-quickstart")
        .unwrap();
    assert_eq!(quickstart["metadata"]["namespace"], providers_ns.as_str());
    assert_eq!(
        secret_volumes("r-faros-provider-quickstart"),
        ["quickstart-kubeconfig", "quickstart-kubeconfig"],
        "the kubeconfig and its ca.crt, nothing of the hub's namespace"
    );
    // The hub and the reconciler trust the hub through the hub chart's certificate Secret, which
    // cert-manager fills from the rendered Certificate.
    let tls = "r-faros-hub-api-tls".to_string();
    assert!(kind(&docs, "Certificate").any(|c| c["spec"]["secretName"] == tls.as_str()));
    for pod in ["r-faros-hub-api", "r-faros-hub-reconciler"] {
        assert!(secret_volumes(pod).contains(&tls), "{pod} does not mount {tls}");
    }
    // The quickstart CatalogEntry the chart ships is the provider's own manifest.
    let manifest = std::fs::read_to_string(root().join("providers/quickstart/manifest.yaml")).unwrap();
    let cm = kind(&docs, "ConfigMap").next().unwrap();
    assert!(cm["data"]["catalogentry.yaml"].as_str().unwrap().ends_with(&manifest));
}

#[test]
fn bad_values_are_refused_naming_the_key() {
    let copy = charts();
    let chart = |c: &str| copy.path().join("charts").join(c);
    for (c, sets, needle) in [
        ("faros-kcp", vec!["replicaCount=2"], "replicaCount"),
        ("faros-kcp", vec!["service.type=LoadBalancer"], "service.type"),
        ("faros-kcp", vec!["externalURL=http://kcp:6443"], "externalURL"),
        ("faros-kcp", vec!["bogus=1"], "Additional property bogus is not allowed"),
        ("faros-hub-api", vec![], "kcp.kubeconfigSecret is required"),
        (
            "faros-hub-api",
            vec!["kcp.kubeconfigSecret=k", "replicaCount=2"],
            "signingKey.existingSecret",
        ),
        (
            "faros-hub-api",
            vec!["kcp.kubeconfigSecret=k", "tls.mode=files"],
            "tls.mode",
        ),
        (
            "faros-hub-api",
            vec!["kcp.kubeconfigSecret=k", "tls.mode=existingSecret"],
            "tls.existingSecret",
        ),
        (
            "faros-hub-api",
            vec!["kcp.kubeconfigSecret=k", "tls.mode=generated"],
            "tls.mode",
        ),
        (
            "faros-hub-api",
            vec!["kcp.kubeconfigSecret=k", "auth.oidc.issuerURL=https://i"],
            "auth.oidc.clientID",
        ),
        (
            "faros-hub-api",
            vec!["kcp.kubeconfigSecret=k", "service.port=70000"],
            "service.port",
        ),
        (
            "faros-hub-reconciler",
            vec!["kcp.kubeconfigSecret=k", "hub.url=hub:8443"],
            "hub.url",
        ),
        (
            "faros-hub-reconciler",
            vec!["kcp.kubeconfigSecret=k", "mirror.namespace=Bad_NS"],
            "mirror.namespace",
        ),
        (
            "faros-provider-quickstart",
            vec!["providerName=Quick Start"],
            "providerName",
        ),
        // On its own, a component chart is told where the hub is; its release name says nothing.
        (
            "faros-hub-reconciler",
            vec!["kcp.kubeconfigSecret=k"],
            "hub.url is required: the hub API's URL, for a release HUB of charts/faros-hub-api in namespace NS its Service https://HUB-faros-hub-api.NS.svc:8443",
        ),
        (
            "faros-hub-reconciler",
            vec![
                "kcp.kubeconfigSecret=k",
                "hub.url=https://hub-faros-hub-api.faros.svc:8443",
            ],
            "hub.caSecret is required",
        ),
        ("faros-provider-quickstart", vec![], "hub.url is required"),
        (
            "faros-hub-reconciler",
            vec![
                "kcp.kubeconfigSecret=k",
                "hub.url=https://hub-faros-hub-api.faros.svc:8443",
                "hub.caSecret=c",
                "mirror.enabled=true",
                "mirror.namespace=faros",
            ],
            "mirror.namespace is the release namespace",
        ),
        (
            "faros",
            vec!["global.faros.providersNamespace=faros"],
            "mirror.namespace is the release namespace",
        ),
        // Under the umbrella the hub's name, port and CA are set once, in global.faros.hub.
        (
            "faros",
            vec!["faros-hub-api.service.port=9443"],
            "global.faros.hub.port",
        ),
        (
            "faros",
            vec!["faros-hub-api.fullnameOverride=hub"],
            "global.faros.hub.fullname",
        ),
        (
            "faros",
            vec!["faros-hub-api.nameOverride=hub"],
            "global.faros.hub.fullname",
        ),
        (
            "faros",
            vec![
                "faros-hub-api.tls.mode=existingSecret",
                "faros-hub-api.tls.existingSecret=t",
            ],
            "global.faros.hub.caSecret",
        ),
        ("faros", vec!["global.faros.hub.port=0"], "port"),
        ("faros", vec!["faros-kcp.replicaCount=3"], "replicaCount"),
    ] {
        let err = template(&chart(c), &[], &sets)
            .err()
            .unwrap_or_else(|| panic!("{c} {sets:?} rendered"));
        assert!(err.contains(needle), "{c} {sets:?}: expected {needle:?} in:\n{err}");
    }
}

// ---- the contract -------------------------------------------------------------------------------

/// An image's entrypoint and the files it bakes in, from the Dockerfile.
#[derive(Debug, Default)]
struct Image {
    entrypoint: Vec<String>,
    /// Path in the image → file or directory in the repository.
    files: Vec<(String, PathBuf)>,
}

fn dockerfile_images() -> BTreeMap<String, Image> {
    let text = std::fs::read_to_string(root().join("Dockerfile")).unwrap();
    let mut images: BTreeMap<String, Image> = BTreeMap::new();
    let mut stage = String::new();
    for line in text.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["FROM", .., "AS", name] => stage = (*name).to_string(),
            ["ENTRYPOINT", ..] => {
                let array: Vec<String> = serde_json::from_str(line.trim_start_matches("ENTRYPOINT")).unwrap();
                images.entry(stage.clone()).or_default().entrypoint = array;
            }
            ["COPY", rest @ ..] if !rest.iter().any(|w| w.starts_with("--from")) && rest.len() >= 2 => {
                let dest = rest[rest.len() - 1].trim_end_matches('/').to_string();
                for src in &rest[..rest.len() - 1] {
                    // `dir/*.yaml` into `dest/` bakes that directory.
                    let src = src.strip_suffix("/*.yaml").unwrap_or(src);
                    images
                        .entry(stage.clone())
                        .or_default()
                        .files
                        .push((dest.clone(), root().join(src)));
                }
            }
            _ => {}
        }
    }
    images
}

/// A running container: the process, and where its stderr goes.
struct Running {
    name: String,
    child: tokio::process::Child,
    log: PathBuf,
}

impl Running {
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

/// What the contract needs around the pods: where files go, the stand-in hosting cluster.
struct Node {
    dir: PathBuf,
    hosting_kubeconfig: PathBuf,
    hosting: kube::Client,
    images: BTreeMap<String, Image>,
}

impl Node {
    /// The bytes of `key` (or every key) of a Secret or ConfigMap in the hosting cluster, waiting for it
    /// as the kubelet waits for a non-optional volume.
    async fn volume_files(&self, namespace: &str, volume: &Value) -> Option<BTreeMap<String, Vec<u8>>> {
        let (source, data): (&Value, BTreeMap<String, Vec<u8>>) = if volume["secret"].is_object() {
            let name = volume["secret"]["secretName"].as_str().unwrap();
            let api: Api<Secret> = Api::namespaced(self.hosting.clone(), namespace);
            let secret = eventually_some(&format!("Secret {name}"), WAIT, || {
                let api = api.clone();
                async move { api.get_opt(name).await.ok().flatten() }
            })
            .await;
            let data = secret
                .data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect();
            (&volume["secret"], data)
        } else if volume["configMap"].is_object() {
            let name = volume["configMap"]["name"].as_str().unwrap();
            let api: Api<ConfigMap> = Api::namespaced(self.hosting.clone(), namespace);
            let cm = eventually_some(&format!("ConfigMap {name}"), WAIT, || {
                let api = api.clone();
                async move { api.get_opt(name).await.ok().flatten() }
            })
            .await;
            let data = cm
                .data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.into_bytes()))
                .collect();
            (&volume["configMap"], data)
        } else {
            return None;
        };
        Some(match source["items"].as_array() {
            Some(items) => items
                .iter()
                .map(|i| {
                    let key = i["key"].as_str().unwrap();
                    let bytes = data
                        .get(key)
                        .unwrap_or_else(|| panic!("volume {volume} has no key {key}"));
                    (i["path"].as_str().unwrap().to_string(), bytes.clone())
                })
                .collect(),
            None => data,
        })
    }

    /// Runs a `helm test` Pod's one container to completion: its volumes materialised, the curl it
    /// runs with the rendered arguments, mount paths replaced by the materialised files, and every
    /// in-cluster host it dials resolved to 127.0.0.1. It must succeed.
    async fn run_test_pod(&self, pod: &Value) {
        let name = pod["metadata"]["name"].as_str().unwrap();
        let namespace = pod["metadata"]["namespace"].as_str().unwrap_or(NAMESPACE);
        let spec = &pod["spec"];
        let c = &spec["containers"][0];
        assert_eq!(c["command"], json!(["curl"]), "{name}");
        let pod_dir = self.dir.join(name);
        let mut mounts = Vec::new();
        for m in c["volumeMounts"].as_array().into_iter().flatten() {
            let volume = spec["volumes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|v| v["name"] == m["name"])
                .unwrap_or_else(|| panic!("{name}: no volume {}", m["name"]));
            let path = m["mountPath"].as_str().unwrap().to_string();
            let dir = pod_dir.join(path.trim_start_matches('/'));
            std::fs::create_dir_all(&dir).unwrap();
            for (file, bytes) in self.volume_files(namespace, volume).await.unwrap() {
                std::fs::write(dir.join(file), bytes).unwrap();
            }
            mounts.push((path, dir));
        }
        let mut args: Vec<String> = Vec::new();
        for a in c["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()) {
            let local = mounts.iter().find_map(|(base, dir)| {
                a.strip_prefix(base.as_str())
                    .map(|rest| format!("{}{rest}", dir.display()))
            });
            if let Some((service, ns, port)) = wiring::in_cluster_address(a) {
                args.extend(["--resolve".to_string(), format!("{service}.{ns}.svc:{port}:127.0.0.1")]);
            }
            args.push(local.unwrap_or_else(|| a.to_string()));
        }
        let out = tokio::process::Command::new("curl")
            .args(&args)
            .output()
            .await
            .unwrap_or_else(|e| panic!("{name}: running curl: {e}"));
        assert!(
            out.status.success(),
            "helm test Pod {name} failed (curl {args:?}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Runs one pod: its volumes materialised under the node directory, init containers to
    /// completion, then its containers until their readiness probes pass.
    async fn run_pod(&self, name: &str, namespace: &str, pod: &Value) -> Vec<Running> {
        let pod_dir = self.dir.join(name);
        let volumes: BTreeMap<&str, &Value> = pod["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| (v["name"].as_str().unwrap(), v))
            .collect();
        let mut running = Vec::new();
        for (init, c) in containers(pod) {
            let c_name = format!("{name}/{}", c["name"].as_str().unwrap());
            // Mount paths, materialised.
            let mut mounts = Vec::new();
            for m in c["volumeMounts"].as_array().into_iter().flatten() {
                let path = m["mountPath"].as_str().unwrap().to_string();
                let dir = pod_dir.join(path.trim_start_matches('/'));
                std::fs::create_dir_all(&dir).unwrap();
                // A volume the pod does not declare is a volume claim template (the StatefulSet's state).
                if let Some(volume) = volumes.get(m["name"].as_str().unwrap())
                    && let Some(files) = self.volume_files(namespace, volume).await
                {
                    for (file, bytes) in files {
                        std::fs::write(dir.join(file), bytes).unwrap();
                    }
                }
                mounts.push((path, dir));
            }
            let image_ref = c["image"].as_str().unwrap();
            let stage = image_ref.rsplit('/').next().unwrap().split(':').next().unwrap();
            let image = self
                .images
                .get(stage)
                .unwrap_or_else(|| panic!("{c_name}: image {image_ref} has no `{stage}` target in the Dockerfile"));
            // A path the container is handed must exist in the pod: under a mount, or baked in the image.
            let local = |value: &str| -> String {
                let (prefix, path) = match value.split_once("=/") {
                    Some((flag, path)) if flag.starts_with("--") => (format!("{flag}="), format!("/{path}")),
                    _ if value.starts_with('/') => (String::new(), value.to_string()),
                    _ => return value.to_string(),
                };
                let under = |base: &str| path == base || path.starts_with(&format!("{base}/"));
                if let Some((base, dir)) = mounts.iter().find(|(base, _)| under(base)) {
                    return format!(
                        "{prefix}{}",
                        dir.join(path[base.len()..].trim_start_matches('/')).display()
                    );
                }
                if let Some((base, src)) = image.files.iter().find(|(base, _)| under(base)) {
                    return format!(
                        "{prefix}{}",
                        src.join(path[base.len()..].trim_start_matches('/')).display()
                    );
                }
                panic!(
                    "{c_name} is handed {path}, which no volume mount of the pod and no file of image {stage} provides"
                )
            };
            let binary = Path::new(env!("CARGO_BIN_EXE_faros"))
                .with_file_name(Path::new(&image.entrypoint[0]).file_name().unwrap());
            assert!(
                binary.is_file(),
                "{c_name}: {} is not built (run the workspace's tests: `cargo test --workspace`)",
                binary.display()
            );
            let mut args: Vec<String> = image.entrypoint[1..].to_vec();
            args.extend(
                c["args"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|a| local(a.as_str().unwrap())),
            );
            let mut cmd = tokio::process::Command::new(&binary);
            cmd.args(&args).env_clear().kill_on_drop(true);
            cmd.env("FAROS_HOSTING_KUBECONFIG", &self.hosting_kubeconfig)
                .env("FAROS_MIRROR_KUBECONFIG", &self.hosting_kubeconfig);
            for e in c["env"].as_array().into_iter().flatten() {
                let value = match (&e["value"], &e["valueFrom"]["fieldRef"]["fieldPath"]) {
                    (Value::String(v), _) => local(v),
                    (_, Value::String(f)) if f == "metadata.name" => format!("{name}-0"),
                    _ => panic!("{c_name}: unsupported env {e}"),
                };
                cmd.env(e["name"].as_str().unwrap(), value);
            }
            let log = self.dir.join(format!("{}.log", c_name.replace('/', "_")));
            cmd.stdout(Stdio::null()).stderr(std::fs::File::create(&log).unwrap());
            let child = cmd
                .spawn()
                .unwrap_or_else(|e| panic!("{c_name}: starting {}: {e}", binary.display()));
            let mut proc = Running {
                name: c_name.clone(),
                child,
                log,
            };
            if init {
                let status = tokio::time::timeout(WAIT, proc.child.wait()).await;
                assert!(
                    matches!(status, Ok(Ok(s)) if s.success()),
                    "init container {c_name} did not succeed ({status:?}):\n{}",
                    proc.log_tail()
                );
            } else {
                wait_ready(&mut proc, c).await;
                running.push(proc);
            }
        }
        running
    }
}

/// Polls the container's readiness probe as the kubelet does (HTTPS probes do not verify the
/// certificate), failing fast when the process exits.
async fn wait_ready(proc: &mut Running, c: &Value) {
    let probe = &c["readinessProbe"]["httpGet"];
    let port = match &probe["port"] {
        Value::String(name) => c["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name.as_str())
            .unwrap_or_else(|| panic!("{}: probe port {name} is not a container port", proc.name))["containerPort"]
            .as_u64()
            .unwrap(),
        p => p.as_u64().unwrap(),
    };
    let scheme = probe["scheme"].as_str().unwrap_or("HTTP").to_lowercase();
    let url = format!("{scheme}://127.0.0.1:{port}{}", probe["path"].as_str().unwrap());
    let http = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        if let Ok(Some(status)) = proc.child.try_wait() {
            panic!(
                "{} exited ({status}) before {url} was ready:\n{}",
                proc.name,
                proc.log_tail()
            );
        }
        if let Ok(r) = http.get(&url).send().await
            && r.status().is_success()
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} never got ready on {url}:\n{}",
            proc.name,
            proc.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The Secret cert-manager would write for a serving `Certificate` from a CA issuer: `tls.crt`,
/// `tls.key` and `ca.crt`, covering the Certificate's DNS names.
fn issue_like_cert_manager(certificate: &Value) -> Value {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    // A subject of its own: with rcgen's default for both, the leaf's issuer would equal its subject
    // and OpenSSL-based clients (curl) would take it for self-signed.
    ca.distinguished_name.push(DnType::CommonName, "contract-test-ca");
    let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
    let names: Vec<String> = certificate["spec"]["dnsNames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(names).unwrap();
    leaf.distinguished_name
        .push(DnType::CommonName, certificate["spec"]["secretName"].as_str().unwrap());
    let cert = leaf.signed_by(&key, &Issuer::new(ca, ca_key)).unwrap();
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": certificate["spec"]["secretName"], "namespace": NAMESPACE},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": b64(&cert.pem()), "tls.key": b64(&key.serialize_pem()), "ca.crt": b64(&ca_pem)},
    })
}

/// The signing key file docs/install.md tells operators to make for the hub replicas when no
/// faros-kcp publishes one (real kcp): the `openssl` and `jq` lines of its block, run with bash in `dir`.
fn documented_signing_key(dir: &Path) -> Vec<u8> {
    let text = std::fs::read_to_string(root().join("docs/install.md")).unwrap();
    let block = text
        .split("```")
        .find(|b| b.starts_with("sh\n") && b.contains("openssl genpkey"))
        .expect("docs/install.md has no block making the hub's signing key");
    let script: String = block
        .replace("\\\n", " ")
        .lines()
        .filter(|l| l.starts_with("openssl ") || l.starts_with("jq "))
        .map(|l| format!("{l}\n"))
        .collect();
    let (ok, out) = run(Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(dir));
    assert!(ok, "the documented signing key commands failed:\n{script}\n{out}");
    std::fs::read(dir.join("signing-key.json")).unwrap()
}

#[test]
fn the_documented_signing_key_is_one_the_hub_loads() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = documented_signing_key(dir.path());
    let path = dir.path().join("mounted.json");
    std::fs::write(&path, &bytes).unwrap();
    let store = faros_hub_api::keys::KeyStore::load_or_create(&path)
        .unwrap_or_else(|e| panic!("the hub refuses the key docs/install.md makes: {e}"));
    assert_eq!(store.jwks().keys[0].kid, "hub-1");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the hub replaced the documented key"
    );
}

/// The last lines of every container log under `dir`, for failure messages.
fn node_logs(dir: &Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "log") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            out.push_str(&format!(
                "--- {}\n{}\n",
                path.display(),
                lines[lines.len().saturating_sub(15)..].join("\n")
            ));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contract_rendered_pods_run_with_the_real_binaries() {
    faros_core::telemetry::install_crypto_provider();
    let copy = charts();
    let node_dir = copy.path().join("node");
    std::fs::create_dir_all(&node_dir).unwrap();

    // The stand-in for the hosting cluster's API.
    let hosting_kubeconfig = node_dir.join("hosting.kubeconfig");
    let mut hosting_proc = tokio::process::Command::new(env!("CARGO_BIN_EXE_faros"))
        .args(["kcp", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(node_dir.join("hosting"))
        .arg("--admin-kubeconfig-file")
        .arg(&hosting_kubeconfig)
        .env("FAROS_LOG_LEVEL", "warn")
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let hosting = client_once_written(&hosting_kubeconfig, WAIT).await.unwrap();
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}})).unwrap();
    Api::<Namespace>::all(hosting.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();

    // Render the umbrella: ports picked here, and the URLs clients dial pointed at localhost.
    let port = || free_port().unwrap();
    let (kcp, hub, rec, qs, hub_metrics) = (port(), port(), port(), port(), port());
    let values = copy.path().join("contract-values.yaml");
    std::fs::write(
        &values,
        format!(
            "faros-kcp: {{service: {{port: {kcp}}}, externalURL: 'https://localhost:{kcp}'}}\n\
             global: {{faros: {{hub: {{port: {hub}}}}}}}\n\
             faros-hub-api: {{tls: {{extraDNSNames: [localhost]}}, metrics: {{port: {hub_metrics}}}}}\n\
             faros-hub-reconciler: {{hub: {{url: 'https://localhost:{hub}'}}, metricsPort: {rec}}}\n\
             faros-provider-quickstart: {{enabled: true, hub: {{url: 'https://localhost:{hub}'}}, service: {{port: {qs}}}}}\n"
        ),
    )
    .unwrap();
    let (_, docs) = template(&copy.path().join("charts/faros"), &[&values], &[]).unwrap();
    // What `helm install` would create in the hosting cluster and the pods then read; cert-manager's
    // part (a Secret per serving Certificate) is played by `issue_like_cert_manager`.
    let issued: Vec<Value> = kind(&docs, "Certificate")
        .filter(|c| c["spec"]["isCA"] != true)
        .map(issue_like_cert_manager)
        .collect();
    // The namespaces the release creates (the providers namespace), then its Secrets and ConfigMaps.
    for doc in kind(&docs, "Namespace") {
        let ns: Namespace = serde_json::from_value(doc.clone()).unwrap();
        Api::<Namespace>::all(hosting.clone())
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
    }
    let namespace = |doc: &Value| doc["metadata"]["namespace"].as_str().unwrap_or(NAMESPACE).to_string();
    for doc in kind(&docs, "Secret").chain(issued.iter()) {
        let secret: Secret = serde_json::from_value(doc.clone()).unwrap();
        Api::<Secret>::namespaced(hosting.clone(), &namespace(doc))
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
    }
    for doc in kind(&docs, "ConfigMap") {
        let cm: ConfigMap = serde_json::from_value(doc.clone()).unwrap();
        Api::<ConfigMap>::namespaced(hosting.clone(), &namespace(doc))
            .create(&PostParams::default(), &cm)
            .await
            .unwrap();
    }

    let node = std::sync::Arc::new(Node {
        dir: node_dir.clone(),
        hosting_kubeconfig: hosting_kubeconfig.clone(),
        hosting: hosting.clone(),
        images: dockerfile_images(),
    });
    // All pods start at once, as on a cluster; each waits for what it mounts.
    let mut pods = tokio::task::JoinSet::new();
    for (name, pod) in pod_specs(&docs) {
        let namespace = namespace_of(&docs, &name);
        let (node, pod) = (node.clone(), pod.clone());
        pods.spawn(async move { node.run_pod(&name, &namespace, &pod).await });
    }

    // The platform admin registers the quickstart provider, as a GitOps repo would.
    let admin_secret = eventually_some("the published admin kubeconfig", WAIT, || {
        let api: Api<Secret> = Api::namespaced(hosting.clone(), NAMESPACE);
        async move { api.get_opt("r-faros-kcp-admin-kubeconfig").await.ok().flatten() }
    })
    .await;
    let admin_kubeconfig = String::from_utf8(admin_secret.data.unwrap()["admin.kubeconfig"].0.clone()).unwrap();
    assert!(admin_kubeconfig.contains(&format!("server: https://localhost:{kcp}/clusters/root")));
    let provider: Provider =
        serde_saphyr::from_str(&std::fs::read_to_string(root().join("providers/quickstart/provider.yaml")).unwrap())
            .unwrap();
    let providers_url = format!(
        "https://localhost:{kcp}/clusters/{}",
        faros_core::names::SYSTEM_PROVIDERS_PATH
    );
    let providers =
        client_from_yaml(&admin_kubeconfig.replace(&format!("https://localhost:{kcp}/clusters/root"), &providers_url))
            .await
            .unwrap();
    let accepted = tokio::time::timeout(
        WAIT - Duration::from_secs(2),
        eventually_some("the Provider to be accepted", WAIT, || {
            let api: Api<Provider> = Api::all(providers.clone());
            let provider = provider.clone();
            async move {
                api.patch("quickstart", &PatchParams::apply("gitops"), &Patch::Apply(&provider))
                    .await
                    .ok()
            }
        }),
    )
    .await;
    assert!(
        accepted.is_ok(),
        "the Provider was not accepted:\n{}",
        node_logs(&node_dir)
    );

    let mut running = Vec::new();
    while let Some(result) = tokio::time::timeout(WAIT * 2, pods.join_next())
        .await
        .expect("pods did not become ready")
    {
        running.extend(result.unwrap_or_else(|e| panic!("{e}\n{}", node_logs(&node_dir))));
    }
    let names: Vec<&str> = running.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names.len(), 4, "{names:?}");

    // `helm test`: each chart's test Pod, its curl run as rendered against the running components
    // (its Service names resolved to this host, as cluster DNS would to the Service).
    let tests: Vec<&Value> = kind(&docs, "Pod")
        .filter(|p| p["metadata"]["annotations"]["helm.sh/hook"] == "test")
        .collect();
    assert_eq!(tests.len(), 4, "one helm test Pod per component");
    for pod in tests {
        node.run_test_pod(pod).await;
    }

    // The init container published the CatalogEntry with the chart's in-cluster URLs.
    let entry_url = admin_kubeconfig.replace(
        &format!("https://localhost:{kcp}/clusters/root"),
        &format!("https://localhost:{kcp}/clusters/root:faros:providers:quickstart"),
    );
    let entries: Api<CatalogEntry> = Api::all(client_from_yaml(&entry_url).await.unwrap());
    let entry = entries.get("quickstart").await.unwrap();
    let want = format!("http://r-faros-provider-quickstart.{NAMESPACE}-providers.svc:{qs}");
    assert_eq!(entry.spec.ui.as_ref().and_then(|u| u.url.clone()), Some(want.clone()));
    assert_eq!(entry.spec.backend.as_ref().map(|b| b.url.clone()), Some(want));

    // The mirrored kubeconfig is the one kcp holds for the Provider, in the providers namespace, with
    // the CA bundle it embeds beside it as `ca.crt`.
    let mirrored: Api<Secret> = Api::namespaced(hosting.clone(), &format!("{NAMESPACE}-providers"));
    let mirrored = mirrored.get("quickstart-kubeconfig").await.unwrap().data.unwrap();
    let kubeconfig = String::from_utf8(mirrored["kubeconfig"].0.clone()).unwrap();
    let mirrored_ca = String::from_utf8(mirrored["ca.crt"].0.clone()).unwrap();
    assert!(
        kubeconfig.contains(&format!("server: https://localhost:{hub}/clusters/")),
        "{kubeconfig}"
    );
    // Its CA bundle trusts the hub (the chart's certificate) and kcp (whose virtual workspaces the
    // provider dials directly).
    let ca_of = |kubeconfig: &str| -> String {
        let kc = kube::config::Kubeconfig::from_yaml(kubeconfig).unwrap();
        let data = kc.clusters[0]
            .cluster
            .as_ref()
            .unwrap()
            .certificate_authority_data
            .clone()
            .unwrap();
        String::from_utf8(base64::engine::general_purpose::STANDARD.decode(data).unwrap()).unwrap()
    };
    let hub_tls = issued
        .iter()
        .find(|s| s["metadata"]["name"] == "r-faros-hub-api-tls")
        .unwrap();
    let hub_ca = base64::engine::general_purpose::STANDARD
        .decode(hub_tls["data"]["ca.crt"].as_str().unwrap())
        .unwrap();
    let body = |pem: &str| -> String { pem.lines().filter(|l| !l.starts_with("-----")).collect() };
    let bundle = body(&ca_of(&kubeconfig));
    assert_eq!(body(&mirrored_ca), bundle, "ca.crt is the kubeconfig's CA bundle");
    assert!(
        bundle.contains(&body(std::str::from_utf8(&hub_ca).unwrap())),
        "hub CA missing from the provider kubeconfig"
    );
    assert!(
        bundle.contains(&body(&ca_of(&admin_kubeconfig))),
        "kcp CA missing from the provider kubeconfig"
    );

    // /metrics is not on the hub's public port (whatever exposes it), only on its own listener.
    let http = reqwest::Client::builder()
        .danger_accept_invalid_certs(true)
        .build()
        .unwrap();
    let public = http
        .get(format!("https://127.0.0.1:{hub}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(public.status(), 404, "anonymous /metrics on the public port");
    let metrics = http
        .get(format!("http://127.0.0.1:{hub_metrics}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(metrics.status(), 200);

    // The umbrella's two hub replicas sign with the key faros-kcp published: each, started from the
    // rendered pod (one after the other, as they listen on the same ports here), serves it first in
    // its JWKS.
    let published = Api::<Secret>::namespaced(hosting.clone(), NAMESPACE)
        .get("r-faros-kcp-hub-signing-key")
        .await
        .unwrap();
    let file: Value = serde_json::from_slice(&published.data.unwrap()[faros::kcp::HUB_SIGNING_KEY_KEY].0).unwrap();
    let kid = file["current"]["kid"].as_str().unwrap().to_string();
    let served_kid = || async {
        let jwks: Value = http
            .get(format!("https://127.0.0.1:{hub}{}", faros_core::identity::JWKS_PATH))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        jwks["keys"][0]["kid"].as_str().unwrap().to_string()
    };
    assert_eq!(served_kid().await, kid, "the first hub replica");
    let hub_pod = pod_specs(&docs)
        .into_iter()
        .find(|(name, _)| name == "r-faros-hub-api")
        .unwrap()
        .1
        .clone();
    assert_eq!(
        docs.iter()
            .find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == "r-faros-hub-api")
            .unwrap()["spec"]["replicas"],
        2
    );
    let first = running
        .iter()
        .position(|r| r.name.starts_with("r-faros-hub-api/"))
        .unwrap();
    let mut first = running.remove(first);
    first.child.kill().await.unwrap();
    running.extend(node.run_pod("r-faros-hub-api-2", NAMESPACE, &hub_pod).await);
    assert_eq!(served_kid().await, kid, "the second hub replica");

    for mut r in running {
        let _ = r.child.kill().await;
    }
    let _ = hosting_proc.kill().await;
}
