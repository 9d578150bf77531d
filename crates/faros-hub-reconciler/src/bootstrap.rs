//! Bootstrap of the faros workspace tree (docs/architecture.md#workspace-tree), idempotent.
//!
//! Order matters and follows kcp's rules:
//! 1. the workspace tree, each workspace Ready before its children are created (an Initializing
//!    workspace does not serve content to us); namespace `faros-system` (leader Lease, hub records)
//!    in `system:controllers`; when the hub API has its own kcp user, its roles in the tree
//!    ([`crate::identity::apply_hub_tree`]: the hub's start-up waits on them);
//! 2. APIResourceSchemas (immutable, so create-if-absent) and the `admin.faros.sh`, `tenancy.faros.sh` and
//!    `providers.faros.sh` APIExports in `root:faros:system:controllers`;
//! 3. their APIBindings in `root:faros:system:providers`, waited until bound (the Provider API must
//!    be served before the controller starts, and the export's virtual workspace URL only appears
//!    once a binding exists);
//! 4. the WorkspaceTypes in `root:faros`: after the exports, because WorkspaceType admission checks
//!    `bind` permission on the default bindings;
//! 5. the `admin.faros.sh` and `tenancy.faros.sh` endpoint slices (kcp ≥ 0.28 creates them; creating them if absent
//!    covers older kcp).
//!
//! Everything mutable is server-side applied with a fixed body, so a second run writes nothing new.
//! The desired objects are built by IO-free functions, unit-tested below.

use std::time::Duration;

use faros_core::client::{ClientError, ClientFactory};
use faros_core::kcp::apis::v1alpha1::APIExportEndpointSlice;
use faros_core::kcp::apis::v1alpha1::{APIExportEndpointSliceSpec, ExportBindingReference};
use faros_core::kcp::apis::v1alpha2::{
    APIBinding, APIBindingSpec, APIExport, APIExportSpec, BindingReference, ResourceSchema,
};
use faros_core::kcp::tenancy::{APIExportReference, WorkspaceTypeExtension, WorkspaceTypeSelector};
use faros_core::kcp::{Workspace, WorkspaceSpec, WorkspaceType, WorkspaceTypeReference, WorkspaceTypeSpec};
use faros_core::names;
use faros_core::schema_gen::{self, SchemaGenError};
use faros_core::wait::{WaitError, wait_for};

use crate::tree::{creation_rounds, workspace_tree};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

/// Errors of one bootstrap attempt; each names the step and object.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    #[error("building a client for {cluster}: {source}")]
    Client {
        cluster: String,
        #[source]
        source: ClientError,
    },
    #[error("{step}: {}", crate::message::kube_message(.source))]
    Kube {
        step: String,
        #[source]
        source: kube::Error,
    },
    #[error("{step}: {source}")]
    Wait {
        step: String,
        #[source]
        source: Box<WaitError>,
    },
    #[error("generating APIResourceSchemas: {0}")]
    Schema(#[from] SchemaGenError),
    #[error(
        "workspace {path} exists with type {found}, expected {expected}; delete it or fix its type \
         (workspace types are immutable)"
    )]
    WrongWorkspaceType {
        path: String,
        found: String,
        expected: String,
    },
    #[error("workspace {path} is being deleted; it is recreated once it is gone")]
    WorkspaceDeleting { path: String },
    #[error("granting the hub API's kcp user its roles in the tree: {0}")]
    HubGrant(#[from] crate::identity::IdentityError),
}

/// kcp's `universal` type in `root`.
fn universal() -> WorkspaceTypeReference {
    WorkspaceTypeReference {
        name: names::WORKSPACE_TYPE_UNIVERSAL.into(),
        path: Some(names::ROOT_PATH.into()),
    }
}

/// A reference to one of faros' WorkspaceTypes.
pub fn faros_type(name: &str) -> WorkspaceTypeReference {
    WorkspaceTypeReference {
        name: name.into(),
        path: Some(names::WORKSPACE_TYPES_PATH.into()),
    }
}

fn managed_meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        labels: Some([(names::LABEL_MANAGED_BY.to_string(), names::MANAGED_BY_FAROS.to_string())].into()),
        ..Default::default()
    }
}

/// The Workspace object for a tree entry (explicitly `root:universal`: `root`'s default child type
/// may be `organization` on a kcp with the workspace-types battery).
pub fn workspace(name: &str, type_: WorkspaceTypeReference) -> Workspace {
    let mut ws = Workspace::new(
        name,
        WorkspaceSpec {
            type_: Some(type_),
            ..Default::default()
        },
    );
    ws.metadata = managed_meta(name);
    ws
}

/// The exported resources: (export = group, plural).
pub fn exports() -> Vec<APIExport> {
    [
        (
            names::ADMIN_EXPORT,
            names::ADMIN_GROUP,
            &[names::PROVIDERS_RESOURCE, names::PROVIDER_REVISIONS_RESOURCE][..],
        ),
        (
            names::PROVIDERS_EXPORT,
            names::PROVIDERS_GROUP,
            &[names::CATALOG_ENTRIES_RESOURCE][..],
        ),
    ]
    .into_iter()
    .map(|(export, group, plurals)| {
        let resources = plurals
            .iter()
            .map(|plural| {
                let schema = schema_gen::schema_name(names::SCHEMA_PREFIX, plural, group);
                ResourceSchema::crd(group, plural, &schema)
            })
            .collect();
        let mut e = APIExport::new(
            export,
            APIExportSpec {
                resources: Some(resources),
                ..Default::default()
            },
        );
        e.metadata = managed_meta(export);
        e
    })
    .chain(std::iter::once(tenancy_export()))
    .collect()
}

/// `tenancy.faros.sh`: no resources, a claim on faros' ClusterRoleBindings ([`faros_core::membership`]).
fn tenancy_export() -> APIExport {
    let mut e = faros_core::membership::export();
    e.metadata = managed_meta(names::TENANCY_EXPORT);
    e
}

/// Organizations and team workspaces bind `tenancy.faros.sh` (accepting its claim), so the hub sees
/// their membership bindings through one watch.
fn tenancy_binding() -> Option<Vec<APIExportReference>> {
    Some(vec![APIExportReference {
        path: Some(names::SYSTEM_CONTROLLERS_PATH.into()),
        export: names::TENANCY_EXPORT.into(),
    }])
}

/// Bindings of both exports in `system:providers`, each named after its export.
pub fn system_provider_bindings() -> Vec<APIBinding> {
    [names::ADMIN_EXPORT, names::PROVIDERS_EXPORT]
        .into_iter()
        .map(|export| {
            let mut b = APIBinding::new(
                export,
                APIBindingSpec {
                    reference: BindingReference::export(names::SYSTEM_CONTROLLERS_PATH, export),
                    ..Default::default()
                },
            );
            b.metadata = managed_meta(export);
            b
        })
        .collect()
}

/// WorkspaceTypes `provider`, `organization` and `workspace` (in `root:faros`).
pub fn workspace_types() -> Vec<WorkspaceType> {
    let provider = WorkspaceTypeSpec {
        // Deliberately not extending universal: no tenancy API, so a provider cannot make workspaces.
        limit_allowed_children: Some(WorkspaceTypeSelector {
            none: Some(true),
            types: None,
        }),
        limit_allowed_parents: Some(WorkspaceTypeSelector {
            none: None,
            types: Some(vec![universal()]),
        }),
        default_api_bindings: Some(vec![APIExportReference {
            path: Some(names::SYSTEM_CONTROLLERS_PATH.into()),
            export: names::PROVIDERS_EXPORT.into(),
        }]),
        ..Default::default()
    };
    let organization = WorkspaceTypeSpec {
        extend: Some(WorkspaceTypeExtension {
            with: Some(vec![universal()]),
        }),
        default_child_workspace_type: Some(faros_type(names::WORKSPACE_TYPE_WORKSPACE)),
        limit_allowed_children: Some(WorkspaceTypeSelector {
            none: None,
            types: Some(vec![faros_type(names::WORKSPACE_TYPE_WORKSPACE)]),
        }),
        limit_allowed_parents: Some(WorkspaceTypeSelector {
            none: None,
            types: Some(vec![universal()]),
        }),
        default_api_bindings: tenancy_binding(),
        ..Default::default()
    };
    let team = WorkspaceTypeSpec {
        extend: Some(WorkspaceTypeExtension {
            with: Some(vec![universal()]),
        }),
        limit_allowed_children: Some(WorkspaceTypeSelector {
            none: Some(true),
            types: None,
        }),
        limit_allowed_parents: Some(WorkspaceTypeSelector {
            none: None,
            types: Some(vec![faros_type(names::WORKSPACE_TYPE_ORGANIZATION)]),
        }),
        default_api_bindings: tenancy_binding(),
        ..Default::default()
    };
    [
        (names::WORKSPACE_TYPE_PROVIDER, provider),
        (names::WORKSPACE_TYPE_ORGANIZATION, organization),
        (names::WORKSPACE_TYPE_WORKSPACE, team),
    ]
    .into_iter()
    .map(|(name, spec)| {
        let mut t = WorkspaceType::new(name, spec);
        t.metadata = managed_meta(name);
        t
    })
    .collect()
}

/// The leader-election namespace.
pub fn system_namespace() -> Namespace {
    Namespace {
        metadata: managed_meta(names::SYSTEM_NAMESPACE),
        ..Default::default()
    }
}

/// The endpoint slices read by name: the Provider controller's (`admin.faros.sh`) and the hub's
/// membership index's (`tenancy.faros.sh`).
pub fn endpoint_slices() -> Vec<APIExportEndpointSlice> {
    [names::ADMIN_EXPORT, names::TENANCY_EXPORT]
        .into_iter()
        .map(|export| {
            let mut s = APIExportEndpointSlice::new(
                export,
                APIExportEndpointSliceSpec {
                    export: ExportBindingReference {
                        path: Some(names::SYSTEM_CONTROLLERS_PATH.into()),
                        name: export.into(),
                    },
                    ..Default::default()
                },
            );
            s.metadata = managed_meta(export);
            s
        })
        .collect()
}

/// Timeouts of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BootstrapSettings {
    /// How long to wait for one workspace or binding to become Ready.
    pub wait: Duration,
}

impl Default for BootstrapSettings {
    fn default() -> Self {
        Self {
            wait: Duration::from_secs(60),
        }
    }
}

/// Runs one bootstrap attempt; `hub_user`: the hub API's own kcp user, if it has one.
pub async fn bootstrap(
    factory: &ClientFactory,
    settings: BootstrapSettings,
    hub_user: Option<&str>,
) -> Result<(), BootstrapError> {
    for round in creation_rounds(&workspace_tree()) {
        futures::future::try_join_all(
            round
                .iter()
                .map(|ws| ensure_workspace(factory, ws.parent, ws.name, universal(), settings.wait)),
        )
        .await?;
    }
    tracing::info!("bootstrap: workspace tree ready");

    let controllers = client(factory, names::SYSTEM_CONTROLLERS_PATH)?;
    let namespaces: Api<Namespace> = Api::all(controllers.clone());
    apply(
        &namespaces,
        &system_namespace(),
        "bootstrap",
        "Namespace",
        names::SYSTEM_CONTROLLERS_PATH,
    )
    .await?;
    // As early as possible: the hub waits on the tree and the catalog with these.
    if let Some(user) = hub_user {
        let manager = format!("{}/identity", names::RECONCILER_FIELD_MANAGER);
        crate::identity::apply_hub_tree(factory, user, &manager).await?;
        tracing::info!(user, "bootstrap: the hub API's kcp user has its roles in the tree");
    }
    let schema_ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apis.kcp.io", "v1alpha1", schema_gen::API_RESOURCE_SCHEMA_KIND),
        "apiresourceschemas",
    );
    let schemas: Api<DynamicObject> = Api::all_with(controllers.clone(), &schema_ar);
    for schema in schema_gen::faros_api_resource_schemas()? {
        let obj: DynamicObject = serde_json::from_value(schema).map_err(|e| BootstrapError::Kube {
            step: "decoding a generated APIResourceSchema".into(),
            source: kube::Error::SerdeError(e),
        })?;
        create_if_absent(&schemas, &obj, "APIResourceSchema").await?;
    }
    let exports_api: Api<APIExport> = Api::all(controllers.clone());
    for export in exports() {
        apply(
            &exports_api,
            &export,
            "bootstrap",
            "APIExport",
            names::SYSTEM_CONTROLLERS_PATH,
        )
        .await?;
    }
    tracing::info!("bootstrap: schemas and exports applied");

    let providers = client(factory, names::SYSTEM_PROVIDERS_PATH)?;
    let bindings: Api<APIBinding> = Api::all(providers);
    for binding in system_provider_bindings() {
        apply(
            &bindings,
            &binding,
            "bootstrap",
            "APIBinding",
            names::SYSTEM_PROVIDERS_PATH,
        )
        .await?;
    }
    // Bound independently of each other: wait for all of them at once.
    futures::future::try_join_all(system_provider_bindings().into_iter().map(|binding| {
        let name = binding.name_any();
        let bindings = bindings.clone();
        async move {
            wait_for(bindings, &name, |b| b.is_some_and(APIBinding::is_ready), settings.wait)
                .await
                .map_err(|source| BootstrapError::Wait {
                    step: format!(
                        "waiting for APIBinding {name} in {} to be bound",
                        names::SYSTEM_PROVIDERS_PATH
                    ),
                    source: Box::new(source),
                })
        }
    }))
    .await?;
    tracing::info!("bootstrap: system bindings bound");

    let types: Api<WorkspaceType> = Api::all(client(factory, names::FAROS_PATH)?);
    for wt in workspace_types() {
        apply(&types, &wt, "bootstrap", "WorkspaceType", names::FAROS_PATH).await?;
    }
    let slices: Api<APIExportEndpointSlice> = Api::all(controllers);
    for slice in endpoint_slices() {
        create_if_absent(&slices, &slice, "APIExportEndpointSlice").await?;
    }
    tracing::info!("bootstrap: complete");
    Ok(())
}

/// Retries [`bootstrap`] with capped exponential backoff until it succeeds (`true`) or `cancel`
/// fires (`false`). Every failure is logged with the step that failed.
pub async fn bootstrap_until_done(
    factory: &ClientFactory,
    settings: BootstrapSettings,
    hub_user: Option<&str>,
    cancel: &CancellationToken,
) -> bool {
    let mut delay = Duration::from_millis(250);
    let mut attempt = 1u32;
    loop {
        let result = tokio::select! {
            _ = cancel.cancelled() => return false,
            r = bootstrap(factory, settings, hub_user) => r,
        };
        match result {
            Ok(()) => return true,
            Err(error) => {
                tracing::warn!(attempt, retry_in = ?delay, %error, "bootstrap failed; retrying");
            }
        }
        tokio::select! {
            _ = cancel.cancelled() => return false,
            _ = tokio::time::sleep(delay) => {}
        }
        delay = (delay * 2).min(Duration::from_secs(5));
        attempt = attempt.saturating_add(1);
    }
}

fn client(factory: &ClientFactory, cluster: &str) -> Result<kube::Client, BootstrapError> {
    factory.cluster(cluster).map_err(|source| BootstrapError::Client {
        cluster: cluster.into(),
        source,
    })
}

/// Creates workspace `name` in `parent` with `type_` unless it exists, then waits for Ready.
/// Returns the Ready workspace (its `spec.cluster` is the logical cluster name).
pub async fn ensure_workspace(
    factory: &ClientFactory,
    parent: &str,
    name: &str,
    type_: WorkspaceTypeReference,
    timeout: Duration,
) -> Result<Workspace, BootstrapError> {
    let path = format!("{parent}:{name}");
    let api: Api<Workspace> = Api::all(client(factory, parent)?);
    let step = |what: &str| format!("{what} workspace {path}");
    let existing = api.get_opt(name).await.map_err(|source| BootstrapError::Kube {
        step: step("reading"),
        source,
    })?;
    let existing = match existing {
        Some(ws) => Some(ws),
        None => match api
            .create(&PostParams::default(), &workspace(name, type_.clone()))
            .await
        {
            Ok(_) => {
                tracing::info!(%path, "created workspace");
                None
            }
            Err(kube::Error::Api(s)) if s.code == 409 => None,
            Err(source) => {
                return Err(BootstrapError::Kube {
                    step: step("creating"),
                    source,
                });
            }
        },
    };
    if let Some(ws) = &existing {
        if ws.metadata.deletion_timestamp.is_some() {
            return Err(BootstrapError::WorkspaceDeleting { path });
        }
        check_type(ws, &path, &type_)?;
        if ws.is_ready() {
            return Ok(ws.clone());
        }
    }
    let ready = wait_for(api, name, |ws| ws.is_some_and(Workspace::is_ready), timeout)
        .await
        .map_err(|source| BootstrapError::Wait {
            step: format!("waiting for workspace {path} to be Ready"),
            source: Box::new(source),
        })?;
    let ready = ready.ok_or_else(|| BootstrapError::WorkspaceDeleting { path: path.clone() })?;
    check_type(&ready, &path, &type_)?;
    Ok(ready)
}

fn check_type(ws: &Workspace, path: &str, want: &WorkspaceTypeReference) -> Result<(), BootstrapError> {
    match &ws.spec.type_ {
        // kcp fills the path on admission; compare what both sides state.
        Some(found)
            if found.name != want.name || (found.path.is_some() && want.path.is_some() && found.path != want.path) =>
        {
            Err(BootstrapError::WrongWorkspaceType {
                path: path.into(),
                found: found.qualified(),
                expected: want.qualified(),
            })
        }
        _ => Ok(()),
    }
}

/// Server-side applies `obj` with field manager `faros-hub-reconciler/<scope>`, forced.
pub async fn apply<K>(api: &Api<K>, obj: &K, scope: &str, kind: &str, cluster: &str) -> Result<K, BootstrapError>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let name = obj.meta().name.clone().unwrap_or_default();
    let params = PatchParams::apply(&format!("{}/{scope}", names::RECONCILER_FIELD_MANAGER)).force();
    api.patch(&name, &params, &Patch::Apply(obj))
        .await
        .map_err(|source| BootstrapError::Kube {
            step: format!("applying {kind} {name} in {cluster}"),
            source,
        })
}

/// Creates `obj` unless an object of that name exists (used for immutable objects).
async fn create_if_absent<K>(api: &Api<K>, obj: &K, kind: &str) -> Result<(), BootstrapError>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let name = obj.meta().name.clone().unwrap_or_default();
    let step = |verb: &str| format!("{verb} {kind} {name}");
    if api
        .get_opt(&name)
        .await
        .map_err(|source| BootstrapError::Kube {
            step: step("reading"),
            source,
        })?
        .is_some()
    {
        return Ok(());
    }
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => {
            tracing::info!(kind, %name, "created");
            Ok(())
        }
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(source) => Err(BootstrapError::Kube {
            step: step("creating"),
            source,
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn workspace_body() {
        assert_eq!(
            serde_json::to_value(workspace("faros", universal())).unwrap(),
            json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace",
                "metadata": {"name": "faros", "labels": {"app.kubernetes.io/managed-by": "faros"}},
                "spec": {"type": {"name": "universal", "path": "root"}}})
        );
    }

    #[test]
    fn export_bodies() {
        let got: Vec<serde_json::Value> = exports().iter().map(|e| serde_json::to_value(e).unwrap()).collect();
        assert_eq!(
            got,
            [
                json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
                    "metadata": {"name": "admin.faros.sh", "labels": {"app.kubernetes.io/managed-by": "faros"}},
                    "spec": {"resources": [{"name": "providers", "group": "admin.faros.sh",
                        "schema": "v1alpha1r2.providers.admin.faros.sh", "storage": {"crd": {}}},
                        {"name": "providerrevisions", "group": "admin.faros.sh",
                        "schema": "v1alpha1r2.providerrevisions.admin.faros.sh", "storage": {"crd": {}}}]}}),
                json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
                    "metadata": {"name": "providers.faros.sh", "labels": {"app.kubernetes.io/managed-by": "faros"}},
                    "spec": {"resources": [{"name": "catalogentries", "group": "providers.faros.sh",
                        "schema": "v1alpha1r2.catalogentries.providers.faros.sh", "storage": {"crd": {}}}]}}),
                json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport",
                    "metadata": {"name": "tenancy.faros.sh", "labels": {"app.kubernetes.io/managed-by": "faros"}},
                    "spec": {"permissionClaims": [{"group": "rbac.authorization.k8s.io", "resource": "clusterrolebindings",
                        "verbs": ["get", "list", "watch"],
                        "defaultSelector": {"matchLabels": {"app.kubernetes.io/managed-by": "faros"}}}]}}),
            ]
        );
        // Every exported schema is one bootstrap creates.
        let schema_names: Vec<String> = schema_gen::faros_api_resource_schemas()
            .unwrap()
            .iter()
            .map(|s| s["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        for e in exports() {
            for r in e.spec.resources.unwrap_or_default() {
                assert!(schema_names.contains(&r.schema), "{}", r.schema);
            }
        }
    }

    #[test]
    fn binding_bodies() {
        let got: Vec<serde_json::Value> = system_provider_bindings()
            .iter()
            .map(|b| serde_json::to_value(b).unwrap())
            .collect();
        let want = |name: &str| {
            json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
                "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "faros"}},
                "spec": {"reference": {"export": {"path": "root:faros:system:controllers", "name": name}}}})
        };
        assert_eq!(got, [want("admin.faros.sh"), want("providers.faros.sh")]);
    }

    #[test]
    fn workspace_type_bodies() {
        let got: Vec<serde_json::Value> = workspace_types()
            .iter()
            .map(|t| serde_json::to_value(&t.spec).unwrap())
            .collect();
        assert_eq!(
            got,
            [
                json!({"limitAllowedChildren": {"none": true},
                    "limitAllowedParents": {"types": [{"name": "universal", "path": "root"}]},
                    "defaultAPIBindings": [{"path": "root:faros:system:controllers", "export": "providers.faros.sh"}]}),
                json!({"extend": {"with": [{"name": "universal", "path": "root"}]},
                    "defaultChildWorkspaceType": {"name": "workspace", "path": "root:faros"},
                    "limitAllowedChildren": {"types": [{"name": "workspace", "path": "root:faros"}]},
                    "limitAllowedParents": {"types": [{"name": "universal", "path": "root"}]},
                    "defaultAPIBindings": [{"path": "root:faros:system:controllers", "export": "tenancy.faros.sh"}]}),
                json!({"extend": {"with": [{"name": "universal", "path": "root"}]},
                    "limitAllowedChildren": {"none": true},
                    "limitAllowedParents": {"types": [{"name": "organization", "path": "root:faros"}]},
                    "defaultAPIBindings": [{"path": "root:faros:system:controllers", "export": "tenancy.faros.sh"}]}),
            ]
        );
        let names: Vec<String> = workspace_types().iter().map(ResourceExt::name_any).collect();
        assert_eq!(names, ["provider", "organization", "workspace"]);
    }

    #[test]
    fn slice_and_namespace() {
        let slices: Vec<serde_json::Value> = endpoint_slices()
            .iter()
            .map(|s| serde_json::to_value(s).unwrap())
            .collect();
        let want = |name: &str| {
            json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExportEndpointSlice",
                "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "faros"}},
                "spec": {"export": {"path": "root:faros:system:controllers", "name": name}}})
        };
        assert_eq!(slices, [want("admin.faros.sh"), want("tenancy.faros.sh")]);
        assert_eq!(system_namespace().metadata.name.as_deref(), Some("faros-system"));
    }

    #[test]
    fn type_check() {
        let mut ws = workspace("x", universal());
        assert!(check_type(&ws, "root:x", &universal()).is_ok());
        ws.spec.type_ = Some(WorkspaceTypeReference {
            name: "universal".into(),
            path: None,
        });
        assert!(
            check_type(&ws, "root:x", &universal()).is_ok(),
            "a missing path is not a mismatch"
        );
        ws.spec.type_ = Some(faros_type("organization"));
        match check_type(&ws, "root:x", &universal()) {
            Err(BootstrapError::WrongWorkspaceType { found, expected, .. }) => {
                assert_eq!(
                    (found.as_str(), expected.as_str()),
                    ("root:faros:organization", "root:universal")
                );
            }
            other => panic!("{other:?}"),
        }
    }
}
