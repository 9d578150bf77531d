//! Providers managed the way a GitOps repository manages them: a directory of `Provider` manifests
//! applied to `root:faros:system:providers` with `kubectl apply -k`, client-side and server-side,
//! with the platform's GitOps registrar kubeconfig where it exposes one (in-process, `faros dev`
//! targets) and the admin kubeconfig otherwise;
//! `kubectl diff -k` is empty after an apply and shows an edit; pruning by label removes a Provider
//! and, through the reconciler's finalizer, its workspace; and every Provider's status is what a
//! GitOps controller (kstatus) reads as healthy: `observedGeneration == generation` and `Ready=True`.
//!
//! Runs on every target: it registers Providers of its own (no provider process needed: `Ready`
//! describes provisioning) and deletes them again.

use std::path::Path;
use std::process::Output;

use faros_core::kcp::tenancy::Workspace;
use faros_core::names;
use faros_e2e::{Platform, WAIT, eventually, kubectl};
use kube::Api;
use serde_json::Value;

const RUN_LABEL: &str = "e2e.faros.sh/run";

fn provider_manifest(name: &str, display: &str, run: &str) -> String {
    format!(
        "apiVersion: {}/{}\nkind: Provider\nmetadata:\n  name: {name}\n  labels:\n    {RUN_LABEL}: {run}\nspec:\n  \
         displayName: {display}\n",
        names::ADMIN_GROUP,
        names::API_VERSION
    )
}

fn write_kustomization(dir: &Path, files: &[&str]) {
    let resources: String = files.iter().map(|f| format!("  - {f}\n")).collect();
    std::fs::write(
        dir.join("kustomization.yaml"),
        format!("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n{resources}"),
    )
    .unwrap();
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Waits until Provider `name` is healthy by kstatus' rules and returns its generation.
async fn healthy(kubeconfig: &Path, name: &str) -> i64 {
    eventually(
        &format!("Provider {name} to be healthy (observed generation, Ready=True)"),
        WAIT,
        || async {
            let out = kubectl(kubeconfig, &["get", "provider", name, "-o", "json"], None).await?;
            if !out.status.success() {
                return Ok(None);
            }
            let p: Value = serde_json::from_slice(&out.stdout)?;
            let generation = p["metadata"]["generation"].as_i64();
            let observed = p["status"]["observedGeneration"].as_i64();
            let ready = p["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
            Ok((generation.is_some() && generation == observed && ready).then_some(generation.unwrap_or_default()))
        },
    )
    .await
    .unwrap()
}

async fn gone(p: &Platform, kubeconfig: &Path, name: &str) {
    eventually(&format!("Provider {name} to be deleted"), WAIT, || async {
        let out = kubectl(
            kubeconfig,
            &["get", "provider", name, "--ignore-not-found", "-o", "name"],
            None,
        )
        .await?;
        Ok((out.status.success() && out.stdout.is_empty()).then_some(()))
    })
    .await
    .unwrap();
    let factory = faros_core::client::ClientFactory::new(p.admin()).unwrap();
    let workspaces: Api<Workspace> = Api::all(factory.cluster(names::PROVIDERS_PATH).unwrap());
    eventually(
        &format!("workspace {} to be deleted", names::provider_workspace_path(name)),
        WAIT,
        || async { Ok(workspaces.get_opt(name).await?.is_none().then_some(())) },
    )
    .await
    .unwrap();
}

pub async fn run(p: &Platform) {
    let run = p.unique("gitops");
    let (a, b) = (format!("{run}-a"), format!("{run}-b"));
    let repo = p.dir().join(&run);
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("a.yaml"), provider_manifest(&a, "Provider A", &run)).unwrap();
    std::fs::write(repo.join("b.yaml"), provider_manifest(&b, "Provider B", &run)).unwrap();
    write_kustomization(&repo, &["a.yaml", "b.yaml"]);
    let repo_arg = repo.to_str().unwrap();
    // What a GitOps tool would use: the registrar kubeconfig, where the platform exposes it.
    let kc = p.gitops_kubeconfig().await.unwrap();
    // The reconciler bootstraps the workspace: a platform that just started may not have it yet.
    eventually("root:faros:system:providers to serve Providers", WAIT, || async {
        let out = kubectl(&kc, &["get", "providers", "-o", "name"], None).await?;
        Ok(out.status.success().then_some(()))
    })
    .await
    .unwrap();

    // Client-side apply creates both; the reconciler provisions them.
    let applied = kubectl(&kc, &["apply", "-k", repo_arg], None).await.unwrap();
    assert!(applied.status.success(), "{}", text(&applied));
    assert_eq!(healthy(&kc, &a).await, 1);
    assert_eq!(healthy(&kc, &b).await, 1);

    // Server-side apply of the same directory changes nothing, and nothing is left to diff.
    let ssa = kubectl(&kc, &["apply", "-k", repo_arg, "--server-side"], None)
        .await
        .unwrap();
    assert!(ssa.status.success(), "{}", text(&ssa));
    let diff = kubectl(&kc, &["diff", "-k", repo_arg], None).await.unwrap();
    assert_eq!(diff.status.code(), Some(0), "no diff after apply: {}", text(&diff));
    assert!(diff.stdout.is_empty(), "{}", text(&diff));

    // An edit shows in the diff, applies server-side, and is observed.
    std::fs::write(repo.join("a.yaml"), provider_manifest(&a, "Provider A edited", &run)).unwrap();
    let diff = kubectl(&kc, &["diff", "-k", repo_arg], None).await.unwrap();
    assert_eq!(diff.status.code(), Some(1), "the edit is a diff: {}", text(&diff));
    assert!(
        String::from_utf8_lossy(&diff.stdout).contains("Provider A edited"),
        "{}",
        text(&diff)
    );
    let ssa = kubectl(&kc, &["apply", "-k", repo_arg, "--server-side"], None)
        .await
        .unwrap();
    assert!(ssa.status.success(), "{}", text(&ssa));
    assert_eq!(healthy(&kc, &a).await, 2);
    let diff = kubectl(&kc, &["diff", "-k", repo_arg], None).await.unwrap();
    assert_eq!(
        diff.status.code(),
        Some(0),
        "no diff after the edit is applied: {}",
        text(&diff)
    );

    // b leaves the repository: pruning by this run's label deletes it, and its workspace goes too.
    write_kustomization(&repo, &["a.yaml"]);
    let selector = format!("{RUN_LABEL}={run}");
    let allowlist = format!("{}/{}/Provider", names::ADMIN_GROUP, names::API_VERSION);
    let pruned = kubectl(
        &kc,
        &[
            "apply",
            "-k",
            repo_arg,
            "--prune",
            "-l",
            &selector,
            "--prune-allowlist",
            &allowlist,
        ],
        None,
    )
    .await
    .unwrap();
    assert!(pruned.status.success(), "{}", text(&pruned));
    assert!(
        String::from_utf8_lossy(&pruned.stdout).contains("pruned"),
        "{}",
        text(&pruned)
    );
    gone(p, &kc, &b).await;
    assert_eq!(healthy(&kc, &a).await, 2, "a is untouched by the prune");

    // Clean up: the repository's remaining Provider.
    let deleted = kubectl(&kc, &["delete", "-k", repo_arg, "--wait=false"], None)
        .await
        .unwrap();
    assert!(deleted.status.success(), "{}", text(&deleted));
    gone(p, &kc, &a).await;
}
