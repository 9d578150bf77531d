//! Upgrade safety: this build opens a state directory an earlier build wrote and carries every
//! object over, with faros' schemas upgraded in place.
//!
//! The fixture in `tests/fixtures/upgrade/` is a `faros dev` state directory (`state.tar.gz`) and a
//! manifest of the objects in it that users wrote or depend on, as the writing build served them.
//! `cargo xtask upgrade-fixture` writes both anew (the recording test below, run on purpose): do it
//! when the state format changes deliberately, and commit the result so that the next build is
//! tested against this one.
//!
//! What the check asserts, against the fixture's manifest:
//! - every recorded object is still there with its uid and creation time, and no field of its spec
//!   or data is dropped (fields the new build adds are allowed);
//! - faros' APIResourceSchemas of this build's revision exist and both exports serve them; when the
//!   fixture was written at an older revision its schemas are kept beside the new ones;
//! - the bindings the fixture holds still serve: the tenant's Greeting reads back, and a new Greeting
//!   is answered by the quickstart controller through the existing binding.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

mod devproc;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use faros_core::client::ClientFactory;
use faros_core::kcp::apis::v1alpha2::{APIBinding, APIExport};
use faros_core::names;
use faros_test_support::eventually::eventually;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(90);
/// Bumped when the manifest's own shape changes (not when the state format does).
const MANIFEST_FORMAT: u32 = 1;
const ORG: &str = "demo";
const WORKSPACE: &str = "default";
const QUICKSTART_GROUP: &str = "quickstart.providers.faros.sh";

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrade")
}

/// What the writing build recorded beside its state directory.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    format: u32,
    /// `faros <version>`: which build wrote the state.
    written_by: String,
    /// [`names::SCHEMA_PREFIX`] of the writing build.
    schema_prefix: String,
    objects: Vec<Recorded>,
}

/// One object as the writing build served it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Recorded {
    cluster: String,
    group: String,
    version: String,
    kind: String,
    plural: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
    name: String,
    object: Value,
}

impl Recorded {
    fn api(&self, factory: &ClientFactory) -> Api<DynamicObject> {
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(&self.group, &self.version, &self.kind),
            &self.plural,
        );
        let client = factory.cluster(&self.cluster).unwrap();
        match &self.namespace {
            Some(ns) => Api::namespaced_with(client, ns, &ar),
            None => Api::all_with(client, &ar),
        }
    }
}

/// `(group, version, kind, plural)` of a tracked resource.
type Resource = (&'static str, &'static str, &'static str, &'static str);

const GREETINGS: Resource = (QUICKSTART_GROUP, "v1alpha1", "Greeting", "greetings");
const CONFIGMAPS: Resource = ("", "v1", "ConfigMap", "configmaps");
const SECRETS: Resource = ("", "v1", "Secret", "secrets");
const BINDINGS: Resource = ("apis.kcp.io", "v1alpha2", "APIBinding", "apibindings");
const PROVIDERS: Resource = (names::ADMIN_GROUP, "v1alpha1", "Provider", "providers");
const CATALOG_ENTRIES: Resource = (names::PROVIDERS_GROUP, "v1alpha1", "CatalogEntry", "catalogentries");
const WORKSPACES: Resource = ("tenancy.kcp.io", "v1alpha1", "Workspace", "workspaces");

/// The objects the check compares (not yet read): what tenants and platform admins wrote, and what
/// the upgrade must carry over.
fn tracked() -> Vec<Recorded> {
    let tenant = names::team_workspace_path(ORG, WORKSPACE);
    let at = |cluster: &str, (group, version, kind, plural): Resource, namespace: Option<&str>, name: &str| Recorded {
        cluster: cluster.into(),
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        namespace: namespace.map(str::to_string),
        name: name.into(),
        object: Value::Null,
    };
    vec![
        at(&tenant, GREETINGS, Some("default"), "hi"),
        at(&tenant, CONFIGMAPS, Some("default"), "upgrade-kept"),
        at(&tenant, SECRETS, Some("default"), "upgrade-kept"),
        at(&tenant, BINDINGS, None, "quickstart"),
        at(names::SYSTEM_PROVIDERS_PATH, PROVIDERS, None, "quickstart"),
        at(
            &names::provider_workspace_path("quickstart"),
            CATALOG_ENTRIES,
            None,
            "quickstart",
        ),
        at(&names::org_workspace_path(ORG), WORKSPACES, None, WORKSPACE),
        at(names::TENANTS_PATH, WORKSPACES, None, "acme"),
    ]
}

/// `recorded` is carried over into `now`: every key of an object is there with a carried-over
/// value, arrays keep their length, scalars are equal. Returns the JSON pointer of the first loss.
fn carried_over(recorded: &Value, now: &Value, at: &str) -> Result<(), String> {
    match (recorded, now) {
        (Value::Object(r), Value::Object(n)) => r.iter().try_for_each(|(k, v)| match n.get(k) {
            Some(nv) => carried_over(v, nv, &format!("{at}/{k}")),
            None => Err(format!("{at}/{k} dropped (was {v})")),
        }),
        (Value::Array(r), Value::Array(n)) if r.len() == n.len() => r
            .iter()
            .zip(n)
            .enumerate()
            .try_for_each(|(i, (rv, nv))| carried_over(rv, nv, &format!("{at}/{i}"))),
        (r, n) if r == n => Ok(()),
        (r, n) => Err(format!("{at}: was {r}, now {n}")),
    }
}

/// The parts of an object an upgrade must not lose: identity, spec, data, and the reply the
/// provider wrote (status is otherwise the controllers' to rewrite).
fn durable_parts(obj: &Value) -> Value {
    let mut parts = json!({
        "metadata": {
            "uid": obj.pointer("/metadata/uid"),
            "creationTimestamp": obj.pointer("/metadata/creationTimestamp"),
        }
    });
    for key in ["spec", "data", "type"] {
        if let Some(v) = obj.get(key) {
            parts[key] = v.clone();
        }
    }
    if let Some(reply) = obj.pointer("/status/reply") {
        parts["status"] = json!({ "reply": reply });
    }
    parts
}

/// What of a recorded object the check compares: a CatalogEntry's spec is its provider's to
/// rewrite (its `init` registers the URLs it serves at on every start), so only its identity is
/// held to the earlier build's.
fn compared(kind: &str, recorded: &Value) -> Value {
    match kind {
        "CatalogEntry" => json!({ "metadata": recorded["metadata"] }),
        _ => recorded.clone(),
    }
}

#[test]
fn carried_over_is_a_deep_subset() {
    let cases = [
        (json!({"a": 1}), json!({"a": 1, "b": 2}), true),
        (json!({"a": 1, "b": 2}), json!({"a": 1}), false),
        (
            json!({"a": {"x": [1, {"y": 2}]}}),
            json!({"a": {"x": [1, {"y": 2, "z": 3}]}}),
            true,
        ),
        (json!({"a": [1, 2]}), json!({"a": [1]}), false),
        (json!({"a": "v1"}), json!({"a": "v2"}), false),
        (json!({"a": null}), json!({}), false),
    ];
    for (recorded, now, ok) in cases {
        assert_eq!(carried_over(&recorded, &now, "").is_ok(), ok, "{recorded} into {now}");
    }
}

fn greetings(factory: &ClientFactory) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(QUICKSTART_GROUP, "v1alpha1", "Greeting"),
        "greetings",
    );
    Api::namespaced_with(
        factory.cluster(&names::team_workspace_path(ORG, WORKSPACE)).unwrap(),
        "default",
        &ar,
    )
}

/// Creates Greeting `name` and waits for the provider's reply.
async fn greet(factory: &ClientFactory, name: &str, who: &str) -> String {
    let api = greetings(factory);
    let greeting: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{QUICKSTART_GROUP}/v1alpha1"),
        "kind": "Greeting",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"name": who},
    }))
    .unwrap();
    api.create(&PostParams::default(), &greeting).await.unwrap();
    eventually(&format!("Greeting {name} answered"), WAIT, || {
        let api = api.clone();
        async move {
            let g = api.get(name).await?;
            Ok(g.data
                .pointer("/status/reply")
                .and_then(Value::as_str)
                .map(str::to_string))
        }
    })
    .await
    .unwrap()
}

/// Runs only from `cargo xtask upgrade-fixture` (it rewrites the committed fixture).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes tests/fixtures/upgrade: run through `cargo xtask upgrade-fixture`"]
async fn record_upgrade_fixture() {
    assert_eq!(
        std::env::var("FAROS_RECORD_UPGRADE_FIXTURE").as_deref(),
        Ok("1"),
        "run through `cargo xtask upgrade-fixture`"
    );
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let mut dev = devproc::launch(&state).start().await.unwrap();
    let factory = ClientFactory::new(dev.admin_config().await.unwrap()).unwrap();

    // The README's tenant flow: enable quickstart through the hub, then a Greeting it answers.
    let hub = dev.https().unwrap();
    let enable = hub
        .post(format!(
            "{}{}",
            dev.hub,
            names::enable_path(ORG, WORKSPACE, "quickstart")
        ))
        .bearer_auth(dev.dev_token().unwrap())
        .json(&json!({"acceptedClaims": [{"group": "", "resource": "configmaps"}]}))
        .send()
        .await
        .unwrap();
    assert!(enable.status().is_success(), "enable: {}", enable.text().await.unwrap());
    greet(&factory, "hi", "Ada").await;
    // Plain objects beside it, and a second organization.
    let tenant = factory.cluster(&names::team_workspace_path(ORG, WORKSPACE)).unwrap();
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(tenant.clone(), "default");
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "upgrade-kept"}, "data": {"kept": "yes"}})).unwrap(),
    )
    .await
    .unwrap();
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(tenant, "default");
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "upgrade-kept"}, "stringData": {"kept": "yes"}}))
                .unwrap(),
        )
        .await
        .unwrap();
    let org = hub
        .post(format!("{}/api/orgs", dev.hub))
        .bearer_auth(dev.dev_token().unwrap())
        .json(&json!({"name": "acme"}))
        .send()
        .await
        .unwrap();
    assert!(org.status().is_success(), "create org: {}", org.text().await.unwrap());

    let mut objects = Vec::new();
    for mut recorded in tracked() {
        let api = recorded.api(&factory);
        let name = recorded.name.clone();
        let obj = eventually(&format!("{} {name} readable", recorded.kind), WAIT, || {
            let (api, name) = (api.clone(), name.clone());
            async move { Ok(Some(api.get(&name).await?)) }
        })
        .await
        .unwrap();
        recorded.object = durable_parts(&serde_json::to_value(&obj).unwrap());
        objects.push(recorded);
    }
    let status = dev.terminate().unwrap();
    assert!(status.success(), "faros dev stopped with {status}: {}", dev.log_tail());

    let out = fixture_dir();
    std::fs::create_dir_all(&out).unwrap();
    // Reproducible: sorted, no owners, no times (the redb file's content is what matters).
    let tar = Command::new("tar")
        .args([
            "--sort=name",
            "--mtime=@0",
            "--owner=0",
            "--group=0",
            "--numeric-owner",
            "-czf",
        ])
        .arg(out.join("state.tar.gz"))
        .arg("-C")
        .arg(&state)
        .arg(".")
        .status()
        .unwrap();
    assert!(tar.success(), "tar: {tar}");
    let manifest = Manifest {
        format: MANIFEST_FORMAT,
        written_by: match std::env::var("FAROS_UPGRADE_FIXTURE_COMMIT") {
            Ok(commit) => format!("faros {} at {commit}", env!("CARGO_PKG_VERSION")),
            Err(_) => format!("faros {}", env!("CARGO_PKG_VERSION")),
        },
        schema_prefix: names::SCHEMA_PREFIX.into(),
        objects,
    };
    std::fs::write(
        out.join("manifest.json"),
        serde_json::to_string_pretty(&manifest).unwrap() + "\n",
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_install_written_by_an_earlier_build_upgrades_in_place() {
    let manifest: Manifest =
        serde_json::from_str(&std::fs::read_to_string(fixture_dir().join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        manifest.format, MANIFEST_FORMAT,
        "manifest format: rewrite it with `cargo xtask upgrade-fixture`"
    );
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let tar = Command::new("tar")
        .arg("-xzf")
        .arg(fixture_dir().join("state.tar.gz"))
        .arg("-C")
        .arg(&state)
        .status()
        .unwrap();
    assert!(tar.success(), "tar: {tar}");

    let dev = devproc::launch(&state).start().await.unwrap();
    let factory = ClientFactory::new(dev.admin_config().await.unwrap()).unwrap();

    // Every recorded object, carried over.
    for recorded in &manifest.objects {
        let now = recorded.api(&factory).get(&recorded.name).await.unwrap_or_else(|e| {
            panic!(
                "{} {} in {} (written by {}) is gone: {e}",
                recorded.kind, recorded.name, recorded.cluster, manifest.written_by
            )
        });
        let now = durable_parts(&serde_json::to_value(&now).unwrap());
        if let Err(loss) = carried_over(&compared(&recorded.kind, &recorded.object), &now, "") {
            panic!(
                "{} {} in {} (written by {}): {loss}",
                recorded.kind, recorded.name, recorded.cluster, manifest.written_by
            );
        }
    }

    // This build's schemas exist and both exports serve them; an older revision's are kept.
    let schema_ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apis.kcp.io", "v1alpha1", "APIResourceSchema"),
        "apiresourceschemas",
    );
    let controllers = factory.cluster(names::SYSTEM_CONTROLLERS_PATH).unwrap();
    let schemas: Api<DynamicObject> = Api::all_with(controllers.clone(), &schema_ar);
    let (current, _) = faros_core::schema_revision::generated()
        .unwrap()
        .into_iter()
        .map(|(file, schema)| (file.trim_end_matches(".json").to_string(), schema))
        .unzip::<_, _, Vec<_>, Vec<_>>();
    for name in &current {
        schemas
            .get(name)
            .await
            .unwrap_or_else(|e| panic!("schema {name} of this build missing: {e}"));
    }
    if manifest.schema_prefix != names::SCHEMA_PREFIX {
        for name in &current {
            let old = name.replacen(names::SCHEMA_PREFIX, &manifest.schema_prefix, 1);
            // A type the earlier build did not have (none recorded under its prefix) has no old schema.
            if !faros_core::schema_revision::recorded_dir()
                .join(format!("{old}.json"))
                .exists()
            {
                continue;
            }
            schemas
                .get(&old)
                .await
                .unwrap_or_else(|e| panic!("schema {old} of the earlier build dropped: {e}"));
        }
    }
    let exports: Api<APIExport> = Api::all(controllers);
    for export in [names::ADMIN_EXPORT, names::PROVIDERS_EXPORT] {
        eventually(&format!("export {export} serves this build's schemas"), WAIT, || {
            let exports = exports.clone();
            let current = current.clone();
            async move {
                let e = exports.get(export).await?;
                let resources = e.spec.resources.unwrap_or_default();
                Ok((!resources.is_empty() && resources.iter().all(|r| current.contains(&r.schema))).then_some(()))
            }
        })
        .await
        .unwrap();
    }

    // The bindings the earlier build made still serve.
    let bindings: Api<APIBinding> = Api::all(factory.cluster(names::SYSTEM_PROVIDERS_PATH).unwrap());
    for binding in [names::ADMIN_EXPORT, names::PROVIDERS_EXPORT] {
        eventually(&format!("binding {binding} Ready"), WAIT, || {
            let bindings = bindings.clone();
            async move { Ok(Some(bindings.get(binding).await?).filter(APIBinding::is_ready)) }
        })
        .await
        .unwrap();
    }
    assert_eq!(greet(&factory, "after-upgrade", "Grace").await, "Hello, Grace!");

    // Tenant workspaces the earlier build made without the tenancy.faros.sh binding get it from the
    // hub (docs/tenancy.md#the-membership-index), its claim applied.
    for path in [
        names::org_workspace_path(ORG),
        names::team_workspace_path(ORG, WORKSPACE),
    ] {
        let bindings: Api<APIBinding> = Api::all(factory.cluster(&path).unwrap());
        eventually(&format!("tenancy.faros.sh bound in {path}"), WAIT, || {
            let bindings = bindings.clone();
            async move {
                let listed = bindings.list(&Default::default()).await?;
                Ok(listed.items.iter().any(faros_core::membership::covers).then_some(()))
            }
        })
        .await
        .unwrap();
    }
}
