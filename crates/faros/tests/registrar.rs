//! The GitOps registrar kubeconfig `faros dev` writes (`<state dir>/registrar.kubeconfig`), used by
//! the installed kubectl the way a GitOps pipeline would: `kubectl apply -k` of a directory of
//! Provider manifests lands in `root:faros:system:providers` and the Providers become Ready; reading
//! Secrets there, writing Provider status, and anything in `root`, a tenant workspace or a provider
//! workspace (through the hub and on kcp directly) is forbidden.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

mod devproc;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use faros_core::names;
use faros_test_support::eventually;
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(60);

/// kubectl with its discovery cache in `cache` (the test's, not the user's).
fn kubectl(kubeconfig: &Path, cache: &Path, args: &[&str]) -> Output {
    let cache = cache.to_str().unwrap();
    let args: Vec<&str> = ["--cache-dir", cache].into_iter().chain(args.iter().copied()).collect();
    faros_test_support::kubectl::run(kubeconfig, &args, None).unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Fails unless kubectl was refused with 403: `Error from server (Forbidden)`, or, from `kubectl
/// create`, the Status message `… is forbidden: User … cannot …`.
fn assert_forbidden(what: &str, out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && (stderr.contains("(Forbidden)") || stderr.contains(" is forbidden: User ")),
        "{what} must be forbidden: {}",
        text(out)
    );
}

fn provider_manifest(name: &str) -> String {
    format!(
        "apiVersion: {}/{}\nkind: Provider\nmetadata:\n  name: {name}\nspec:\n  displayName: {name}\n",
        names::ADMIN_GROUP,
        names::API_VERSION
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registrar_kubeconfig_registers_providers_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let dev = devproc::launch(&dir.path().join("state")).start().await.unwrap();
    let kc = dev.state_dir.join("registrar.kubeconfig");
    let cache = dir.path().join("kubectl-cache");

    // Written before the run is announced, owner-only, addressed to system:providers' logical
    // cluster through the hub.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&kc)
            .expect("registrar.kubeconfig")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    let yaml = std::fs::read_to_string(&kc).unwrap();
    let doc: Value = serde_saphyr::from_str(&yaml).unwrap();
    let server = doc["clusters"][0]["cluster"]["server"].as_str().unwrap().to_string();
    let cluster = server
        .strip_prefix(&format!("{}/clusters/", dev.hub))
        .unwrap_or_else(|| panic!("{server} is not the hub's pass-through"));
    assert!(!cluster.contains(':'), "a logical cluster name, not a path: {server}");
    assert!(dev.banner.contains("registrar.kubeconfig"), "{}", dev.banner);

    // `kubectl apply -k` of a directory of two Providers, as a GitOps repository holds them.
    let repo = dir.path().join("providers");
    std::fs::create_dir(&repo).unwrap();
    std::fs::write(repo.join("a.yaml"), provider_manifest("gitops-a")).unwrap();
    std::fs::write(repo.join("b.yaml"), provider_manifest("gitops-b")).unwrap();
    std::fs::write(
        repo.join("kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - a.yaml\n  - b.yaml\n",
    )
    .unwrap();
    let repo_arg = repo.to_str().unwrap();
    let applied = kubectl(&kc, &cache, &["apply", "-k", repo_arg]);
    assert!(applied.status.success(), "{}", text(&applied));
    for name in ["gitops-a", "gitops-b"] {
        eventually(&format!("Provider {name} to be Ready"), WAIT, || async {
            let out = kubectl(&kc, &cache, &["get", "provider", name, "-o", "json"]);
            anyhow::ensure!(out.status.success(), "{}", text(&out));
            let p: Value = serde_json::from_slice(&out.stdout)?;
            let ready = p["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
            Ok((ready && p["status"]["observedGeneration"] == p["metadata"]["generation"]).then_some(()))
        })
        .await
        .unwrap();
    }
    let diff = kubectl(&kc, &cache, &["diff", "-k", repo_arg]);
    assert_eq!(
        diff.status.code(),
        Some(0),
        "nothing to diff after the apply: {}",
        text(&diff)
    );
    let status = kubectl(
        &kc,
        &cache,
        &["get", "provider", "gitops-a", "--subresource", "status", "-o", "name"],
    );
    assert!(status.status.success(), "reading status: {}", text(&status));

    // Nothing else in system:providers.
    assert_forbidden(
        "listing Secrets",
        &kubectl(&kc, &cache, &["get", "secrets", "-n", "default"]),
    );
    assert_forbidden(
        "reading the provider kubeconfig Secret",
        &kubectl(
            &kc,
            &cache,
            &["get", "secret", "-n", "default", "quickstart-kubeconfig"],
        ),
    );
    assert_forbidden(
        "writing Provider status",
        &kubectl(
            &kc,
            &cache,
            &[
                "patch",
                "provider",
                "gitops-a",
                "--subresource",
                "status",
                "--type",
                "merge",
                "-p",
                r#"{"status":{"observedGeneration":99}}"#,
            ],
        ),
    );
    assert_forbidden(
        "creating a ServiceAccount",
        &kubectl(&kc, &cache, &["create", "serviceaccount", "-n", "default", "more"]),
    );
    assert_forbidden(
        "listing ClusterRoleBindings",
        &kubectl(&kc, &cache, &["get", "clusterrolebindings"]),
    );

    // Nothing in other workspaces, whether through the hub's pass-through or on kcp directly.
    let kcp = dev.server.strip_suffix("/clusters/root").unwrap().to_string();
    let tenant = names::team_workspace_path("demo", "default");
    let provider_ws = names::provider_workspace_path("quickstart");
    for base in [dev.hub.as_str(), kcp.as_str()] {
        for (path, args) in [
            (names::ROOT_PATH, &["get", "namespaces"][..]),
            (names::FAROS_PATH, &["get", "workspaces"][..]),
            (tenant.as_str(), &["get", "configmaps", "-n", "default"][..]),
            (provider_ws.as_str(), &["get", "namespaces"][..]),
        ] {
            let server = format!("--server={base}/clusters/{path}");
            let mut with_server = vec![server.as_str()];
            with_server.extend_from_slice(args);
            assert_forbidden(
                &format!("{args:?} in {path} via {base}"),
                &kubectl(&kc, &cache, &with_server),
            );
        }
    }

    // The repository empties: the registrar deletes what it registered.
    let deleted = kubectl(&kc, &cache, &["delete", "-k", repo_arg, "--wait=false"]);
    assert!(deleted.status.success(), "{}", text(&deleted));
    for name in ["gitops-a", "gitops-b"] {
        eventually(&format!("Provider {name} to be gone"), WAIT, || async {
            let out = kubectl(
                &kc,
                &cache,
                &["get", "provider", name, "--ignore-not-found", "-o", "name"],
            );
            anyhow::ensure!(out.status.success(), "{}", text(&out));
            Ok(out.stdout.is_empty().then_some(()))
        })
        .await
        .unwrap();
    }
}
