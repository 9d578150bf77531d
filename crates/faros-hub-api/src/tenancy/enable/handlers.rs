//! The HTTP handlers and the kcp writes of Enable, Disable and the enabled list.
//!
//! All kcp calls run as the hub's own kcp identity in the tenant workspace, after the route's scope
//! ([`crate::tenancy::scope`]) decided the caller may: the caller's own kcp rights are not consulted
//! twice, and a member cannot reach these writes because the admin check is a SubjectAccessReview
//! for exactly what Enable does.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use faros_core::kcp::apis::v1alpha2::APIBinding;
use faros_core::names;
use faros_core::status::Status;
use faros_core::wait::{WaitError, wait_for};
use http::StatusCode;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use serde_json::json;

use super::plan::{self, EnableInput};
use crate::auth::Caller;
use crate::catalog::registry::Registry;
use crate::tenancy::Tenancy;
use crate::tenancy::bound::{bindings, enabled};
use crate::tenancy::scope::Scoped;
use crate::workspace::WorkspaceRef;

/// The `{name}` of an Enable or Disable route: the provider.
#[derive(serde::Deserialize)]
pub struct ProviderParam {
    name: String,
}

/// How long a binding that was not Bound within the request's wait is still watched in the
/// background, so the member role appears once kcp is done.
const FINISH_WAIT: Duration = Duration::from_secs(300);

/// `GET …/providers/enabled`: members may read.
pub async fn list(
    State(tenancy): State<Arc<Tenancy>>,
    State(registry): State<Arc<Registry>>,
    Scoped { target, .. }: Scoped,
) -> Response {
    let run = async { enabled(&tenancy.access, &registry, &target).await };
    match run.await {
        Ok(items) => axum::Json(json!({ "items": items })).into_response(),
        Err(s) => s.into_response(),
    }
}

/// `POST …/providers/{name}/enable`.
pub async fn enable(
    State(tenancy): State<Arc<Tenancy>>,
    State(registry): State<Arc<Registry>>,
    Extension(caller): Extension<Caller>,
    Scoped { target, .. }: Scoped,
    Path(ProviderParam { name }): Path<ProviderParam>,
    body: Body,
) -> Response {
    match enable_inner(&tenancy, &registry, &caller, &target, &name, body).await {
        Ok(r) => r,
        Err(s) => s.into_response(),
    }
}

async fn enable_inner(
    tenancy: &Arc<Tenancy>,
    registry: &Arc<Registry>,
    caller: &Caller,
    target: &WorkspaceRef,
    name: &str,
    body: Body,
) -> Result<Response, Status> {
    let bytes = axum::body::to_bytes(body, plan::BODY_LIMIT)
        .await
        .map_err(|_| Status::too_large(format!("the request body exceeds {} bytes", plan::BODY_LIMIT)))?;
    let request = plan::parse_request(&bytes)?;
    let view = registry
        .view(name)
        .ok_or_else(|| Status::not_found_message(format!("provider {name:?} not found")))?;

    let kube = tenancy.client(&target.cluster)?;
    let api: Api<APIBinding> = Api::all(kube.clone());
    let current = bindings(&api).await?;
    let registry = registry.clone();
    let exportless = move |d: &str| registry.view(d).is_some_and(|v| v.provider.spec.api_export.is_none());
    let planned = plan::plan_enable(&EnableInput {
        provider: name,
        spec: &view.provider.spec,
        request: &request,
        bindings: &current,
        exportless: &exportless,
        provider_cluster: view.provider.provider_cluster.as_deref(),
    })?;
    let binding_name = planned.binding.metadata.name.clone().unwrap_or_default();

    write_binding(&api, &planned.binding, planned.exists).await?;
    match planned.edges {
        Some((role, crb)) => {
            upsert(&Api::<ClusterRole>::all(kube.clone()), &role).await?;
            upsert(&Api::<ClusterRoleBinding>::all(kube.clone()), &crb).await?;
        }
        // The provider no longer asks for it: take back what an earlier Enable granted.
        None => {
            remove_edges_grant(&kube, name).await?;
        }
    }
    tenancy.notify_bindings_changed();
    tracing::info!(user = %caller.user, workspace = %target.path, provider = name, "provider enabled");

    match wait_for(
        api.clone(),
        &binding_name,
        |b| b.is_some_and(plan::is_bound),
        tenancy.enable_wait(),
    )
    .await
    {
        Ok(Some(bound)) => {
            put_member_role(&kube, name, &bound).await?;
            Ok(axum::Json(json!({"bindingName": binding_name, "phase": plan::phase_of(&bound)})).into_response())
        }
        Ok(None) | Err(WaitError::Deleted { .. }) => Err(Status::conflict_message(format!(
            "APIBinding {binding_name:?} was deleted while enabling provider {name:?}; enable it again"
        ))),
        Err(WaitError::Timeout { .. }) => {
            let phase = api
                .get_opt(&binding_name)
                .await
                .map_err(Status::from)?
                .map(|b| plan::phase_of(&b))
                .unwrap_or_default();
            tokio::spawn(finish_later(
                tenancy.clone(),
                kube,
                name.to_string(),
                binding_name.clone(),
            ));
            Ok((
                StatusCode::ACCEPTED,
                axum::Json(json!({"bindingName": binding_name, "phase": phase})),
            )
                .into_response())
        }
        Err(e @ WaitError::Watch { .. }) => Err(Status::unavailable(format!(
            "the APIBinding was written but watching it failed: {e}; GET the enabled list to follow it"
        ))),
    }
}

/// Writes the member role once a slow binding becomes Bound (kcp may take longer than a request).
async fn finish_later(tenancy: Arc<Tenancy>, kube: kube::Client, provider: String, binding_name: String) {
    let api: Api<APIBinding> = Api::all(kube.clone());
    match wait_for(api, &binding_name, |b| b.is_none_or(plan::is_bound), FINISH_WAIT).await {
        Ok(Some(bound)) => match put_member_role(&kube, &provider, &bound).await {
            Ok(()) => tenancy.notify_bindings_changed(),
            Err(e) => tracing::warn!(provider, error = %e.message, "writing the member role failed"),
        },
        Ok(None) | Err(WaitError::Deleted { .. }) => {}
        Err(e) => tracing::warn!(provider, error = %e, "binding did not become Bound; enable again to retry"),
    }
}

async fn write_binding(api: &Api<APIBinding>, desired: &APIBinding, exists: bool) -> Result<(), Status> {
    let name = desired.metadata.name.clone().unwrap_or_default();
    if !exists {
        match api.create(&PostParams::default(), desired).await {
            Ok(_) => return Ok(()),
            // Another Enable won the race: update it like any existing binding.
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(Status::from(e)),
        }
    }
    // A merge patch replaces the claim list as a whole: claims the provider no longer declares go.
    let patch = json!({
        "metadata": {"labels": desired.metadata.labels},
        "spec": {"permissionClaims": desired.spec.permission_claims},
    });
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(Status::from)?;
    Ok(())
}

/// Creates `obj`, or overwrites it with a merge patch of the whole object (lists are replaced, so
/// drift in rules and subjects heals).
async fn upsert<K>(api: &Api<K>, obj: &K) -> Result<(), Status>
where
    K: Resource + Clone + Debug + DeserializeOwned + serde::Serialize,
{
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => {
            let name = obj.meta().name.clone().unwrap_or_default();
            api.patch(&name, &PatchParams::default(), &Patch::Merge(obj))
                .await
                .map(|_| ())
                .map_err(Status::from)
        }
        Err(e) => Err(Status::from(e)),
    }
}

async fn put_member_role(kube: &kube::Client, provider: &str, bound: &APIBinding) -> Result<(), Status> {
    let resources = bound
        .status
        .as_ref()
        .and_then(|s| s.bound_resources.clone())
        .unwrap_or_default();
    let api: Api<ClusterRole> = Api::all(kube.clone());
    match plan::member_role(provider, &resources) {
        Some(role) => upsert(&api, &role).await,
        None => delete_absent_ok(&api, &names::provider_member_role(provider))
            .await
            .map(|_| ()),
    }
}

/// Deletes `name`; `Ok(true)` when something was there.
async fn delete_absent_ok<K>(api: &Api<K>, name: &str) -> Result<bool, Status>
where
    K: Resource + Clone + Debug + DeserializeOwned,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
        Err(e) => Err(Status::from(e)),
    }
}

async fn remove_edges_grant(kube: &kube::Client, provider: &str) -> Result<bool, Status> {
    let name = names::edges_proxy_grant(provider);
    let crb = delete_absent_ok(&Api::<ClusterRoleBinding>::all(kube.clone()), &name).await?;
    let role = delete_absent_ok(&Api::<ClusterRole>::all(kube.clone()), &name).await?;
    Ok(crb || role)
}

/// `POST …/providers/{name}/disable`.
pub async fn disable(
    State(tenancy): State<Arc<Tenancy>>,
    State(registry): State<Arc<Registry>>,
    Extension(caller): Extension<Caller>,
    Scoped { target, .. }: Scoped,
    Path(ProviderParam { name }): Path<ProviderParam>,
) -> Response {
    match disable_inner(&tenancy, &registry, &caller, &target, &name).await {
        Ok(r) => r,
        Err(s) => s.into_response(),
    }
}

async fn disable_inner(
    tenancy: &Tenancy,
    registry: &Arc<Registry>,
    caller: &Caller,
    target: &WorkspaceRef,
    name: &str,
) -> Result<Response, Status> {
    names::validate_dns_label(name).map_err(|e| Status::bad_request(format!("provider {name:?}: {e}")))?;
    let kube = tenancy.client(&target.cluster)?;
    let api: Api<APIBinding> = Api::all(kube.clone());
    // Every binding of this provider's export, whatever its name; a same-named binding of
    // something else is not ours to delete.
    let all = bindings(&api).await?;
    let ours: Vec<String> = all
        .iter()
        .filter(|b| plan::bound_provider(b) == Some(name))
        .filter_map(|b| b.metadata.name.clone())
        .collect();
    let dependencies_of = |p: &str| -> Vec<String> {
        registry
            .view(p)
            .and_then(|v| v.provider.spec.dependencies.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|d| d.name)
            .collect()
    };
    let dependents = plan::dependents(&plan::enabled_rows(&all, &|_| false), name, &dependencies_of);
    if !ours.is_empty() && !dependents.is_empty() {
        return Err(Status::conflict_message(format!(
            "provider {name:?} is required by {} enabled in this workspace; disable {} first",
            dependents.join(", "),
            if dependents.len() == 1 { "it" } else { "them" }
        )));
    }
    let mut changed = false;
    for b in &ours {
        changed |= delete_absent_ok(&api, b).await?;
    }
    changed |= delete_absent_ok(
        &Api::<ClusterRole>::all(kube.clone()),
        &names::provider_member_role(name),
    )
    .await?;
    changed |= remove_edges_grant(&kube, name).await?;
    if changed {
        tenancy.notify_bindings_changed();
        tracing::info!(user = %caller.user, workspace = %target.path, provider = name, "provider disabled");
    }
    // kcp deletes the bound objects first; until then the binding stays, terminating.
    let left = plan::enabled_rows(&bindings(&api).await?, &|_| false)
        .into_iter()
        .find(|e| e.provider == name);
    Ok(match left {
        Some(e) => (
            StatusCode::ACCEPTED,
            axum::Json(json!({
                "bindingName": e.binding_name,
                "phase": e.phase,
                "terminating": e.terminating,
                "deletionBlocked": e.deletion_blocked,
            })),
        )
            .into_response(),
        None => StatusCode::NO_CONTENT.into_response(),
    })
}
