//! `cargo xtask kube charts`: every chart on a real API server ([`super::plane`]), as an operator installs
//! it. The third-party CRDs first ([`crds`]), then one scenario at a time, each on namespaces made
//! fresh:
//!
//! - the install sections of docs/install.md, their `sh` blocks run verbatim by bash ([`docs`]),
//!   the split install's second half as the namespace-only admin;
//! - every chart alone and the umbrella with each `ci/*-values.yaml`: `helm install`, `helm upgrade`
//!   to a changed value, `helm rollback`, `helm uninstall` (nothing left behind), then the rendered
//!   manifests `kubectl apply --server-side` twice, `kubectl diff` showing no drift, and deleted.
//!
//! A scenario fails on a refusal, on any server warning (unknown field, Pod Security) in what helm
//! or kubectl print, on a FailedCreate event, or when the controllers have not created a
//! workload's Pods within the deadline ([`verdict`]). Every scenario runs; a table ends the run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;

use super::cli::{CliError, Output, Tool};
use super::crds::{self, Channel};
use super::docs::{self, User};
use super::plane::ControlPlane;
use super::verdict::{self, Progress};

/// The namespaces the docs and the ci values install into.
const NAMESPACES: [&str; 2] = ["faros", "faros-providers"];
/// How long controllers get to act, and a namespace to go.
const DEADLINE: Duration = Duration::from_secs(90);
const POLL: Duration = Duration::from_millis(250);
/// The field manager of the `kubectl apply --server-side` checks.
const FIELD_MANAGER: &str = "faros-ci";
/// What a cluster admin makes before `charts/faros/ci/knobs-values.yaml` installs (its comment says
/// so): the PriorityClass its Pods name. No chart makes one, it is cluster-scoped.
const PRIORITY_CLASS: &str = "apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: faros-critical
value: 1000000
description: faros platform components (charts/faros/ci/knobs-values.yaml)
";
/// What cert-manager's and prometheus-operator's own installs add beside their CRDs, and a Gateway
/// API install commonly does: their kinds aggregated into the built-in `admin` role, so a namespace
/// admin may create Certificates, Issuers, ServiceMonitors and TLSRoutes in its namespaces (the CRDs
/// alone grant nobody).
const THIRD_PARTY_ADMIN: &str = "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: faros-ci-third-party-admin
  labels:
    rbac.authorization.k8s.io/aggregate-to-admin: \"true\"
rules:
  - apiGroups: [cert-manager.io]
    resources: [certificates, certificaterequests, issuers]
    verbs: [get, list, watch, create, update, patch, delete, deletecollection]
  - apiGroups: [monitoring.coreos.com]
    resources: [servicemonitors]
    verbs: [get, list, watch, create, update, patch, delete, deletecollection]
  - apiGroups: [gateway.networking.k8s.io]
    resources: [tlsroutes]
    verbs: [get, list, watch, create, update, patch, delete, deletecollection]
";
/// The kinds the charts may render that are cluster-scoped; every other object must name its
/// namespace, or `kubectl apply` of the rendered manifests puts it in whatever namespace the
/// context has.
const CLUSTER_KINDS: [&str; 5] = [
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "PriorityClass",
    "ClusterIssuer",
];

#[derive(clap::Args)]
pub struct Charts {
    /// The third-party CRDs (with their SHA256SUMS), outside the repository. Default:
    /// `shared/third_party/crds` in the directory that holds the repository.
    #[arg(long, env = "FAROS_THIRD_PARTY_CRDS")]
    crds: Option<PathBuf>,
    /// Which Gateway API channel's TLSRoute to install.
    #[arg(long, value_enum, default_value_t = Channel::Standard)]
    gateway_channel: Channel,
    #[arg(long, env = "FAROS_HELM", default_value = "helm")]
    helm: String,
    #[arg(long, env = "FAROS_KUBECTL", default_value = "kubectl")]
    kubectl: String,
    /// Run only the scenarios whose name contains this.
    #[arg(long)]
    only: Option<String>,
    /// Where the control plane's files go (replaced).
    #[arg(long, default_value = "target/kube/charts")]
    dir: PathBuf,
}

/// The labels that put a namespace under Pod Security `level` (enforced, warned and audited).
pub(crate) fn pod_security_labels(level: &str) -> Vec<(String, String)> {
    ["enforce", "warn", "audit"]
        .iter()
        .map(|mode| (format!("pod-security.kubernetes.io/{mode}"), level.to_string()))
        .collect()
}

/// One `ci/*-values.yaml` run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CiRun {
    pub chart: String,
    pub values: String,
    pub release: &'static str,
    pub namespace: &'static str,
    /// The `--set` of the upgrade: a pod annotation, so every workload rolls.
    pub upgrade: String,
}

/// The release, namespace and upgrade of `chart`'s ci runs: the names docs/install.md gives each
/// component (the ci values point at them).
pub(crate) fn ci_run(chart: &str, values: &str) -> CiRun {
    let (release, namespace, prefix) = match chart {
        "faros" => ("faros", "faros", "faros-hub-api."),
        "faros-kcp" => ("kcp", "faros", ""),
        "faros-hub-api" => ("hub", "faros", ""),
        "faros-hub-reconciler" => ("reconciler", "faros", ""),
        "faros-provider-quickstart" => ("quickstart", "faros-providers", ""),
        _ => ("r", "faros", ""),
    };
    CiRun {
        chart: chart.to_string(),
        values: values.to_string(),
        release,
        namespace,
        upgrade: format!("{prefix}podAnnotations.faros-ci-upgrade=changed"),
    }
}

impl Charts {
    pub fn run(self, root: &Path) -> anyhow::Result<()> {
        let crd_dir = match &self.crds {
            Some(dir) => root.join(dir),
            None => root.parent().unwrap_or(root).join("shared/third_party/crds"),
        };
        let crd_files = crds::verified(&crd_dir, self.gateway_channel).with_context(|| {
            format!(
                "the third-party CRDs in {} (--crds, FAROS_THIRD_PARTY_CRDS)",
                crd_dir.display()
            )
        })?;
        let markdown = std::fs::read_to_string(root.join("docs/install.md")).context("reading docs/install.md")?;
        let doc_scenarios = docs::scenarios(&markdown)?;
        let work = tempfile::tempdir().context("making a working directory")?;
        copy_charts(root, work.path())?;
        // What the real-kcp section's `kubectl create secret --from-file` reads: any kubeconfig
        // (nothing dials it here).
        std::fs::write(
            work.path().join("front-proxy-admin.kubeconfig"),
            "apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n",
        )?;

        let plane = ControlPlane::start(&super::build::bin_dir(root), root.join(&self.dir), &self.kubectl)?;
        // The docs say `helm`: the one --helm names, first on PATH.
        let bin = work.path().join("bin");
        std::fs::create_dir_all(&bin)?;
        if self.helm.contains('/') {
            std::os::unix::fs::symlink(root.join(&self.helm), bin.join("helm"))
                .with_context(|| format!("linking {} into {}", self.helm, bin.display()))?;
        }
        let kubectl = Tool {
            cwd: Some(work.path().to_path_buf()),
            path_first: Some(bin),
            ..plane.kubectl().clone()
        };
        let helm = Tool {
            program: self.helm.clone(),
            ..kubectl.clone()
        };
        let started = Instant::now();
        let mut args = vec!["apply", "--server-side"];
        let files: Vec<String> = crd_files.iter().map(|f| f.display().to_string()).collect();
        for f in &files {
            args.extend(["-f", f.as_str()]);
        }
        let out = kubectl.run(&args)?;
        fail_on_warnings(&out).map_err(anyhow::Error::msg)?;
        kubectl.run(&["wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"])?;
        eprintln!("applied {} third-party CRDs from {}", files.len(), crd_dir.display());
        kubectl.run_with_stdin(&["apply", "-f", "-"], Some(PRIORITY_CLASS))?;
        kubectl.run_with_stdin(&["apply", "-f", "-"], Some(THIRD_PARTY_ADMIN))?;
        helm.run(&["dependency", "build", "charts/faros"])?;
        let ctx = Ctx {
            kubectl,
            helm,
            namespace_admin: plane.paths.namespace_admin_kubeconfig(),
            kinds: namespaced_kinds(plane.kubectl())?,
            work: work.path().to_path_buf(),
        };

        let mut results: Vec<(String, Result<(), String>)> = Vec::new();
        let wanted = |name: &str| self.only.as_ref().is_none_or(|o| name.contains(o.as_str()));
        for scenario in &doc_scenarios {
            let name = format!("docs/install.md: {}", scenario.section);
            if wanted(&name) {
                eprintln!("== {name}");
                results.push((name, ctx.docs(scenario)));
            }
        }
        for run in ci_runs(root)? {
            let name = format!("charts/{}/ci/{}", run.chart, run.values);
            if wanted(&name) {
                eprintln!("== {name}");
                results.push((name, ctx.ci(&run)));
            }
        }
        drop(plane);
        println!("\n| scenario | result |\n|---|---|");
        for (name, result) in &results {
            match result {
                Ok(()) => println!("| {name} | ok |"),
                Err(e) => println!("| {name} | FAILED: {} |", summary(e)),
            }
        }
        let failed: Vec<&(String, Result<(), String>)> = results.iter().filter(|(_, r)| r.is_err()).collect();
        for (name, e) in &failed {
            if let Err(e) = e {
                eprintln!("\n{name}:\n{e}");
            }
        }
        eprintln!("{} scenarios in {:.0?}", results.len(), started.elapsed());
        if !failed.is_empty() {
            bail!("{} of {} chart scenarios failed", failed.len(), results.len());
        }
        Ok(())
    }
}

/// Every `charts/<chart>/ci/*-values.yaml`, sorted.
fn ci_runs(root: &Path) -> anyhow::Result<Vec<CiRun>> {
    let mut runs = Vec::new();
    let charts = root.join("charts");
    for chart in sorted_dir(&charts)? {
        let ci = charts.join(&chart).join("ci");
        if !ci.is_dir() {
            continue;
        }
        for values in sorted_dir(&ci)? {
            if values.ends_with("-values.yaml") {
                runs.push(ci_run(&chart, &values));
            }
        }
    }
    Ok(runs)
}

fn sorted_dir(dir: &Path) -> anyhow::Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// `charts/` into `work`, so `helm dependency build` writes there, not into the repository.
fn copy_charts(root: &Path, work: &Path) -> anyhow::Result<()> {
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(root.join("charts"))
        .arg(work)
        .status()
        .context("running cp")?;
    if !status.success() {
        bail!("copying charts/ into {} failed", work.display());
    }
    Ok(())
}

/// The namespaced kinds that can be listed, for "nothing left behind".
fn namespaced_kinds(kubectl: &Tool) -> anyhow::Result<String> {
    let out = kubectl.run(&["api-resources", "--verbs=list,delete", "--namespaced", "-o", "name"])?;
    Ok(out.stdout.lines().collect::<Vec<_>>().join(","))
}

fn fail_on_warnings(out: &Output) -> Result<(), String> {
    let found = verdict::warnings(&format!("{}\n{}", out.stdout, out.stderr));
    if found.is_empty() {
        Ok(())
    } else {
        Err(format!("server warnings:\n  {}", found.join("\n  ")))
    }
}

fn failed(e: CliError) -> String {
    e.to_string()
}

struct Ctx {
    kubectl: Tool,
    helm: Tool,
    namespace_admin: PathBuf,
    kinds: String,
    work: PathBuf,
}

impl Ctx {
    /// A docs section: its blocks by bash, then everything uninstalled and nothing left.
    fn docs(&self, scenario: &docs::Scenario) -> Result<(), String> {
        self.fresh_namespaces()?;
        for step in &scenario.steps {
            let bash = Tool {
                program: "bash".into(),
                ..match step.user {
                    User::ClusterAdmin => self.kubectl.clone(),
                    User::NamespaceAdmin => self.kubectl.as_user(&self.namespace_admin),
                }
            };
            let script = format!("set -euo pipefail\n{}", step.script);
            let (ok, out, _) = bash.output(&["-c", &script], None).map_err(failed)?;
            let who = match step.user {
                User::ClusterAdmin => "the cluster admin",
                User::NamespaceAdmin => "the namespace admin",
            };
            if !ok {
                return Err(format!(
                    "docs/install.md line {} as {who} failed:\n{}{}",
                    step.line, out.stdout, out.stderr
                ));
            }
            fail_on_warnings(&out).map_err(|e| format!("docs/install.md line {}: {e}", step.line))?;
            self.settle()?;
        }
        let releases = self.helm.run(&["list", "-A", "-o", "json"]).map_err(failed)?;
        let releases: Value = serde_json::from_str(&releases.stdout).map_err(|e| e.to_string())?;
        for r in releases.as_array().into_iter().flatten() {
            let (name, ns) = (r["name"].as_str().unwrap_or(""), r["namespace"].as_str().unwrap_or(""));
            self.helm.run(&["uninstall", name, "-n", ns]).map_err(failed)?;
        }
        // What the docs' own kubectl commands made (Secrets, RoleBindings) stays: only what the
        // releases made must go, and every object of theirs carries the instance label.
        self.nothing_left(&[], Some("app.kubernetes.io/instance"))
            .map_err(|e| format!("after helm uninstall: {e}"))
    }

    /// One ci values file: install, upgrade, rollback, uninstall; apply twice, diff, delete.
    fn ci(&self, run: &CiRun) -> Result<(), String> {
        self.fresh_namespaces()?;
        let chart = format!("charts/{}", run.chart);
        let values = format!("{chart}/ci/{}", run.values);
        let ns = run.namespace;
        let out = self
            .helm
            .run(&[
                "install",
                run.release,
                &chart,
                "-n",
                ns,
                "--create-namespace",
                "-f",
                &values,
            ])
            .map_err(failed)?;
        fail_on_warnings(&out).map_err(|e| format!("helm install: {e}"))?;
        self.settle()?;
        let out = self
            .helm
            .run(&[
                "upgrade",
                run.release,
                &chart,
                "-n",
                ns,
                "--reuse-values",
                "--set",
                &run.upgrade,
            ])
            .map_err(failed)?;
        fail_on_warnings(&out).map_err(|e| format!("helm upgrade: {e}"))?;
        self.settle()?;
        let out = self
            .helm
            .run(&["rollback", run.release, "1", "-n", ns])
            .map_err(failed)?;
        fail_on_warnings(&out).map_err(|e| format!("helm rollback: {e}"))?;
        self.settle()?;
        // `--validate` renders with the cluster's API versions, as `helm install` does
        // (`--dry-run=server` still takes helm's built-in list for `.Capabilities.APIVersions`).
        let rendered = self
            .helm
            .run(&["template", run.release, &chart, "-n", ns, "-f", &values, "--validate"])
            .map_err(failed)?;
        let cluster_objects = cluster_scoped(&rendered.stdout);
        let unlabelled = without_pod_security(&rendered.stdout);
        if !unlabelled.is_empty() {
            return Err(format!(
                "namespaces the chart creates without a pod-security.kubernetes.io/enforce label \
                 (their Pods get whatever the cluster defaults to): {}",
                unlabelled.join(", ")
            ));
        }
        let unplaced = without_namespace(&rendered.stdout);
        if !unplaced.is_empty() {
            return Err(format!(
                "rendered objects without metadata.namespace (kubectl apply would put them in the context's): {}",
                unplaced.join(", ")
            ));
        }
        self.helm.run(&["uninstall", run.release, "-n", ns]).map_err(failed)?;
        self.nothing_left(&cluster_objects, None)
            .map_err(|e| format!("after helm uninstall: {e}"))?;

        let file = self.work.join(format!("{}-{}.rendered.yaml", run.chart, run.values));
        std::fs::write(&file, &rendered.stdout).map_err(|e| format!("writing {}: {e}", file.display()))?;
        let file = file.display().to_string();
        let apply = ["apply", "--server-side", "--field-manager", FIELD_MANAGER, "-f", &file];
        for round in ["first", "second"] {
            let out = self.kubectl.run(&apply).map_err(failed)?;
            fail_on_warnings(&out).map_err(|e| format!("kubectl apply --server-side ({round}): {e}"))?;
        }
        self.settle()?;
        let (ok, out, _) = self
            .kubectl
            .output(
                &["diff", "--server-side", "--field-manager", FIELD_MANAGER, "-f", &file],
                None,
            )
            .map_err(failed)?;
        if !ok {
            return Err(format!(
                "kubectl diff after two applies shows drift:\n{}{}",
                out.stdout, out.stderr
            ));
        }
        self.kubectl
            .run(&["delete", "-f", &file, "--wait=true"])
            .map_err(failed)?;
        self.nothing_left(&cluster_objects, None)
            .map_err(|e| format!("after kubectl delete: {e}"))
    }

    /// [`NAMESPACES`] gone (and with them anything of an earlier scenario).
    fn fresh_namespaces(&self) -> Result<(), String> {
        let mut args = vec![
            "delete",
            "namespace",
            "--ignore-not-found",
            "--wait=true",
            "--timeout=120s",
        ];
        args.extend(NAMESPACES);
        self.kubectl.run(&args).map_err(failed).map(drop)
    }

    /// Waits until the controllers have created every workload's Pods in [`NAMESPACES`]; fails on
    /// a FailedCreate event.
    fn settle(&self) -> Result<(), String> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let mut workloads = Vec::new();
            let mut events = Vec::new();
            for ns in NAMESPACES {
                workloads.extend(self.list(&["deployments,statefulsets", "-n", ns])?);
                events.extend(self.list(&["events", "-n", ns])?);
            }
            match verdict::progress(
                &serde_json::json!({"items": workloads}),
                &serde_json::json!({"items": events}),
            ) {
                Progress::Settled => return Ok(()),
                Progress::Refused(why) => return Err(format!("FailedCreate:\n  {}", why.join("\n  "))),
                Progress::Waiting(names) if Instant::now() > deadline => {
                    return Err(format!(
                        "the controllers created no Pods for {} within {DEADLINE:?}",
                        names.join(", ")
                    ));
                }
                Progress::Waiting(_) => std::thread::sleep(POLL),
            }
        }
    }

    fn list(&self, what: &[&str]) -> Result<Vec<Value>, String> {
        let mut args = vec!["get"];
        args.extend(what);
        args.extend(["-o", "json", "--ignore-not-found"]);
        let out = self.kubectl.run(&args).map_err(failed)?;
        if out.stdout.trim().is_empty() {
            return Ok(Vec::new());
        }
        let list: Value = serde_json::from_str(&out.stdout).map_err(|e| e.to_string())?;
        Ok(list["items"].as_array().cloned().unwrap_or_default())
    }

    /// Waits until [`NAMESPACES`] hold nothing (matching `selector`, when given) but
    /// [`verdict::left_behind`]'s exceptions, and `cluster_objects` (`kind/name`) are gone.
    fn nothing_left(&self, cluster_objects: &[String], selector: Option<&str>) -> Result<(), String> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let mut left = Vec::new();
            for ns in NAMESPACES {
                let mut args = vec!["get", &self.kinds, "-n", ns, "-o", "name", "--ignore-not-found"];
                if let Some(selector) = selector {
                    args.extend(["-l", selector]);
                }
                let out = self.kubectl.run(&args).map_err(failed)?;
                left.extend(
                    verdict::left_behind(&out.stdout)
                        .into_iter()
                        .map(|n| format!("{ns}: {n}")),
                );
            }
            for object in cluster_objects {
                let out = self
                    .kubectl
                    .run(&["get", object, "-o", "name", "--ignore-not-found"])
                    .map_err(failed)?;
                left.extend(out.stdout.lines().map(str::to_string));
            }
            if left.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("left behind after {DEADLINE:?}:\n  {}", left.join("\n  ")));
            }
            std::thread::sleep(POLL);
        }
    }
}

/// The objects of rendered manifests.
fn objects(rendered: &str) -> Vec<Value> {
    rendered
        .split("\n---")
        .filter_map(|doc| serde_saphyr::from_str::<Value>(doc).ok())
        .filter(|o| o["kind"].is_string())
        .collect()
}

fn kind_name(o: &Value) -> String {
    format!(
        "{}/{}",
        o["kind"].as_str().unwrap_or_default().to_ascii_lowercase(),
        o["metadata"]["name"].as_str().unwrap_or_default()
    )
}

fn cluster_kind(o: &Value) -> bool {
    CLUSTER_KINDS.iter().any(|k| o["kind"] == *k)
}

/// `kind/name` of the cluster-scoped objects among rendered manifests.
fn cluster_scoped(rendered: &str) -> Vec<String> {
    objects(rendered)
        .iter()
        .filter(|o| cluster_kind(o))
        .map(kind_name)
        .collect()
}

/// `kind/name` of the namespaced objects of rendered manifests that name no namespace.
fn without_namespace(rendered: &str) -> Vec<String> {
    objects(rendered)
        .iter()
        .filter(|o| !cluster_kind(o) && !o["metadata"]["namespace"].is_string())
        .map(kind_name)
        .collect()
}

/// `namespace/name` of the Namespaces of rendered manifests that do not say which Pod Security
/// level they enforce.
fn without_pod_security(rendered: &str) -> Vec<String> {
    objects(rendered)
        .iter()
        .filter(|o| o["kind"] == "Namespace")
        .filter(|o| !o["metadata"]["labels"]["pod-security.kubernetes.io/enforce"].is_string())
        .map(kind_name)
        .collect()
}

/// A failure's first lines, for the table.
fn summary(error: &str) -> String {
    let text: Vec<&str> = error.lines().map(str::trim).filter(|l| !l.is_empty()).take(2).collect();
    let text = text.join(" / ").replace('|', "\\|");
    match text.char_indices().nth(240) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_runs_use_the_docs_release_names() {
        let cases = [
            (
                "faros",
                "faros",
                "faros",
                "faros-hub-api.podAnnotations.faros-ci-upgrade=changed",
            ),
            ("faros-kcp", "kcp", "faros", "podAnnotations.faros-ci-upgrade=changed"),
            (
                "faros-hub-api",
                "hub",
                "faros",
                "podAnnotations.faros-ci-upgrade=changed",
            ),
            (
                "faros-hub-reconciler",
                "reconciler",
                "faros",
                "podAnnotations.faros-ci-upgrade=changed",
            ),
            (
                "faros-provider-quickstart",
                "quickstart",
                "faros-providers",
                "podAnnotations.faros-ci-upgrade=changed",
            ),
        ];
        for (chart, release, namespace, upgrade) in cases {
            let run = ci_run(chart, "default-values.yaml");
            assert_eq!(
                (run.release, run.namespace, run.upgrade.as_str()),
                (release, namespace, upgrade),
                "{chart}"
            );
        }
    }

    #[test]
    fn placement_of_rendered_objects() {
        let rendered = "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: faros-providers\n\
                        ---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: faros\n\
                        ---\n# Source: x\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
        assert_eq!(cluster_scoped(rendered), ["namespace/faros-providers"]);
        assert_eq!(without_namespace(rendered), ["configmap/c"]);
    }

    #[test]
    fn namespaces_say_their_pod_security_level() {
        let ns =
            |labels: &str| format!("---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: p\n  labels: {labels}\n");
        let cases = [
            (ns("{}"), vec!["namespace/p"]),
            (ns("{pod-security.kubernetes.io/warn: restricted}"), vec!["namespace/p"]),
            (ns("{pod-security.kubernetes.io/enforce: baseline}"), vec![]),
            (
                "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: p\n".to_string(),
                vec!["namespace/p"],
            ),
        ];
        for (rendered, want) in cases {
            assert_eq!(without_pod_security(&rendered), want, "{rendered}");
        }
    }

    #[test]
    fn table_summaries() {
        let long = "x".repeat(300);
        let cases = [
            (
                "helm install failed:\n\nError: refused | no",
                "helm install failed: / Error: refused \\| no",
            ),
            (long.as_str(), ""),
        ];
        for (error, want) in cases {
            let got = summary(error);
            if want.is_empty() {
                assert_eq!(got.chars().count(), 241, "{got}");
            } else {
                assert_eq!(got, want);
            }
        }
    }

    #[test]
    fn pod_security_labels_for_every_mode() {
        let labels = pod_security_labels("restricted");
        assert_eq!(
            labels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
            [
                "pod-security.kubernetes.io/enforce=restricted",
                "pod-security.kubernetes.io/warn=restricted",
                "pod-security.kubernetes.io/audit=restricted",
            ]
        );
    }
}
