//! `init`: publish a provider's APIs from inside its own workspace.
//!
//! First, without writing: the schemas directory and the CatalogEntry manifest are read and
//! validated (missing or empty is an error naming the variable), the target is located and refused
//! unless it is the provider's ServiceAccount in its own workspace ([`crate::workspace`]), the
//! CatalogEntry's name is checked against the provider's, and an export that would lose resources is
//! refused unless pruning is allowed. Then, in order, each step logged: APIResourceSchemas, the
//! APIExport (created with every schema and claim; once it exists only new resources are added), the
//! APIExportEndpointSlice, the bind grant, and the CatalogEntry, which records each published schema
//! by name and sha256. `init` proposes, the hub switches: moving an existing export to changed
//! schemas or claims is the hub reconciler's, after its compatibility gate
//! (docs/hub-reconciler.md#provider-revisions). Every object is written only when it differs, so a second `init` writes
//! nothing, and every write tolerates a concurrent writer (AlreadyExists / Conflict re-read and
//! re-decide), so two replicas running `init` at once both succeed.

pub mod inputs;
pub mod objects;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::path::PathBuf;

use faros_core::catalog::CatalogEntry;
use faros_core::kcp::apis::v1alpha1::{APIExportEndpointSlice, APIResourceSchema};
use faros_core::kcp::apis::v1alpha2::{APIExport, PermissionClaim, ResourceSchema};
use faros_core::names;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use objects::stale_resources;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use inputs::InputError;

use crate::workspace::{self, WorkspaceError};

/// Set to `true` to let `init` remove resources from the APIExport that no schema defines any more.
pub const ENV_ALLOW_PRUNE: &str = "FAROS_INIT_ALLOW_PRUNE";
/// The command-line flag the provider binaries offer for [`ENV_ALLOW_PRUNE`].
pub const FLAG_ALLOW_PRUNE: &str = "--allow-prune";

/// How often a write is retried after losing a race to another writer.
const RACE_ATTEMPTS: usize = 8;

/// What `init` publishes.
#[derive(Clone, Debug)]
pub struct InitOptions {
    /// The APIExport name (also the endpoint slice's), e.g. `quickstart.providers.faros.sh`.
    pub export: String,
    /// API groups this provider owns. Schemas must be in one of them, and export entries of these
    /// groups that no schema defines any more are pruned. Empty means `[export]`.
    pub groups: Vec<String>,
    /// Directory of APIResourceSchema YAML files; missing or empty is an error.
    pub schemas_dir: PathBuf,
    /// The export's permission claims, set when `init` creates the export; on an existing export
    /// they are left for the hub to switch once tenants may see them.
    pub claims: Vec<PermissionClaim>,
    /// CatalogEntry manifest to self-register (a missing file is an error); `None` skips the step,
    /// for tests in workspaces that cannot hold CatalogEntries.
    pub catalog_entry_file: Option<PathBuf>,
    /// `spec.export.path` of the endpoint slice; `None` (recommended) means the path of the
    /// workspace `init` acts in, as kcp reports it.
    pub workspace_path: Option<String>,
    /// Variables templates see as `env`.
    pub env: BTreeMap<String, String>,
    /// Remove export entries of this provider's groups that no schema defines any more (each logged).
    /// Without it such an `init` is refused and the export left as it is.
    pub allow_prune: bool,
    /// Act even where [`workspace::decide`] refuses (not the provider's ServiceAccount, or not a
    /// provider workspace); the reasons are logged as a warning.
    pub allow_foreign_workspace: bool,
}

impl InitOptions {
    /// Options for `export` with the provider environment: `FAROS_SCHEMAS_DIR` (default
    /// `/etc/faros/schemas`), `FAROS_CATALOGENTRY_FILE` (default
    /// `/etc/faros/catalogentry/catalogentry.yaml`), `FAROS_INIT_ALLOW_PRUNE` and
    /// `FAROS_ALLOW_FOREIGN_WORKSPACE` (see [`env_flag`]).
    pub fn from_env(export: &str) -> Self {
        let env = crate::manifest::process_env();
        let schemas_dir = env
            .get(names::ENV_SCHEMAS_DIR)
            .filter(|s| !s.is_empty())
            .cloned()
            .unwrap_or_else(|| names::DEFAULT_SCHEMAS_DIR.into());
        let catalog_entry_file = env
            .get(names::ENV_CATALOGENTRY_FILE)
            .filter(|s| !s.is_empty())
            .cloned()
            .unwrap_or_else(|| names::DEFAULT_CATALOGENTRY_FILE.into());
        let flag = |var: &str| env.get(var).is_some_and(|v| env_flag(v));
        Self {
            export: export.into(),
            groups: Vec::new(),
            schemas_dir: schemas_dir.into(),
            claims: Vec::new(),
            catalog_entry_file: Some(catalog_entry_file.into()),
            workspace_path: None,
            allow_prune: flag(ENV_ALLOW_PRUNE),
            allow_foreign_workspace: flag(workspace::ENV_ALLOW_FOREIGN_WORKSPACE),
            env,
        }
    }

    fn groups(&self) -> Vec<String> {
        if self.groups.is_empty() {
            vec![self.export.clone()]
        } else {
            self.groups.clone()
        }
    }
}

/// Whether a boolean environment value means yes: `y`, `yes`, `t`, `true`, `on` or `1` (any case),
/// the values clap's `BoolishValueParser` takes as true; anything else is false.
pub fn env_flag(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "y" | "yes" | "t" | "true" | "on" | "1"
    )
}

/// Errors from `init`.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(
        "APIExport {export:?}: init would remove {} that no schema in {}={dir} defines any more: {}; every tenant \
         bound to the export would lose them. Restore their schema files, or set {ENV_ALLOW_PRUNE}=true \
         ({FLAG_ALLOW_PRUNE}) to remove them",
        if resources.len() == 1 { "a resource" } else { "resources" },
        names::ENV_SCHEMAS_DIR,
        resources.join(", ")
    )]
    PruneRefused {
        export: String,
        dir: String,
        /// `<resource>.<group> (schema <name>)` of every entry that would go.
        resources: Vec<String>,
    },
    #[error("{step}: {kind} {name:?}: {source}")]
    Kube {
        step: &'static str,
        kind: String,
        name: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error(
        "schemas: APIResourceSchema {name:?} (from {file}) already exists with a different spec; schemas are \
         immutable, so give the changed schema a new version prefix"
    )]
    SchemaChanged { name: String, file: String },
    #[error("{step}: {kind} {name:?}: still racing with another writer after {RACE_ATTEMPTS} attempts")]
    Contended {
        step: &'static str,
        kind: String,
        name: String,
    },
}

/// What happened to one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Created,
    Updated,
    Unchanged,
}

/// One applied object and its outcome, in apply order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    pub kind: String,
    pub name: String,
    pub outcome: Outcome,
}

/// The result of `init`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InitReport {
    pub applied: Vec<Applied>,
    /// `<resource>.<group>` of the export entries removed (only with [`InitOptions::allow_prune`]).
    pub pruned: Vec<String>,
    /// Where it acted.
    pub placement: Option<workspace::Placement>,
}

impl InitReport {
    /// True when nothing was created or updated.
    pub fn unchanged(&self) -> bool {
        self.applied.iter().all(|a| a.outcome == Outcome::Unchanged)
    }
}

/// Runs the bootstrap with `config`, which must reach the provider's workspace as its ServiceAccount
/// (see [`workspace::decide`]; [`InitOptions::allow_foreign_workspace`] overrides).
///
/// All inputs are read and validated, and the target checked, before the first write, so bad YAML
/// or a wrong kubeconfig never leaves a half-published provider behind.
pub async fn init(config: kube::Config, opts: &InitOptions) -> Result<InitReport, InitError> {
    let groups = opts.groups();
    let schemas = inputs::require_schemas(&opts.schemas_dir, &groups, &opts.env)?;
    let entry = match &opts.catalog_entry_file {
        Some(file) => Some((file, inputs::require_catalog_entry(file, &opts.export, &opts.env)?)),
        None => None,
    };
    let placement = workspace::locate(&config, opts.allow_foreign_workspace).await?;
    if let (Some((file, entry)), Some(provider)) = (&entry, &placement.provider) {
        inputs::check_catalog_entry_name(file, entry, provider, &placement.workspace)?;
    }
    let client = Client::try_from(config).map_err(|source| WorkspaceError::Client {
        server: placement.server.clone(),
        source,
    })?;
    let mut report = InitReport {
        placement: Some(placement),
        ..Default::default()
    };

    let owned = objects::owned_resources(&schemas);
    let owned_groups: BTreeSet<String> = groups
        .iter()
        .cloned()
        .chain(owned.iter().map(|r| r.group.clone()))
        .collect();
    let exports: Api<APIExport> = Api::all(client.clone());
    // Refused before any write; the export step checks again against what it really replaces.
    let published = exports.get_opt(&opts.export).await.map_err(|source| InitError::Kube {
        step: "export",
        kind: "APIExport".into(),
        name: opts.export.clone(),
        source: Box::new(source),
    })?;
    if let Some(existing) = &published {
        check_prune(existing, &owned, &owned_groups, opts)?;
    }

    // 1. Schemas: immutable, so create-or-compare.
    let api: Api<APIResourceSchema> = Api::all(client.clone());
    for s in &schemas {
        let file = s.file.display().to_string();
        let outcome = ensure(&api, "schemas", s.schema.clone(), |existing| {
            let have = serde_json::to_value(&existing.spec).unwrap_or_default();
            let want = serde_json::to_value(&s.schema.spec).unwrap_or_default();
            if json_contains(&have, &want) {
                Ok(None)
            } else {
                Err(InitError::SchemaChanged {
                    name: s.name().to_string(),
                    file: file.clone(),
                })
            }
        })
        .await?;
        record(&mut report, "APIResourceSchema", s.name(), outcome);
    }

    // 2. APIExport: merged resources, our claims.
    let desired = objects::new_export(&opts.export, owned.clone(), opts.claims.clone());
    let mut pruned = Vec::new();
    let outcome = ensure(&exports, "export", desired, |existing| {
        pruned = check_prune(existing, &owned, &owned_groups, opts)?;
        Ok(objects::update_export(existing, &owned, &owned_groups))
    })
    .await?;
    if outcome == Outcome::Updated {
        for resource in &pruned {
            tracing::warn!(
                export = %opts.export,
                group = %resource.group,
                resource = %resource.name,
                schema = %resource.schema,
                "init: pruned resource from the APIExport ({ENV_ALLOW_PRUNE}); tenants bound to the export lose it"
            );
            report.pruned.push(format!("{}.{}", resource.name, resource.group));
        }
    }
    record(&mut report, "APIExport", &opts.export, outcome);

    // 3. Endpoint slice.
    // With the workspace's path: real kcp finds the slices to publish a URL in by the path
    // tenants' APIBindings name the export with, and never by the slice's logical cluster, so a
    // slice without a path gets no URL when a tenant binds (observed on kcp 0.32, docs/e2e.md).
    let slice_path = opts
        .workspace_path
        .clone()
        .or_else(|| report.placement.as_ref().and_then(|p| p.path.clone()));
    let outcome = ensure_slice(&client, &opts.export, slice_path.as_deref()).await?;
    record(&mut report, "APIExportEndpointSlice", &opts.export, outcome);

    // 4. Bind grant.
    let (role, binding) = objects::bind_grant(&opts.export);
    let name = role.name_any();
    let outcome = ensure(
        &Api::<ClusterRole>::all(client.clone()),
        "bind grant",
        role.clone(),
        |existing| {
            Ok((existing.rules != role.rules).then(|| {
                let mut updated = existing.clone();
                updated.rules = role.rules.clone();
                updated
            }))
        },
    )
    .await?;
    record(&mut report, "ClusterRole", &name, outcome);
    let outcome = ensure(
        &Api::<ClusterRoleBinding>::all(client.clone()),
        "bind grant",
        binding.clone(),
        |existing| {
            if existing.role_ref != binding.role_ref {
                // roleRef is immutable: the binding has to go; the retry loop recreates it.
                return Ok(Some(ClusterRoleBinding {
                    metadata: Default::default(),
                    ..binding.clone()
                }));
            }
            Ok((existing.subjects != binding.subjects).then(|| {
                let mut updated = existing.clone();
                updated.subjects = binding.subjects.clone();
                updated
            }))
        },
    )
    .await?;
    record(&mut report, "ClusterRoleBinding", &name, outcome);

    // 5. CatalogEntry, recording the schemas just published: the hub's proposal to switch to.
    if let Some((_, mut entry)) = entry {
        entry.spec.schemas = Some(objects::published_schemas(&schemas));
        let name = entry.name_any();
        let outcome = ensure(
            &Api::<CatalogEntry>::all(client.clone()),
            "catalog entry",
            entry.clone(),
            |existing| {
                let labels_ok = entry.labels().iter().all(|(k, v)| existing.labels().get(k) == Some(v));
                let have = serde_json::to_value(&existing.spec).unwrap_or_default();
                let want = serde_json::to_value(&entry.spec).unwrap_or_default();
                Ok((!json_contains(&have, &want) || !labels_ok).then(|| {
                    let mut updated = existing.clone();
                    updated.spec = entry.spec.clone();
                    updated.labels_mut().extend(entry.labels().clone());
                    updated
                }))
            },
        )
        .await?;
        record(&mut report, "CatalogEntry", &name, outcome);
    }
    Ok(report)
}

/// The entries of `existing` that this `init` would remove; an error unless pruning is allowed.
fn check_prune(
    existing: &APIExport,
    owned: &[ResourceSchema],
    owned_groups: &BTreeSet<String>,
    opts: &InitOptions,
) -> Result<Vec<ResourceSchema>, InitError> {
    let current = existing.spec.resources.clone().unwrap_or_default();
    let stale = stale_resources(&current, owned, owned_groups);
    if stale.is_empty() || opts.allow_prune {
        return Ok(stale);
    }
    Err(InitError::PruneRefused {
        export: opts.export.clone(),
        dir: opts.schemas_dir.display().to_string(),
        resources: stale
            .iter()
            .map(|r| format!("{}.{} (schema {})", r.name, r.group, r.schema))
            .collect(),
    })
}

fn record(report: &mut InitReport, kind: &str, name: &str, outcome: Outcome) {
    match outcome {
        Outcome::Unchanged => tracing::info!(kind, name, "init: unchanged"),
        Outcome::Created => tracing::info!(kind, name, "init: created"),
        Outcome::Updated => tracing::info!(kind, name, "init: updated"),
    }
    report.applied.push(Applied {
        kind: kind.into(),
        name: name.into(),
        outcome,
    });
}

/// Creates `desired` if absent; otherwise asks `decide` for a replacement of the existing object
/// (`None`: leave it). Lost races (AlreadyExists on create, Conflict on replace) re-read and decide
/// again. A replacement without `metadata.name` means "delete and recreate `desired`".
async fn ensure<K>(
    api: &Api<K>,
    step: &'static str,
    desired: K,
    mut decide: impl FnMut(&K) -> Result<Option<K>, InitError>,
) -> Result<Outcome, InitError>
where
    K: Resource<DynamicType = ()> + Clone + Debug + Serialize + DeserializeOwned,
{
    let kind = K::kind(&()).to_string();
    let name = desired.name_any();
    let kube_err = |source| InitError::Kube {
        step,
        kind: kind.clone(),
        name: name.clone(),
        source: Box::new(source),
    };
    let mut recreated = false;
    for _ in 0..RACE_ATTEMPTS {
        let Some(existing) = api.get_opt(&name).await.map_err(kube_err)? else {
            match api.create(&PostParams::default(), &desired).await {
                Ok(_) if recreated => return Ok(Outcome::Updated),
                Ok(_) => return Ok(Outcome::Created),
                Err(e) if is_status(&e, 409) => continue,
                Err(e) => return Err(kube_err(e)),
            }
        };
        let Some(mut replacement) = decide(&existing)? else {
            return Ok(Outcome::Unchanged);
        };
        if replacement.meta().name.is_none() {
            let params = DeleteParams {
                preconditions: existing.uid().map(|uid| kube::api::Preconditions {
                    uid: Some(uid),
                    resource_version: None,
                }),
                ..Default::default()
            };
            match api.delete(&name, &params).await {
                Ok(_) => {}
                Err(e) if is_status(&e, 404) || is_status(&e, 409) => {}
                Err(e) => return Err(kube_err(e)),
            }
            recreated = true;
            continue;
        }
        replacement.meta_mut().resource_version = existing.resource_version();
        match api.replace(&name, &PostParams::default(), &replacement).await {
            Ok(_) => return Ok(Outcome::Updated),
            Err(e) if is_status(&e, 409) || is_status(&e, 404) => continue,
            Err(e) => return Err(kube_err(e)),
        }
    }
    Err(InitError::Contended { step, kind, name })
}

async fn ensure_slice(client: &Client, export: &str, path: Option<&str>) -> Result<Outcome, InitError> {
    let api: Api<APIExportEndpointSlice> = Api::all(client.clone());
    let desired = objects::endpoint_slice(export, path);
    ensure(&api, "endpoint slice", desired.clone(), |existing| {
        Ok(
            objects::slice_needs_recreate(existing, export, path).then(|| APIExportEndpointSlice {
                metadata: Default::default(),
                ..desired.clone()
            }),
        )
    })
    .await
}

fn is_status(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}

/// True when every field set in `want` has the same value in `have` (arrays element-wise, same
/// length). Servers default fields (`served`, list markers, formats), so an applied object usually
/// carries more than the file did; that is not a change.
pub fn json_contains(have: &serde_json::Value, want: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (have, want) {
        (Value::Object(h), Value::Object(w)) => w
            .iter()
            .all(|(k, wv)| h.get(k).is_some_and(|hv| json_contains(hv, wv)) || (wv.is_null() && !h.contains_key(k))),
        (Value::Array(h), Value::Array(w)) => h.len() == w.len() && h.iter().zip(w).all(|(a, b)| json_contains(a, b)),
        (h, w) => h == w,
    }
}

#[cfg(test)]
mod tests {
    use super::{env_flag, json_contains};
    use serde_json::json;

    #[test]
    fn env_flags_take_clap_boolish_truths_only() {
        for (value, want) in [
            ("true", true),
            ("TRUE", true),
            ("1", true),
            ("yes", true),
            ("on", true),
            (" y ", true),
            ("t", true),
            ("false", false),
            ("0", false),
            ("no", false),
            ("", false),
            ("please", false),
        ] {
            assert_eq!(env_flag(value), want, "{value:?}");
        }
    }

    #[test]
    fn contains_tolerates_server_defaults_only() {
        let want = json!({"a": 1, "b": {"c": [1, {"d": "x"}]}});
        for (have, expect) in [
            (json!({"a": 1, "b": {"c": [1, {"d": "x", "e": true}]}, "f": 2}), true),
            (json!({"a": 2, "b": {"c": [1, {"d": "x"}]}}), false),
            (json!({"a": 1, "b": {"c": [1]}}), false),
            (json!({"a": 1}), false),
        ] {
            assert_eq!(json_contains(&have, &want), expect, "{have}");
        }
    }
}
