//! `init` against an in-process embedded kcp, in a plain logical cluster (kcp kinds are served in
//! every cluster; CatalogEntries need the `providers.faros.sh` binding of a real provider workspace).
//! These run as the admin outside a provider workspace, so they allow a foreign workspace; the
//! refusals themselves are in `tests/init_refusals.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::Kcp;
use faros_core::kcp::apis::v1alpha1::{APIExportEndpointSlice, APIResourceSchema};
use faros_core::kcp::apis::v1alpha2::{APIExport, PermissionClaim, ResourceSchema};
use faros_sdk::bootstrap::{InitError, InitOptions, Outcome, init};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use pretty_assertions::assert_eq;
use serde_json::json;

const EXPORT: &str = "greetings.example.faros.sh";
const SCHEMA: &str = "v1.greetings.greetings.example.faros.sh";

fn schema_yaml(group: &str) -> String {
    format!(
        "apiVersion: apis.kcp.io/v1alpha1\nkind: APIResourceSchema\nmetadata:\n  name: v1.greetings.{group}\n\
         spec:\n  group: {group}\n  names: {{kind: Greeting, listKind: GreetingList, plural: greetings, singular: greeting}}\n\
         \x20 scope: Namespaced\n  versions:\n  - name: v1alpha1\n    served: true\n    storage: true\n\
         \x20   subresources: {{status: {{}}}}\n    schema: {{type: object, properties: {{spec: {{type: object}}, status: {{type: object}}}}}}\n"
    )
}

fn options(dir: &Path) -> InitOptions {
    InitOptions {
        export: EXPORT.into(),
        groups: vec![],
        schemas_dir: dir.to_path_buf(),
        claims: vec![PermissionClaim::new("", "configmaps", &["get", "list", "watch"])],
        catalog_entry_file: None,
        workspace_path: None,
        env: BTreeMap::new(),
        allow_prune: false,
        allow_foreign_workspace: true,
    }
}

/// The resources the export's permission claims name, in order.
fn claim_resources(export: &APIExport) -> Vec<String> {
    export
        .spec
        .permission_claims
        .iter()
        .flatten()
        .map(|c| c.resource.clone())
        .collect()
}

fn schemas_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("greetings.yaml"), schema_yaml(EXPORT)).unwrap();
    let path = dir.path().to_path_buf();
    (dir, path)
}

/// resourceVersions of the objects only `init` writes. (kcp's own controllers write the export's
/// identity and the slice's status, so their versions move without `init`; for those the report
/// says whether `init` wrote.)
async fn resource_versions(client: &Client) -> Vec<String> {
    let mut rvs = vec![
        Api::<APIResourceSchema>::all(client.clone())
            .get(SCHEMA)
            .await
            .unwrap()
            .resource_version(),
    ];
    let grant = format!("faros:providers:bind:{EXPORT}");
    rvs.push(
        Api::<ClusterRole>::all(client.clone())
            .get(&grant)
            .await
            .unwrap()
            .resource_version(),
    );
    rvs.push(
        Api::<ClusterRoleBinding>::all(client.clone())
            .get(&grant)
            .await
            .unwrap()
            .resource_version(),
    );
    rvs.into_iter().map(|rv| rv.unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_publishes_everything_and_a_second_run_changes_nothing() {
    let kcp = Kcp::start().await;
    let client = kcp.client("provider-a").await;
    let config = kcp.server.admin_config("provider-a").await.unwrap();
    let (_keep, dir) = schemas_dir();
    let opts = options(&dir);

    let first = init(config.clone(), &opts).await.unwrap();
    let kinds: Vec<(&str, Outcome)> = first.applied.iter().map(|a| (a.kind.as_str(), a.outcome)).collect();
    assert_eq!(
        kinds,
        vec![
            ("APIResourceSchema", Outcome::Created),
            ("APIExport", Outcome::Created),
            ("APIExportEndpointSlice", Outcome::Created),
            ("ClusterRole", Outcome::Created),
            ("ClusterRoleBinding", Outcome::Created),
        ]
    );

    let export = Api::<APIExport>::all(client.clone()).get(EXPORT).await.unwrap();
    assert_eq!(
        export.spec.resources.clone().unwrap(),
        vec![ResourceSchema::crd(EXPORT, "greetings", SCHEMA)]
    );
    assert_eq!(
        serde_json::to_value(export.spec.permission_claims.clone().unwrap()).unwrap(),
        json!([{"resource": "configmaps", "verbs": ["get", "list", "watch"]}])
    );
    assert!(export.spec.maximal_permission_policy.is_none());
    let slice = Api::<APIExportEndpointSlice>::all(client.clone())
        .get(EXPORT)
        .await
        .unwrap();
    assert_eq!(slice.spec.export.name, EXPORT);
    assert_eq!(slice.spec.export.path, None);
    let grant = format!("faros:providers:bind:{EXPORT}");
    let role = Api::<ClusterRole>::all(client.clone()).get(&grant).await.unwrap();
    let rule = &role.rules.unwrap()[0];
    assert_eq!(rule.verbs, vec!["bind"]);
    assert_eq!(rule.resource_names, Some(vec![EXPORT.to_string()]));
    let binding = Api::<ClusterRoleBinding>::all(client.clone())
        .get(&grant)
        .await
        .unwrap();
    let subjects = binding.subjects.unwrap();
    assert_eq!(subjects.len(), 1);
    assert_eq!(
        (subjects[0].kind.as_str(), subjects[0].name.as_str()),
        ("Group", "system:authenticated")
    );

    let before = resource_versions(&client).await;
    let export_before = Api::<APIExport>::all(client.clone()).get(EXPORT).await.unwrap().spec;
    let second = init(config.clone(), &opts).await.unwrap();
    assert!(second.unchanged(), "{second:?}");
    assert_eq!(second.applied.len(), 5);
    assert_eq!(resource_versions(&client).await, before, "a second init writes nothing");
    let export_after = Api::<APIExport>::all(client.clone()).get(EXPORT).await.unwrap().spec;
    assert_eq!(export_after.resources, export_before.resources);
    assert_eq!(export_after.permission_claims, export_before.permission_claims);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_merge_keeps_foreign_entries_and_prunes_stale_own_ones() {
    let kcp = Kcp::start().await;
    let client = kcp.client("provider-b").await;
    let config = kcp.server.admin_config("provider-b").await.unwrap();
    let (_keep, dir) = schemas_dir();
    let exports: Api<APIExport> = Api::all(client.clone());
    let mut existing = faros_sdk::bootstrap::objects::new_export(
        EXPORT,
        vec![
            ResourceSchema::crd(EXPORT, "farewells", &format!("v1.farewells.{EXPORT}")),
            ResourceSchema::crd("templates.example.io", "templates", "v1.templates.templates.example.io"),
        ],
        vec![PermissionClaim::new("", "secrets", &["get"])],
    );
    existing.metadata.name = Some(EXPORT.into());
    exports.create(&PostParams::default(), &existing).await.unwrap();

    // Removing `farewells` from a published export needs the explicit opt-in.
    let opts = InitOptions {
        allow_prune: true,
        ..options(&dir)
    };
    let report = init(config, &opts).await.unwrap();
    assert_eq!(report.applied[1].outcome, Outcome::Updated);
    let export = exports.get(EXPORT).await.unwrap();
    let names: Vec<(String, String)> = export
        .spec
        .resources
        .clone()
        .unwrap()
        .into_iter()
        .map(|r| (r.group, r.name))
        .collect();
    assert_eq!(
        names,
        vec![
            (EXPORT.to_string(), "greetings".to_string()),
            ("templates.example.io".to_string(), "templates".to_string()),
        ]
    );
    // Claims on an existing export are the hub's to switch (init proposes them in the CatalogEntry).
    assert_eq!(claim_resources(&export), vec!["secrets"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_inits_both_succeed() {
    let kcp = Kcp::start().await;
    let config = kcp.server.admin_config("provider-c").await.unwrap();
    let (_keep, dir) = schemas_dir();
    let opts = options(&dir);
    let (a, b) = tokio::join!(init(config.clone(), &opts), init(config.clone(), &opts));
    a.unwrap();
    b.unwrap();
    assert!(init(config, &opts).await.unwrap().unchanged());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_names_file_and_field_and_writes_nothing() {
    let kcp = Kcp::start().await;
    let client = kcp.client("provider-d").await;
    let config = kcp.server.admin_config("provider-d").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("other.yaml");
    std::fs::write(&file, schema_yaml("other.example.io")).unwrap();
    let err = init(config.clone(), &options(dir.path())).await.unwrap_err();
    assert!(matches!(err, InitError::Input(_)));
    assert_eq!(
        err.to_string(),
        format!(
            "{}: spec.group: group \"other.example.io\" does not belong to this provider (allowed: {EXPORT})",
            file.display()
        )
    );
    assert!(
        Api::<APIExport>::all(client.clone())
            .get_opt(EXPORT)
            .await
            .unwrap()
            .is_none()
    );

    std::fs::write(&file, "apiVersion: apis.kcp.io/v1alpha1\nkind: [unclosed\n").unwrap();
    let err = init(config.clone(), &options(dir.path()))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.starts_with(&format!("{}: invalid YAML", file.display())), "{err}");

    // A changed schema under an existing name is refused: schemas are immutable.
    let (_keep, good) = schemas_dir();
    init(config.clone(), &options(&good)).await.unwrap();
    let changed = schema_yaml(EXPORT).replace("storage: true", "storage: true\n    deprecated: true");
    std::fs::write(good.join("greetings.yaml"), changed).unwrap();
    let err = init(config, &options(&good)).await.unwrap_err();
    assert!(matches!(err, InitError::SchemaChanged { .. }), "{err}");
    assert!(
        err.to_string().contains("give the changed schema a new version prefix"),
        "{err}"
    );
}

/// `init` proposes, the hub switches: a changed schema under a new name is published, but the export
/// keeps serving the one it served, and its claims stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_version_publishes_its_schema_without_moving_the_export() {
    let kcp = Kcp::start().await;
    let client = kcp.client("provider-v2").await;
    let config = kcp.server.admin_config("provider-v2").await.unwrap();
    let (_keep, dir) = schemas_dir();
    init(config.clone(), &options(&dir)).await.unwrap();

    let v2 = schema_yaml(EXPORT)
        .replace("name: v1.greetings", "name: v2.greetings")
        .replace(
            "spec: {type: object}",
            "spec: {type: object, properties: {color: {type: string}}}",
        );
    std::fs::write(dir.join("greetings.yaml"), v2).unwrap();
    let opts = InitOptions {
        claims: vec![PermissionClaim::new("", "secrets", &["get"])],
        ..options(&dir)
    };
    init(config, &opts).await.unwrap();

    let v2_name = format!("v2.greetings.{EXPORT}");
    Api::<APIResourceSchema>::all(client.clone())
        .get(&v2_name)
        .await
        .unwrap();
    let export = Api::<APIExport>::all(client).get(EXPORT).await.unwrap();
    let schemas: Vec<String> = export
        .spec
        .resources
        .iter()
        .flatten()
        .map(|r| r.schema.clone())
        .collect();
    assert_eq!(schemas, vec![SCHEMA.to_string()], "the hub moves the export, not init");
    assert_eq!(claim_resources(&export), vec!["configmaps"]);
}
