//! `init` and `serve` in a real provider workspace (provisioned by the hub reconciler): the minted
//! ServiceAccount kubeconfig with the Helm chart's environment passes without flags, and what is
//! misplaced or misnamed is refused — through the library and through the binary, as an author
//! whose shell still points `KUBECONFIG` at the admin kubeconfig would run it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

use faros_core::kcp::apis::v1alpha2::APIExport;
use faros_core::names;
use faros_provider_quickstart as quickstart;
use faros_sdk::bootstrap::InitError;
use faros_test_support::kubeconfig::config_from_yaml;
use kube::api::Api;
use pretty_assertions::assert_eq;

const BIN: &str = env!("CARGO_BIN_EXE_faros-provider-quickstart");

/// `faros-provider-quickstart <args>` with only `env` set (plus PATH), so no variable of the
/// machine running the tests leaks in.
fn run(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    cmd.env("HOME", "/nonexistent").env("FAROS_LOG_FORMAT", "json");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_in_the_provider_workspace_passes_and_the_wrong_place_is_refused() {
    let kcp = common::Kcp::start().await;
    let provisioned = common::provision(&kcp).await;
    let minted = &provisioned.kubeconfig;
    let provider = config_from_yaml(minted).await.unwrap();
    let workspace = names::provider_workspace_path(quickstart::PROVIDER);
    let exports: Api<APIExport> = Api::all(kcp.client(&workspace).await);
    let (schemas, manifest) = quickstart::app().bundled_paths();
    let mut opts = quickstart::app().init_options();
    opts.schemas_dir = schemas.clone();
    opts.catalog_entry_file = Some(manifest.clone());

    // A CatalogEntry named otherwise would be ignored by the hub: refused, nothing written.
    let dir = tempfile::tempdir().unwrap();
    let misnamed = dir.path().join("manifest.yaml");
    let source = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&misnamed, source.replace("name: quickstart\n", "name: quick-start\n")).unwrap();
    let err = quickstart::app()
        .init(
            provider.clone(),
            &faros_sdk::bootstrap::InitOptions {
                catalog_entry_file: Some(misnamed.clone()),
                ..opts.clone()
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(err, InitError::Input(_)), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: metadata.name: \"quick-start\" is not this provider's name (\"quickstart\", from its workspace \
             root:faros:providers:quickstart); the hub only reads the CatalogEntry named like the provider",
            misnamed.display()
        )
    );
    assert!(exports.get_opt(quickstart::EXPORT).await.unwrap().is_none());

    // The admin in the provider workspace: the right place, the wrong identity.
    let err = quickstart::app()
        .init(kcp.server.admin_config(&workspace).await.unwrap(), &opts)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "refusing to act in workspace root:faros:providers:quickstart at {}/clusters/root:faros:providers:quickstart \
             as admin: admin is not the provider's ServiceAccount system:serviceaccount:default:provider. ",
            kcp.server.url()
        )),
        "{err}"
    );
    assert!(exports.get_opt(quickstart::EXPORT).await.unwrap().is_none());

    // The minted ServiceAccount kubeconfig, no flags: published, and it says where.
    assert!(!opts.allow_prune && !opts.allow_foreign_workspace);
    let report = quickstart::app().init(provider, &opts).await.unwrap();
    let placement = report.placement.unwrap();
    assert_eq!(
        (
            placement.workspace.as_str(),
            placement.identity.as_str(),
            placement.provider.as_deref()
        ),
        (
            "root:faros:providers:quickstart",
            names::PROVIDER_SERVICE_ACCOUNT_USER,
            Some("quickstart")
        )
    );
    assert!(placement.foreign.is_empty());
    assert!(exports.get_opt(quickstart::EXPORT).await.unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_refuses_the_admin_kubeconfig_and_accepts_the_helm_setup() {
    let kcp = common::Kcp::start().await;
    let provisioned = common::provision(&kcp).await;
    let minted = &provisioned.kubeconfig;
    let dir = tempfile::tempdir().unwrap();
    let admin = dir.path().join("admin.kubeconfig");
    std::fs::write(&admin, kcp.server.admin_kubeconfig()).unwrap();
    let provider = dir.path().join("faros-provider-kubeconfig");
    std::fs::write(&provider, minted).unwrap();
    let (schemas, manifest) = quickstart::app().bundled_paths();
    let inputs = [
        ("FAROS_SCHEMAS_DIR", schemas.as_path()),
        ("FAROS_CATALOGENTRY_FILE", manifest.as_path()),
    ];

    // FAROS_PROVIDER_KUBECONFIG unset, KUBECONFIG at the admin kubeconfig: refused, naming both.
    let with_admin: Vec<(&str, &Path)> = [("KUBECONFIG", admin.as_path())].into_iter().chain(inputs).collect();
    let out = run(&["init"], &with_admin);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    for want in [
        "refusing to act in workspace root at ",
        " as admin: ",
        "kubeconfig: KUBECONFIG, ~/.kube/config or the in-cluster ServiceAccount (FAROS_PROVIDER_KUBECONFIG is unset",
    ] {
        assert!(said.contains(want), "missing {want:?} in {said}");
    }
    let listen = [("FAROS_LISTEN", Path::new("127.0.0.1:0"))];
    let out = run(
        &["serve"],
        &with_admin.iter().copied().chain(listen).collect::<Vec<_>>(),
    );
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("refusing to act in workspace root at "), "{said}");

    // The provider kubeconfig without a schemas directory: the default, which is not there.
    let out = run(&["init"], &[("FAROS_PROVIDER_KUBECONFIG", provider.as_path())]);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains(
            "FAROS_SCHEMAS_DIR=/etc/faros/schemas (the default: FAROS_SCHEMAS_DIR is unset): directory does not exist"
        ),
        "{said}"
    );

    // What the Helm chart's init container sets (the paths differ only in where they are mounted).
    let helm: Vec<(&str, &Path)> = [("FAROS_PROVIDER_KUBECONFIG", provider.as_path())]
        .into_iter()
        .chain(inputs)
        .collect();
    let out = run(&["init"], &helm);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    for want in [
        "acting in the provider workspace",
        r#""workspace":"root:faros:providers:quickstart""#,
        r#""identity":"system:serviceaccount:default:provider""#,
        "quickstart init: workspace bootstrapped",
    ] {
        assert!(said.contains(want), "missing {want:?} in {said}");
    }
}
