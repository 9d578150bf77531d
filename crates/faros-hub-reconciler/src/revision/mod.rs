//! Provider revisions (docs/hub-reconciler.md#provider-revisions): one immutable `ProviderRevision`
//! per distinct state a provider's `init` publishes, and the one writer that moves the provider's
//! APIExport to a new revision's schemas, after the compatibility gate.
//!
//! `init` proposes (new immutable schemas, the CatalogEntry naming them with their hashes); this
//! step, run in each Provider reconcile once provisioning is done:
//! 1. records the CatalogEntry's published state as a ProviderRevision `<provider>-<short digest>`
//!    beside the Provider;
//! 2. picks the target ([`plan::target`]: the newest, the pinned `spec.revision`, or the current one
//!    under `activation: Manual`);
//! 3. runs the gate on the export's current schemas against the target's
//!    ([`faros_core::revision::compat`]); where a rule depends on what tenants store, lists every
//!    tenant's objects of that resource through the export's virtual workspace and validates each
//!    under the new schema. Refused → the revision is `Failed` with findings naming the field, the
//!    rule and the workspaces with object counts, and the export is not touched;
//! 4. otherwise re-points `APIExport.spec.resources[].schema` (kcp moves every binding), and the
//!    revision is `Verifying` until the health gate ([`plan::health`]) sees a fresh heartbeat
//!    reporting it and a healthy backend; then it is `Serving`, the previous one `Retired`;
//! 5. drops the oldest retired or failed revisions beyond `revisionHistoryLimit`.
//!
//! Rolling back (`spec.revision` naming a retired revision) moves which revision is current, never
//! the schema: the gate proved the older revision's controllers work on the newer schema's objects
//! only in the other direction, and kcp schemas move forward only.

pub mod plan;

use std::collections::BTreeMap;

use faros_core::catalog::CatalogEntry;
use faros_core::conditions::{self, ConditionStatus};
use faros_core::kcp::apis::v1alpha1::{APIExportEndpointSlice, APIResourceSchema, APIResourceSchemaSpec};
use faros_core::kcp::apis::v1alpha2::{APIExport, ResourceSchema};
use faros_core::names;
use faros_core::provider::Provider;
use faros_core::provider_revision::{
    self as pr, LABEL_PROVIDER, ProviderRevision, ProviderRevisionSpec, ProviderRevisionStatus, RevisionFinding,
    RevisionPhase, WorkspaceCount,
};
use faros_core::revision::{self, compat};
use k8s_openapi::jiff::Timestamp;
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};

use crate::controller::{Context, Target};
use plan::{Gate, Health};

/// Why the revision step did not complete (the Provider's provisioning is unaffected).
#[derive(Debug, thiserror::Error)]
pub enum RevisionError {
    #[error("building a client: {0}")]
    Client(#[from] faros_core::client::ClientError),
    #[error("{what}: {}", crate::message::kube_message(.source))]
    Kube {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("{0}")]
    Schema(#[from] compat::LiveCheckError),
}

fn kube_err(what: impl Into<String>) -> impl FnOnce(kube::Error) -> RevisionError {
    let what = what.into();
    move |source| RevisionError::Kube { what, source }
}

/// The Provider status fields this step owns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Revisions {
    pub current: Option<String>,
    pub target: Option<String>,
    /// The target serves or was refused: nothing to wait for until something changes.
    pub settled: bool,
}

/// Runs the revision step for `provider` (see the module docs). `Ok(None)` when the provider has
/// published nothing with recorded schemas yet.
pub async fn reconcile(
    provider: &Provider,
    target: &Target,
    ctx: &Context,
) -> Result<Option<Revisions>, RevisionError> {
    let name = target.key.name.as_str();
    let ws = ctx.factory.cluster(&names::provider_workspace_path(name))?;
    let Some(entry) = Api::<CatalogEntry>::all(ws.clone())
        .get_opt(name)
        .await
        .map_err(kube_err(format!("reading CatalogEntry {name}")))?
    else {
        return Ok(None);
    };
    let Some(export_name) = entry.spec.api_export.as_ref().map(|e| e.name.clone()) else {
        return Ok(None);
    };
    if entry.spec.published_schemas().is_empty() {
        return Ok(None);
    }
    let revisions_api: Api<ProviderRevision> =
        Api::all(ctx.factory.virtual_workspace(&target.endpoint, &target.key.cluster)?);

    // 1. Record the published state.
    let published = revision::revision_name(name, &entry.spec);
    let mut revisions = revisions_api
        .list(&ListParams::default().labels(&format!("{LABEL_PROVIDER}={name}")))
        .await
        .map_err(kube_err("listing ProviderRevisions"))?
        .items;
    if !revisions
        .iter()
        .any(|r| r.metadata.name.as_deref() == Some(published.as_str()))
    {
        let mut rev = ProviderRevision::new(
            &published,
            ProviderRevisionSpec {
                provider: name.to_string(),
                digest: revision::digest(&entry.spec),
                catalog: entry.spec.clone(),
            },
        );
        rev.metadata.labels = Some(BTreeMap::from([(LABEL_PROVIDER.to_string(), name.to_string())]));
        match revisions_api.create(&PostParams::default(), &rev).await {
            Ok(created) => revisions.push(created),
            Err(kube::Error::Api(s)) if s.code == 409 => revisions.push(
                revisions_api
                    .get(&published)
                    .await
                    .map_err(kube_err("reading ProviderRevision"))?,
            ),
            Err(e) => return Err(kube_err(format!("creating ProviderRevision {published}"))(e)),
        }
        tracing::info!(provider = name, revision = %published, "recorded a new provider revision");
    }

    let exports: Api<APIExport> = Api::all(ws.clone());
    let export = exports
        .get(&export_name)
        .await
        .map_err(kube_err(format!("reading APIExport {export_name}")))?;
    let serves = |rev: &ProviderRevision| export_serves(&export, rev);

    // 2. Current and target.
    let status = provider.status.as_ref();
    let current = status
        .and_then(|s| s.current_revision.clone())
        .filter(|c| revisions.iter().any(|r| r.metadata.name.as_deref() == Some(c)))
        .or_else(|| {
            // Before this step ever ran (or after its revision was deleted): the one the export serves.
            revisions
                .iter()
                .find(|r| serves(r))
                .and_then(|r| r.metadata.name.clone())
        });
    let target_name = plan::target(&provider.spec, current.as_deref(), &published).to_string();
    let Some(target_rev) = revisions
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some(target_name.as_str()))
        .cloned()
    else {
        tracing::warn!(provider = name, revision = %target_name, "spec.revision names no retained revision");
        return Ok(Some(Revisions {
            current: current.clone(),
            target: Some(target_name),
            settled: true,
        }));
    };
    let now = Timestamp::now();
    let mut statuses: BTreeMap<String, ProviderRevisionStatus> = BTreeMap::new();
    let mut new_current = current.clone();

    // 3./4. Move the export to the target when it does not serve it yet.
    let target_phase = target_rev.status.as_ref().and_then(|s| s.phase);
    let mut desired = target_rev.status.clone().unwrap_or_default();
    let served_before = matches!(target_phase, Some(RevisionPhase::Retired | RevisionPhase::Serving));
    let switched = if served_before || serves(&target_rev) {
        true
    } else if target_phase == Some(RevisionPhase::Failed) {
        // Refused once; the same digest would be refused again. A new publish makes a new revision.
        false
    } else {
        let current_rev = current
            .as_deref()
            .and_then(|c| revisions.iter().find(|r| r.metadata.name.as_deref() == Some(c)));
        let old = read_schemas(&ws, export.spec.resources.iter().flatten().map(|r| r.schema.as_str())).await?;
        let new = read_schemas(&ws, target_rev.spec.schemas().iter().map(|s| s.name.as_str())).await?;
        let groups: Vec<&str> = new.iter().map(|s| s.group.as_str()).collect();
        let old: Vec<APIResourceSchemaSpec> = old.into_iter().filter(|s| groups.contains(&s.group.as_str())).collect();
        let mut findings = compat::compare(&old, &new);
        let claims = compat::compare_claims(
            current_rev
                .map(|r| r.spec.catalog.permission_claims())
                .unwrap_or_default(),
            target_rev.spec.catalog.permission_claims(),
        );
        let consent = compat::overall(&claims) == compat::Verdict::NeedsConsent;
        let decision = plan::gate(&findings);
        if let Gate::LiveCheck(resources) = &decision {
            findings.retain(|f| f.verdict != compat::Verdict::NeedsLiveCheck);
            for resource in resources {
                let (Some(before), Some(after)) = (
                    old.iter().find(|s| &compat::resource_key(s) == resource),
                    new.iter().find(|s| &compat::resource_key(s) == resource),
                ) else {
                    continue;
                };
                let objects = tenant_objects(ctx, &ws, &export_name, before).await?;
                findings.extend(compat::live_check(after, objects.iter().map(|(c, o)| (c.as_str(), o)))?);
            }
        }
        let refused = decision == Gate::Refuse || compat::overall(&findings) >= compat::Verdict::NeedsLiveCheck;
        let gen_ = target_rev.metadata.generation;
        desired.observed_generation = gen_;
        set(
            &mut desired,
            pr::CONDITION_CONSENT_REQUIRED,
            consent,
            if consent { "NewClaims" } else { "NoNewClaims" },
            &claims
                .iter()
                .filter(|f| f.verdict == compat::Verdict::NeedsConsent)
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
            gen_,
            now,
        );
        if refused {
            let shown: Vec<&compat::Finding> = findings
                .iter()
                .filter(|f| f.verdict != compat::Verdict::Compatible)
                .collect();
            desired.findings = shown.iter().map(|f| to_revision_finding(f)).collect();
            desired.phase = Some(RevisionPhase::Failed);
            let message = shown.iter().map(|f| f.to_string()).collect::<Vec<_>>().join("; ");
            set(
                &mut desired,
                pr::CONDITION_SCHEMA_COMPATIBLE,
                false,
                "Incompatible",
                &message,
                gen_,
                now,
            );
            set(
                &mut desired,
                "Ready",
                false,
                "Incompatible",
                "refused by the compatibility gate; the export was not moved",
                gen_,
                now,
            );
            tracing::warn!(provider = name, revision = %target_name, %message, "provider revision refused");
            false
        } else {
            switch_export(&exports, &export, &target_rev).await?;
            desired.findings.clear();
            set(
                &mut desired,
                pr::CONDITION_SCHEMA_COMPATIBLE,
                true,
                "Compatible",
                "every change is compatible with what tenants store",
                gen_,
                now,
            );
            tracing::info!(provider = name, revision = %target_name, "export moved to the revision's schemas");
            true
        }
    };

    // Health gate.
    if switched {
        let gen_ = target_rev.metadata.generation;
        desired.observed_generation = gen_;
        if !desired
            .conditions
            .iter()
            .any(|c| c.type_ == pr::CONDITION_SCHEMA_COMPATIBLE)
        {
            set(
                &mut desired,
                pr::CONDITION_SCHEMA_COMPATIBLE,
                true,
                "Compatible",
                "the export serves these schemas",
                gen_,
                now,
            );
        }
        match plan::health(&target_rev, entry.status.as_ref(), now) {
            Health::Up => {
                set(
                    &mut desired,
                    pr::CONDITION_BACKEND_HEALTHY,
                    true,
                    "Healthy",
                    "fresh heartbeats report this revision; the backend is healthy",
                    gen_,
                    now,
                );
                set(
                    &mut desired,
                    pr::CONDITION_SERVING,
                    true,
                    "Serving",
                    "this revision serves",
                    gen_,
                    now,
                );
                set(
                    &mut desired,
                    "Ready",
                    true,
                    "Serving",
                    "this revision serves",
                    gen_,
                    now,
                );
                desired.phase = Some(RevisionPhase::Serving);
                if let Some(prev) = current.as_deref().filter(|c| *c != target_name)
                    && let Some(prev_rev) = revisions.iter().find(|r| r.metadata.name.as_deref() == Some(prev))
                {
                    let mut retired = prev_rev.status.clone().unwrap_or_default();
                    retired.phase = Some(RevisionPhase::Retired);
                    let g = prev_rev.metadata.generation;
                    set(
                        &mut retired,
                        pr::CONDITION_SERVING,
                        false,
                        "Superseded",
                        &format!("{target_name} serves"),
                        g,
                        now,
                    );
                    set(
                        &mut retired,
                        "Ready",
                        false,
                        "Superseded",
                        &format!("{target_name} serves"),
                        g,
                        now,
                    );
                    statuses.insert(prev.to_string(), retired);
                }
                new_current = Some(target_name.clone());
            }
            Health::Waiting(reason, message) => {
                set(
                    &mut desired,
                    pr::CONDITION_BACKEND_HEALTHY,
                    false,
                    reason,
                    &message,
                    gen_,
                    now,
                );
                set(&mut desired, pr::CONDITION_SERVING, false, reason, &message, gen_, now);
                set(&mut desired, "Ready", false, reason, &message, gen_, now);
                if current.as_deref() != Some(target_name.as_str()) || desired.phase.is_none() {
                    desired.phase = Some(RevisionPhase::Verifying);
                }
            }
        }
    }
    let settled = matches!(desired.phase, Some(RevisionPhase::Serving | RevisionPhase::Failed));
    statuses.insert(target_name.clone(), desired);
    // A published revision the provider does not move to (Manual) waits, Pending.
    if published != target_name
        && let Some(p) = revisions
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(published.as_str()))
        && p.status.as_ref().and_then(|s| s.phase).is_none()
    {
        let mut waiting = ProviderRevisionStatus {
            phase: Some(RevisionPhase::Pending),
            ..Default::default()
        };
        set(
            &mut waiting,
            "Ready",
            false,
            "AwaitingActivation",
            "activation is Manual: set the Provider's spec.revision to this revision",
            p.metadata.generation,
            now,
        );
        statuses.insert(published.clone(), waiting);
    }

    for (rev_name, desired) in &statuses {
        let Some(rev) = revisions
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(rev_name.as_str()))
        else {
            continue;
        };
        if rev.status.as_ref() == Some(desired) {
            continue;
        }
        let patch = json!({"status": desired});
        revisions_api
            .patch_status(rev_name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(kube_err(format!("writing ProviderRevision {rev_name} status")))?;
    }

    // 5. History.
    let keep: Vec<&str> = [
        new_current.as_deref(),
        Some(target_name.as_str()),
        Some(published.as_str()),
    ]
    .into_iter()
    .flatten()
    .collect();
    for old in plan::to_prune(&revisions, &keep, provider.spec.revision_history_limit()) {
        match revisions_api.delete(&old, &DeleteParams::default()).await {
            Ok(_) => {
                tracing::info!(provider = name, revision = %old, "pruned a provider revision (revisionHistoryLimit)")
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(kube_err(format!("deleting ProviderRevision {old}"))(e)),
        }
    }
    Ok(Some(Revisions {
        current: new_current,
        target: Some(target_name),
        settled,
    }))
}

fn set(
    status: &mut ProviderRevisionStatus,
    type_: &str,
    ok: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
    now: Timestamp,
) {
    let cond = conditions::new_condition(type_, ConditionStatus::from(ok), reason, message, generation, now);
    conditions::set(&mut status.conditions, cond);
}

/// Whether every schema of `rev` is what `export` serves for its resource.
fn export_serves(export: &APIExport, rev: &ProviderRevision) -> bool {
    let resources = export.spec.resources.as_deref().unwrap_or_default();
    rev.spec.schemas().iter().all(|s| {
        resources
            .iter()
            .any(|r| r.group == s.group && r.name == s.resource && r.schema == s.name)
    })
}

async fn read_schemas<'a>(
    ws: &Client,
    names: impl Iterator<Item = &'a str>,
) -> Result<Vec<APIResourceSchemaSpec>, RevisionError> {
    let api: Api<APIResourceSchema> = Api::all(ws.clone());
    let mut out = Vec::new();
    for name in names {
        let s = api
            .get(name)
            .await
            .map_err(kube_err(format!("reading APIResourceSchema {name}")))?;
        out.push(s.spec);
    }
    Ok(out)
}

/// Re-points the export's entries to the revision's schemas (adding resources it lacks), with the
/// export's resourceVersion as precondition so a concurrent `init` is not overwritten.
async fn switch_export(api: &Api<APIExport>, export: &APIExport, rev: &ProviderRevision) -> Result<(), RevisionError> {
    let mut resources = export.spec.resources.clone().unwrap_or_default();
    for s in rev.spec.schemas() {
        match resources
            .iter_mut()
            .find(|r| r.group == s.group && r.name == s.resource)
        {
            Some(r) => r.schema = s.name.clone(),
            None => resources.push(ResourceSchema::crd(&s.group, &s.resource, &s.name)),
        }
    }
    let patch = json!({
        "metadata": {"resourceVersion": export.resource_version()},
        "spec": {"resources": resources},
    });
    let name = export.name_any();
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(kube_err(format!("moving APIExport {name} to the new schemas")))?;
    Ok(())
}

/// Every tenant object of `schema`'s resource, `(logical cluster, object)`, listed in its storage
/// version through each virtual workspace URL of the export's endpoint slice.
async fn tenant_objects(
    ctx: &Context,
    ws: &Client,
    export: &str,
    schema: &APIResourceSchemaSpec,
) -> Result<Vec<(String, Value)>, RevisionError> {
    let slice = Api::<APIExportEndpointSlice>::all(ws.clone())
        .get_opt(export)
        .await
        .map_err(kube_err(format!("reading APIExportEndpointSlice {export}")))?;
    let version = schema
        .versions
        .iter()
        .find(|v| v.storage)
        .or(schema.versions.first())
        .map(|v| v.name.clone())
        .unwrap_or_default();
    let api_version = if schema.group.is_empty() {
        version.clone()
    } else {
        format!("{}/{version}", schema.group)
    };
    let ar = ApiResource {
        group: schema.group.clone(),
        version,
        api_version,
        kind: schema.names.kind.clone(),
        plural: schema.names.plural.clone(),
    };
    let mut out = Vec::new();
    for url in faros_core::kcp::endpoints::urls(slice.as_ref()) {
        let api: Api<DynamicObject> = Api::all_with(ctx.factory.virtual_workspace(&url, "*")?, &ar);
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(kube_err(format!("listing tenants' {} through {url}", ar.plural)))?;
        for obj in list.items {
            let cluster = obj
                .annotations()
                .get(faros_core::kcp::ANNOTATION_CLUSTER)
                .cloned()
                .unwrap_or_default();
            let value = serde_json::to_value(&obj).unwrap_or_default();
            out.push((cluster, value));
        }
    }
    Ok(out)
}

fn to_revision_finding(f: &compat::Finding) -> RevisionFinding {
    RevisionFinding {
        rule: f.rule.to_string(),
        resource: f.resource.clone(),
        field: (!f.field.is_empty()).then(|| f.field.clone()),
        message: f.message.clone(),
        workspaces: f
            .workspaces
            .iter()
            .map(|(cluster, objects)| WorkspaceCount {
                cluster: cluster.clone(),
                objects: *objects,
            })
            .collect(),
    }
}
