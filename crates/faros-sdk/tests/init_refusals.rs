//! The `init` runs that would fail silently, destroy or act in the wrong place are refused, with a
//! message naming the variable, path, identity or workspace, and without writing anything.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::Kcp;
use faros_core::kcp::apis::v1alpha1::APIResourceSchema;
use faros_core::kcp::apis::v1alpha2::APIExport;
use faros_core::names;
use faros_sdk::bootstrap::{InitError, InitOptions, init};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::Client;
use kube::api::{Api, ListParams};
use pretty_assertions::assert_eq;

const GROUP: &str = "refusals.example.faros.sh";

fn schema_yaml(plural: &str, kind: &str) -> String {
    // kcp refuses a singular that is not a lower-case DNS-1035 label.
    let singular = kind.to_lowercase();
    format!(
        "apiVersion: apis.kcp.io/v1alpha1\nkind: APIResourceSchema\nmetadata:\n  name: v1.{plural}.{GROUP}\n\
         spec:\n  group: {GROUP}\n  names: {{kind: {kind}, listKind: {kind}List, plural: {plural}, singular: {singular}}}\n\
         \x20 scope: Namespaced\n  versions:\n  - name: v1alpha1\n    served: true\n    storage: true\n\
         \x20   schema: {{type: object}}\n"
    )
}

fn options(dir: &Path) -> InitOptions {
    InitOptions {
        export: GROUP.into(),
        groups: vec![],
        schemas_dir: dir.to_path_buf(),
        claims: vec![],
        catalog_entry_file: None,
        workspace_path: None,
        env: BTreeMap::new(),
        allow_prune: false,
        // Plain logical clusters as the admin: these tests are about the other refusals.
        allow_foreign_workspace: true,
    }
}

fn with_schemas(plurals: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (plural, kind) in plurals {
        std::fs::write(dir.path().join(format!("{plural}.yaml")), schema_yaml(plural, kind)).unwrap();
    }
    dir
}

/// Nothing `init` writes exists in the cluster (root holds kcp's own schemas, as on kcp).
async fn assert_nothing_written(client: &Client) {
    assert!(
        Api::<APIResourceSchema>::all(client.clone())
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .all(|s| s.spec.group != GROUP)
    );
    assert!(
        Api::<APIExport>::all(client.clone())
            .get_opt(GROUP)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        Api::<ClusterRole>::all(client.clone())
            .get_opt(&names::bind_grant_name(GROUP))
            .await
            .unwrap()
            .is_none()
    );
}

const SCHEMAS_HINT: &str = "(set FAROS_SCHEMAS_DIR to the directory holding the provider's APIResourceSchema YAML)";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_or_empty_inputs_are_errors_naming_the_variable() {
    let kcp = Kcp::start().await;
    let client = kcp.client("inputs").await;
    let config = kcp.server.admin_config("inputs").await.unwrap();
    let empty = tempfile::tempdir().unwrap();
    let missing = empty.path().join("missing");
    let file = empty.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let set = |dir: &Path| {
        let mut opts = options(dir);
        opts.env
            .insert(names::ENV_SCHEMAS_DIR.into(), dir.display().to_string());
        opts
    };
    let cases: Vec<(InitOptions, String)> = vec![
        (
            // FAROS_SCHEMAS_DIR unset: the default, which exists only inside an image.
            options(Path::new(names::DEFAULT_SCHEMAS_DIR)),
            format!(
                "FAROS_SCHEMAS_DIR=/etc/faros/schemas (the default: FAROS_SCHEMAS_DIR is unset): directory does not \
                 exist {SCHEMAS_HINT}"
            ),
        ),
        (
            set(&missing),
            format!(
                "FAROS_SCHEMAS_DIR={}: directory does not exist {SCHEMAS_HINT}",
                missing.display()
            ),
        ),
        (
            set(empty.path()),
            format!(
                "FAROS_SCHEMAS_DIR={}: no *.yaml or *.yml files in the directory {SCHEMAS_HINT}",
                empty.path().display()
            ),
        ),
        (
            set(&file),
            format!("FAROS_SCHEMAS_DIR={}: not a directory {SCHEMAS_HINT}", file.display()),
        ),
    ];
    for (opts, want) in cases {
        let err = init(config.clone(), &opts).await.unwrap_err();
        assert!(matches!(err, InitError::Input(_)), "{err}");
        assert_eq!(err.to_string(), want);
    }

    let schemas = with_schemas(&[("greetings", "Greeting")]);
    let entry = schemas.path().join("no-such-manifest.yaml");
    let opts = InitOptions {
        catalog_entry_file: Some(entry.clone()),
        ..options(schemas.path())
    };
    assert_eq!(
        init(config.clone(), &opts).await.unwrap_err().to_string(),
        format!(
            "FAROS_CATALOGENTRY_FILE={}: file does not exist (set FAROS_CATALOGENTRY_FILE to the provider's \
             CatalogEntry manifest)",
            entry.display()
        )
    );
    let opts = InitOptions {
        catalog_entry_file: Some(PathBuf::from(names::DEFAULT_CATALOGENTRY_FILE)),
        ..options(schemas.path())
    };
    assert!(init(config, &opts).await.unwrap_err().to_string().starts_with(
        "FAROS_CATALOGENTRY_FILE=/etc/faros/catalogentry/catalogentry.yaml (the default: FAROS_CATALOGENTRY_FILE \
             is unset): file does not exist"
    ));
    assert_nothing_written(&client).await;
}

fn export_resources(export: &APIExport) -> Vec<String> {
    export
        .spec
        .resources
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|r| format!("{}.{}", r.name, r.group))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_published_resource_needs_allow_prune() {
    let kcp = Kcp::start().await;
    let client = kcp.client("prune").await;
    let config = kcp.server.admin_config("prune").await.unwrap();
    let dir = with_schemas(&[("greetings", "Greeting"), ("farewells", "Farewell")]);
    init(config.clone(), &options(dir.path())).await.unwrap();
    let exports: Api<APIExport> = Api::all(client.clone());
    let published = export_resources(&exports.get(GROUP).await.unwrap());
    assert_eq!(
        published,
        vec![format!("farewells.{GROUP}"), format!("greetings.{GROUP}")]
    );

    // The farewells schema file is gone (a typo'd directory, a half-built image): refused.
    std::fs::remove_file(dir.path().join("farewells.yaml")).unwrap();
    let err = init(config.clone(), &options(dir.path())).await.unwrap_err();
    assert!(matches!(err, InitError::PruneRefused { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "APIExport \"{GROUP}\": init would remove a resource that no schema in FAROS_SCHEMAS_DIR={} defines any \
             more: farewells.{GROUP} (schema v1.farewells.{GROUP}); every tenant bound to the export would lose them. \
             Restore their schema files, or set FAROS_INIT_ALLOW_PRUNE=true (--allow-prune) to remove them",
            dir.path().display()
        )
    );
    assert_eq!(export_resources(&exports.get(GROUP).await.unwrap()), published);

    // With the flag: pruned, and reported per resource.
    let opts = InitOptions {
        allow_prune: true,
        ..options(dir.path())
    };
    let report = init(config.clone(), &opts).await.unwrap();
    assert_eq!(report.pruned, vec![format!("farewells.{GROUP}")]);
    assert_eq!(
        export_resources(&exports.get(GROUP).await.unwrap()),
        vec![format!("greetings.{GROUP}")]
    );
    // Nothing left to prune: a plain re-run needs no flag.
    assert!(init(config, &options(dir.path())).await.unwrap().unchanged());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_kubeconfig_is_refused_naming_identity_and_workspace() {
    let kcp = Kcp::start().await;
    let dir = with_schemas(&[("greetings", "Greeting")]);
    let strict = InitOptions {
        allow_foreign_workspace: false,
        ..options(dir.path())
    };

    // The author's shell still points at the admin kubeconfig: `root`, as `admin`.
    let err = init(kcp.admin_config().await, &strict).await.unwrap_err();
    assert!(matches!(err, InitError::Workspace(_)), "{err}");
    let text = err.to_string();
    let want = format!(
        "refusing to act in workspace root at {}/clusters/root as admin: workspace root is not a provider workspace \
         (root:faros:providers:<name>); ",
        kcp.server.url()
    );
    assert!(text.starts_with(&want), "{text}");
    assert!(
        text.contains("admin is not the provider's ServiceAccount system:serviceaccount:default:provider. "),
        "{text}"
    );
    assert!(text.contains("FAROS_PROVIDER_KUBECONFIG"), "{text}");
    assert!(text.contains("FAROS_ALLOW_FOREIGN_WORKSPACE=true"), "{text}");
    assert_nothing_written(&kcp.client("root").await).await;

    // A logical cluster that is no workspace at all.
    let err = init(kcp.server.admin_config("plain").await.unwrap(), &strict)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("the server has no LogicalCluster \"cluster\" there, so it is not a kcp workspace"),
        "{err}"
    );
    assert_nothing_written(&kcp.client("plain").await).await;
}
