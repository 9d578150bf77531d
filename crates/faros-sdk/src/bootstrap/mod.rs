//! `init`: publish a provider's APIs from inside its own workspace (DESIGN §3 step 2).
//!
//! In order, each step logged: APIResourceSchemas from the schemas directory, the APIExport
//! (resource list merged, claims replaced), the APIExportEndpointSlice, the bind grant, and the
//! CatalogEntry. Every object is written only when it differs, so a second `init` writes nothing,
//! and every write tolerates a concurrent writer (AlreadyExists / Conflict re-read and re-decide),
//! so two replicas running `init` at once both succeed.

pub mod inputs;
pub mod objects;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::path::PathBuf;

use faros_core::catalog::CatalogEntry;
use faros_core::kcp::apis::v1alpha1::{APIExportEndpointSlice, APIResourceSchema};
use faros_core::kcp::apis::v1alpha2::{APIExport, PermissionClaim};
use faros_core::names;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use inputs::InputError;

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
    /// Directory of APIResourceSchema YAML files (missing directory: no schemas).
    pub schemas_dir: PathBuf,
    /// The export's permission claims (replaced wholesale on every `init`).
    pub claims: Vec<PermissionClaim>,
    /// CatalogEntry manifest to self-register; `None` skips the step.
    pub catalog_entry_file: Option<PathBuf>,
    /// `spec.export.path` of the endpoint slice; `None` (recommended) means "this workspace".
    pub workspace_path: Option<String>,
    /// Variables templates see as `env`.
    pub env: BTreeMap<String, String>,
}

impl InitOptions {
    /// Options for `export` with the provider environment: `FAROS_SCHEMAS_DIR` (default
    /// `/etc/faros/schemas`) and `FAROS_CATALOGENTRY_FILE` (unset or empty: skip).
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
            .map(PathBuf::from);
        Self {
            export: export.into(),
            groups: Vec::new(),
            schemas_dir: schemas_dir.into(),
            claims: Vec::new(),
            catalog_entry_file,
            workspace_path: None,
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

/// Errors from `init`.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error(transparent)]
    Input(#[from] InputError),
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
}

impl InitReport {
    /// True when nothing was created or updated.
    pub fn unchanged(&self) -> bool {
        self.applied.iter().all(|a| a.outcome == Outcome::Unchanged)
    }
}

/// Runs the bootstrap against `client`, which must target the provider's workspace.
///
/// All inputs are read and validated before the first write, so bad YAML never leaves a
/// half-published provider behind.
pub async fn init(client: Client, opts: &InitOptions) -> Result<InitReport, InitError> {
    let groups = opts.groups();
    let schemas = inputs::load_schemas(&opts.schemas_dir, &groups, &opts.env)?;
    let entry = match &opts.catalog_entry_file {
        Some(file) => Some(inputs::load_catalog_entry(file, &opts.export, &opts.env)?),
        None => None,
    };
    let mut report = InitReport::default();

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
    let owned = objects::owned_resources(&schemas);
    let owned_groups: BTreeSet<String> = groups
        .iter()
        .cloned()
        .chain(owned.iter().map(|r| r.group.clone()))
        .collect();
    let api: Api<APIExport> = Api::all(client.clone());
    let desired = objects::new_export(&opts.export, owned.clone(), opts.claims.clone());
    let outcome = ensure(&api, "export", desired, |existing| {
        Ok(objects::update_export(existing, &owned, &owned_groups, &opts.claims))
    })
    .await?;
    record(&mut report, "APIExport", &opts.export, outcome);

    // 3. Endpoint slice.
    let outcome = ensure_slice(&client, &opts.export, opts.workspace_path.as_deref()).await?;
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

    // 5. CatalogEntry.
    if let Some(entry) = entry {
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
    use super::json_contains;
    use serde_json::json;

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
