//! The Provider controller's reconcile: provision or tear down one Provider
//! (docs/architecture.md#provider-lifecycle).
//!
//! Steps, each idempotent and each mapped to the `Ready` reason that names it when it fails:
//! 1. finalizer `admin.faros.sh/cleanup`, before anything is created;
//! 2. workspace `root:faros:providers:<name>` of type `root:faros:provider`, Ready (`WorkspaceError`;
//!    a workspace kcp is still readying ends the pass, and the workspace watch queues the Provider
//!    again once it is Ready: `controller::workspaces`);
//! 3. in that workspace: namespace `default`, ServiceAccount `provider`, ClusterRoleBinding
//!    `faros:providers:sa:provider` → `cluster-admin`, and, when the hub API has its own kcp user,
//!    its role there (`bind` on the exports, token reviews: [`crate::identity::hub::provider_role`])
//!    (`ServiceAccountError`);
//! 4. token Secret `provider-token`, waited until kcp fills the token, and the kubeconfig
//!    (`KubeconfigError`); the token Secret is applied right after the ServiceAccount, and the
//!    bindings of step 3 are written meanwhile, from the start of that step;
//! 5. the kubeconfig Secret in `root:faros:system:providers`, and removal of the previous one when
//!    `spec.secretName` changed (`SecretError`);
//! 6. with the mirror enabled, the same Secret in the mirror namespace of the hosting cluster, and
//!    removal of the previous one's mirror (`MirrorError`, see [`crate::mirror`]).
//!
//! Objects are server-side applied with fixed bodies, so a steady-state reconcile changes nothing;
//! status is written only when it differs, preconditioned on the resourceVersion of the copy it was
//! computed from ([`status_patch`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use faros_core::conditions;
use faros_core::kcp::Workspace;
use faros_core::names;
use faros_core::provider::{Provider, ProviderStatus};
use faros_runtime::{Decision, Retry, finalizer};
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

use super::context::{Context, ProviderKey, Target};
use super::mirror as mirror_step;
use super::wait::wait_from;
use super::workspace;
use crate::kubeconfig::{self, KubeconfigParams};
use crate::mirror::{MirrorError, REASON_MIRROR_ERROR};
use crate::registrar::objects::is_reserved_secret;
use crate::status::{self, Outcome};
use faros_runtime::Action;

/// A provisioning step that failed; its reason and message go into the `Ready` condition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}: {message}")]
pub struct StepError {
    pub reason: &'static str,
    pub message: String,
    /// Known once the workspace was scheduled.
    pub workspace_cluster: Option<String>,
}

/// Why a reconcile did not complete.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Provisioning failed; the Provider's status says which step and why.
    #[error(transparent)]
    Step(#[from] StepError),
    #[error("writing Provider {key}: {}", crate::message::kube_message(.source))]
    ProviderWrite {
        key: ProviderKey,
        #[source]
        source: kube::Error,
    },
    #[error("Provider {key} changed while being updated; retrying with the latest version")]
    Conflict { key: ProviderKey },
    #[error("building a client: {0}")]
    Client(#[from] faros_core::client::ClientError),
    #[error("tearing down Provider {key}: {message}")]
    Cleanup { key: ProviderKey, message: String },
    #[error("tearing down Provider {key}: {source}")]
    Mirror {
        key: ProviderKey,
        #[source]
        source: MirrorError,
    },
}

impl Error {
    /// Metric label.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::Step(s) => s.reason,
            Error::ProviderWrite { .. } => "ProviderWriteError",
            Error::Conflict { .. } => "Conflict",
            Error::Client(_) => "ClientError",
            Error::Cleanup { .. } => "CleanupError",
            Error::Mirror { .. } => REASON_MIRROR_ERROR,
        }
    }
}

/// The retry after a failure: the runtime's per-Provider backoff (500 ms doubling to 60 s);
/// optimistic-concurrency conflicts retry at once (the newer object is already on its way).
///
/// A conflict is expected: status is written from the cached copy, which may lag a write made
/// meanwhile, and the retry from the newer copy succeeds. So it is logged at debug, not as a warning,
/// unless it keeps repeating ([`faros_runtime::QUIET_FAILURES`]). A conflict that keeps repeating is
/// not healing by itself (another writer, a stalled watch): from then on it takes the backoff like any
/// failure, rather than a retry and a warning twenty times a second. Every other failure is a warning.
pub fn error_policy(error: &Error, retry: Retry) -> Decision {
    if matches!(error, Error::Conflict { .. }) {
        let after = if retry.failures <= faros_runtime::QUIET_FAILURES {
            Duration::from_millis(50)
        } else {
            retry.delay
        };
        return Decision::expected(Action::RequeueAfter(after));
    }
    Decision::unexpected(Action::RequeueAfter(retry.delay))
}

const FIELD_SCOPE: &str = "provider";

/// How soon a Provider whose revision is still moving (waiting for heartbeats or health) is looked
/// at again; heartbeats change the CatalogEntry, which this controller does not watch.
const REVISION_RECHECK: Duration = Duration::from_secs(5);

fn field_manager(scope: &str) -> PatchParams {
    PatchParams::apply(&format!("{}/{scope}", names::RECONCILER_FIELD_MANAGER)).force()
}

/// Reconciles one Provider seen through the virtual workspace `target.endpoint`.
pub async fn reconcile(provider: Arc<Provider>, target: &Target, ctx: &Context) -> Result<Action, Error> {
    let api: Api<Provider> = Api::all(ctx.factory.virtual_workspace(&target.endpoint, &target.key.cluster)?);
    let key = &target.key;
    if provider.meta().deletion_timestamp.is_some() {
        if !finalizer::has(provider.meta(), names::PROVIDER_FINALIZER) {
            return Ok(Action::AwaitChange);
        }
        return cleanup(&provider, key, &api, ctx).await;
    }
    if let Err(e) = names::validate_dns_label(&key.name) {
        let message = format!(
            "{e}; the name becomes workspace {}, so it must be a DNS-1123 label of at most {} characters. \
             Delete this Provider and create it under a valid name.",
            names::provider_workspace_path(&key.name),
            names::DNS_LABEL_MAX
        );
        write_status(&api, key, &provider, &Outcome::InvalidName { message }, None, ctx).await?;
        return Ok(Action::AwaitChange);
    }
    let provider = if finalizer::has(provider.meta(), names::PROVIDER_FINALIZER) {
        provider
    } else {
        Arc::new(add_finalizer(&api, key, &provider, ctx).await?)
    };

    let outcome = match provision(&provider, key, ctx).await {
        Ok(Provisioning::Done(outcome)) => outcome,
        // Queued again by the workspace watch once it is Ready; the requeue after the workspace
        // timeout is for a watch that never says so, and then waits in the reconcile as before.
        Ok(Provisioning::AwaitingWorkspace) => return Ok(Action::RequeueAfter(ctx.settings.workspace_timeout)),
        Err(step) => {
            let outcome = Outcome::Failed {
                reason: step.reason,
                message: step.message.clone(),
                workspace_cluster: step.workspace_cluster.clone(),
            };
            // The step error is what matters; a failed status write on top is only logged.
            if let Err(error) = write_status(&api, key, &provider, &outcome, None, ctx).await {
                tracing::warn!(%key, %error, "could not record the failure in status");
            }
            return Err(step.into());
        }
    };
    // Revisions come after provisioning and never fail it: the Provider stays Ready while an
    // upgrade waits or is refused (the ProviderRevision's status says why).
    let (revisions, requeue) = match crate::revision::reconcile(&provider, target, ctx).await {
        Ok(Some(r)) if !r.settled => (Some(r), REVISION_RECHECK),
        Ok(r) => (r, ctx.settings.resync),
        Err(error) => {
            tracing::warn!(%key, %error, "provider revisions");
            (None, REVISION_RECHECK)
        }
    };
    write_status(&api, key, &provider, &outcome, revisions.as_ref(), ctx).await?;
    tracing::debug!(%key, "provisioned");
    Ok(Action::RequeueAfter(requeue.min(ctx.settings.resync)))
}

/// A failed finalizer write: one that lost a race ([`finalizer::is_conflict`]) is a
/// [`Error::Conflict`], retried at once against the newer version.
fn finalizer_error(key: &ProviderKey, source: kube::Error) -> Error {
    if finalizer::is_conflict(&source) {
        return Error::Conflict { key: key.clone() };
    }
    write_error(key, source)
}

/// A failed Provider write: a 409 (the Provider changed since the copy the write was computed from)
/// is a [`Error::Conflict`], retried at once against the newer version.
fn write_error(key: &ProviderKey, source: kube::Error) -> Error {
    match source {
        kube::Error::Api(s) if s.code == 409 => Error::Conflict { key: key.clone() },
        source => Error::ProviderWrite {
            key: key.clone(),
            source,
        },
    }
}

/// Adds the finalizer (the runtime's guarded patch). Provisioning continues in the same reconcile,
/// so the watch echo of this write is marked as our own and does not queue another pass.
async fn add_finalizer(
    api: &Api<Provider>,
    key: &ProviderKey,
    provider: &Provider,
    ctx: &Context,
) -> Result<Provider, Error> {
    let write = ctx.own_write(key);
    let written = finalizer::add(api, names::PROVIDER_FINALIZER, provider).await;
    write.answered(written.as_ref().ok().and_then(ResourceExt::resource_version));
    written.map_err(|source| finalizer_error(key, source))
}

/// Writes the status for `outcome` if it differs from the stored one; returns the written object.
async fn write_status(
    api: &Api<Provider>,
    key: &ProviderKey,
    provider: &Provider,
    outcome: &Outcome,
    revisions: Option<&crate::revision::Revisions>,
    ctx: &Context,
) -> Result<Option<Provider>, Error> {
    let current = provider.status.as_ref();
    let mut desired = status::desired(
        current,
        &key.name,
        provider.meta().generation,
        outcome,
        Timestamp::now(),
    );
    // Without a revision pass (a failure, or one not run) the recorded revisions stand.
    match revisions {
        Some(r) => {
            desired.current_revision = r.current.clone();
            desired.target_revision = r.target.clone();
        }
        None => {
            desired.current_revision = current.and_then(|s| s.current_revision.clone());
            desired.target_revision = current.and_then(|s| s.target_revision.clone());
        }
    }
    if !status::needs_write(current, &desired) {
        return Ok(None);
    }
    let patch = status_patch(provider, &desired);
    let params = PatchParams {
        field_manager: Some(format!("{}/status", names::RECONCILER_FIELD_MANAGER)),
        ..Default::default()
    };
    let write = ctx.own_write(key);
    let written = api.patch_status(&key.name, &params, &Patch::Merge(&patch)).await;
    write.answered(written.as_ref().ok().and_then(ResourceExt::resource_version));
    let written = written.map_err(|source| write_error(key, source))?;
    Ok(Some(written))
}

/// The status write: a JSON merge patch of the whole `desired` status, carrying the resourceVersion
/// of `provider`, the copy it was computed from, so that the API server refuses it (409) once the
/// Provider has changed since.
///
/// Why the precondition: the copy may be stale (a reconcile queued while the previous one ran starts
/// from the store, which may not have the echo of that one's status write yet). Without it, a status
/// equal to what the Provider already holds is a no-op that answers with the Provider as it is now,
/// someone else's newer change included (say a new `spec.secretName`); that resourceVersion was then
/// taken for our own write's, its watch event skipped as our echo (`Context::own_write`), and the
/// change left unreconciled until the resync. With it a stale write is refused ([`Error::Conflict`]:
/// retried at once from the newer copy, and the events held back meanwhile queue the Provider), so a
/// write that answers either made the resourceVersion it names or changed nothing. Written as the
/// finalizer is, a merge patch; a resourceVersion in an apply body would be a precondition as well.
///
/// A merge patch keeps what it does not mention, so fields of the copy's status that `desired` drops
/// are sent as null; `conditions` is a list, which it replaces whole, and `secretRef` is always
/// written complete.
pub fn status_patch(provider: &Provider, desired: &ProviderStatus) -> serde_json::Value {
    let to_map = |status: &ProviderStatus| match serde_json::to_value(status) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let mut status = to_map(desired);
    if let Some(current) = &provider.status {
        for (dropped, _) in to_map(current) {
            status.entry(dropped).or_insert(serde_json::Value::Null);
        }
    }
    json!({
        "metadata": {"resourceVersion": provider.resource_version()},
        "status": status,
    })
}

fn step(reason: &'static str, cluster: Option<&str>) -> impl Fn(String) -> StepError + use<> {
    let cluster = cluster.map(str::to_string);
    move |message| StepError {
        reason,
        message,
        workspace_cluster: cluster.clone(),
    }
}

/// How far one provisioning pass got.
#[derive(Debug)]
enum Provisioning {
    Done(Outcome),
    /// The workspace was created and kcp is readying it: the Provider is parked until it is
    /// ([`super::workspaces`]); nothing to write yet.
    AwaitingWorkspace,
}

async fn provision(provider: &Provider, key: &ProviderKey, ctx: &Context) -> Result<Provisioning, StepError> {
    let name = key.name.as_str();
    let path = names::provider_workspace_path(name);
    let secret_name = provider.kubeconfig_secret_name();
    // Checked before anything is created: writing it would overwrite the registrar's credential.
    if is_reserved_secret(&secret_name) {
        return Err(step(names::REASON_SECRET_ERROR, None)(format!(
            "Secret {}/{secret_name} in {} is the GitOps registrar's; set spec.secretName to another name",
            names::PROVIDER_NAMESPACE,
            names::SYSTEM_PROVIDERS_PATH
        )));
    }

    let workspace_err = step(names::REASON_WORKSPACE_ERROR, None);
    let ws = workspace::ensure(ctx, key, provider.status.as_ref(), ctx.settings.workspace_timeout)
        .await
        .map_err(|e| workspace_err(format!("ensuring provider workspace: {e}")))?;
    let Some(ws) = ws else {
        return Ok(Provisioning::AwaitingWorkspace);
    };
    let cluster = cluster_of(&ws).ok_or_else(|| {
        workspace_err(format!(
            "ensuring provider workspace: {path} is Ready but has no spec.cluster"
        ))
    })?;

    let sa_err = step(names::REASON_SERVICE_ACCOUNT_ERROR, Some(&cluster));
    let kubeconfig_err = step(names::REASON_KUBECONFIG_ERROR, Some(&cluster));
    let in_ws = ctx
        .factory
        .cluster(&cluster)
        .map_err(|e| sa_err(format!("ensuring provider ServiceAccount: {e}")))?;
    // Two chains at once, as neither needs the other: the namespace, the ServiceAccount in it and
    // its token Secret (then the wait for kcp's token controller to fill it), and the bindings,
    // which name their subjects and need nothing to exist. Each step's round trip is a wait in a
    // queue when many Providers arrive at once, so the longest chain sets how long provisioning
    // takes. Failures are still reported in step order: ServiceAccount, bindings, token.
    let account = async {
        ensure_service_account(&in_ws, name)
            .await
            .map_err(|e| sa_err(format!("ensuring provider ServiceAccount in {path}: {e}")))?;
        Ok::<_, StepError>(
            ensure_token(&in_ws, name, ctx.settings.token_timeout)
                .await
                .map_err(|e| kubeconfig_err(format!("minting kubeconfig: {e}"))),
        )
    };
    let grants = async {
        let hub_role = async {
            let Some(user) = &ctx.settings.hub_user else {
                return Ok(());
            };
            let manager = format!("{}/{FIELD_SCOPE}", names::RECONCILER_FIELD_MANAGER);
            crate::identity::apply_hub_provider(&in_ws, &path, user, &manager)
                .await
                .map_err(|e| {
                    sa_err(format!(
                        "granting the hub API's kcp user {user:?} its role in {path}: {e}"
                    ))
                })
        };
        let binding = async {
            ensure_binding(&in_ws, name)
                .await
                .map_err(|e| sa_err(format!("ensuring provider ServiceAccount in {path}: {e}")))
        };
        let (binding, hub_role) = tokio::join!(binding, hub_role);
        binding.and(hub_role)
    };
    let (account, grants) = tokio::join!(account, grants);
    let token = account?;
    grants?;
    let token = token?;
    let params = KubeconfigParams {
        server_base: kubeconfig::server_base(provider.spec.server_url_override.as_deref(), &ctx.settings.hub_url),
        cluster_id: &cluster,
        token: &token,
        ca_pem: ctx.settings.ca_pem.as_deref(),
        insecure_skip_tls_verify: ctx.settings.insecure_provider_kubeconfigs,
    };
    let yaml = kubeconfig::render(&params).map_err(|e| kubeconfig_err(format!("minting kubeconfig: {e}")))?;
    let data = kubeconfig::SecretData::of(yaml.as_bytes(), &params);
    let secret_err = step(names::REASON_SECRET_ERROR, Some(&cluster));
    let secrets: Api<Secret> = Api::namespaced(
        ctx.factory
            .cluster(names::SYSTEM_PROVIDERS_PATH)
            .map_err(|e| secret_err(format!("writing kubeconfig Secret: {e}")))?,
        names::PROVIDER_NAMESPACE,
    );
    secrets
        .patch(
            &secret_name,
            &field_manager(FIELD_SCOPE),
            &Patch::Apply(&kubeconfig::secret(name, names::PROVIDER_NAMESPACE, &secret_name, data)),
        )
        .await
        .map_err(|e| {
            secret_err(format!(
                "writing kubeconfig Secret {}/{secret_name} in {}: {}",
                names::PROVIDER_NAMESPACE,
                names::SYSTEM_PROVIDERS_PATH,
                crate::message::kube_message(&e)
            ))
        })?;
    let previous = previous_secret(provider, &secret_name);
    if let Some(old) = &previous {
        delete_ignoring_absent(&secrets, old).await.map_err(|e| {
            secret_err(format!(
                "removing previous kubeconfig Secret {}/{old} after spec.secretName changed: {}",
                names::PROVIDER_NAMESPACE,
                crate::message::kube_message(&e)
            ))
        })?;
        tracing::info!(%key, old = %old, new = %secret_name, "removed the previous kubeconfig Secret");
    }
    if let Some(mirror) = &ctx.mirror {
        mirror_step::sync(ctx, mirror, key, &secret_name, data, previous.as_deref())
            .await
            .map_err(|e| step(REASON_MIRROR_ERROR, Some(&cluster))(e.to_string()))?;
    }
    Ok(Provisioning::Done(Outcome::Provisioned {
        workspace_cluster: cluster,
        secret_name,
    }))
}

/// The Secret named in status that is no longer the one the spec asks for.
fn previous_secret(provider: &Provider, current: &str) -> Option<String> {
    let old = provider.status.as_ref()?.secret_ref.as_ref()?;
    (old.namespace == names::PROVIDER_NAMESPACE && old.name != current && !old.name.is_empty())
        .then(|| old.name.clone())
}

fn cluster_of(ws: &Workspace) -> Option<String> {
    ws.spec.cluster.clone().filter(|c| !c.is_empty())
}

fn meta(name: &str, namespace: Option<&str>, provider: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(str::to_string),
        labels: Some(names::managed_labels(provider)),
        ..Default::default()
    }
}

/// Namespace and ServiceAccount in the provider workspace.
async fn ensure_service_account(client: &kube::Client, provider: &str) -> Result<(), String> {
    let pp = field_manager(FIELD_SCOPE);
    let ns = Namespace {
        metadata: meta(names::PROVIDER_NAMESPACE, None, provider),
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .patch(names::PROVIDER_NAMESPACE, &pp, &Patch::Apply(&ns))
        .await
        .map_err(|e| {
            format!(
                "namespace {}: {}",
                names::PROVIDER_NAMESPACE,
                crate::message::kube_message(&e)
            )
        })?;
    let sa = ServiceAccount {
        metadata: meta(
            names::PROVIDER_SERVICE_ACCOUNT,
            Some(names::PROVIDER_NAMESPACE),
            provider,
        ),
        ..Default::default()
    };
    Api::<ServiceAccount>::namespaced(client.clone(), names::PROVIDER_NAMESPACE)
        .patch(names::PROVIDER_SERVICE_ACCOUNT, &pp, &Patch::Apply(&sa))
        .await
        .map_err(|e| {
            format!(
                "ServiceAccount {}: {}",
                names::PROVIDER_SERVICE_ACCOUNT,
                crate::message::kube_message(&e)
            )
        })?;
    Ok(())
}

/// The ServiceAccount's ClusterRoleBinding in the provider workspace.
async fn ensure_binding(client: &kube::Client, provider: &str) -> Result<(), String> {
    Api::<ClusterRoleBinding>::all(client.clone())
        .patch(
            names::PROVIDER_SA_BINDING,
            &field_manager(FIELD_SCOPE),
            &Patch::Apply(&cluster_role_binding(provider)),
        )
        .await
        .map_err(|e| {
            format!(
                "ClusterRoleBinding {}: {}",
                names::PROVIDER_SA_BINDING,
                crate::message::kube_message(&e)
            )
        })?;
    Ok(())
}

/// `faros:providers:sa:provider` → `cluster-admin` for `default/provider`; a ClusterRoleBinding in a
/// kcp workspace grants only within that workspace.
pub fn cluster_role_binding(provider: &str) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: meta(names::PROVIDER_SA_BINDING, None, provider),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: names::CLUSTER_ADMIN_ROLE.into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: names::PROVIDER_SERVICE_ACCOUNT.into(),
            namespace: Some(names::PROVIDER_NAMESPACE.into()),
            api_group: None,
        }]),
    }
}

/// The long-lived token Secret (kcp's token controller fills `data.token`).
pub fn token_secret(provider: &str) -> Secret {
    let mut metadata = meta(names::PROVIDER_TOKEN_SECRET, Some(names::PROVIDER_NAMESPACE), provider);
    metadata.annotations = Some(BTreeMap::from([(
        names::SERVICE_ACCOUNT_NAME_ANNOTATION.to_string(),
        names::PROVIDER_SERVICE_ACCOUNT.to_string(),
    )]));
    Secret {
        metadata,
        type_: Some(names::SERVICE_ACCOUNT_TOKEN_SECRET_TYPE.into()),
        ..Default::default()
    }
}

/// The token kcp's token controller put into a ServiceAccount token Secret, once it has.
pub(crate) fn token_of(secret: &Secret) -> Option<String> {
    let token = secret.data.as_ref()?.get("token")?;
    let token = String::from_utf8(token.0.clone()).ok()?;
    (!token.is_empty()).then_some(token)
}

async fn ensure_token(client: &kube::Client, provider: &str, timeout: Duration) -> Result<String, String> {
    let api: Api<Secret> = Api::namespaced(client.clone(), names::PROVIDER_NAMESPACE);
    let applied = api
        .patch(
            names::PROVIDER_TOKEN_SECRET,
            &field_manager(FIELD_SCOPE),
            &Patch::Apply(&token_secret(provider)),
        )
        .await
        .map_err(|e| {
            format!(
                "token Secret {}: {}",
                names::PROVIDER_TOKEN_SECRET,
                crate::message::kube_message(&e)
            )
        })?;
    if let Some(token) = token_of(&applied) {
        return Ok(token);
    }
    // Watched from the version just applied: kcp's token controller fills it moments later.
    let filled = wait_from(api, &applied, |s| s.and_then(token_of).is_some(), timeout)
        .await
        .map_err(|e| {
            format!(
                "waiting for kcp to fill token Secret {}: {e}",
                names::PROVIDER_TOKEN_SECRET
            )
        })?;
    filled
        .as_ref()
        .and_then(token_of)
        .ok_or_else(|| format!("token Secret {} has no token", names::PROVIDER_TOKEN_SECRET))
}

async fn delete_ignoring_absent<K>(api: &Api<K>, name: &str) -> Result<(), kube::Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Tears down workspace, Secret(s) and their mirrors, waits until the workspace is gone, then
/// releases the finalizer. A failure is recorded in the `Deleting` condition and retried; the
/// finalizer stays until everything is confirmed gone.
async fn cleanup(provider: &Provider, key: &ProviderKey, api: &Api<Provider>, ctx: &Context) -> Result<Action, Error> {
    let name = key.name.as_str();
    let valid = names::validate_dns_label(name).is_ok();
    let path = names::provider_workspace_path(name);
    let current_secret = provider.kubeconfig_secret_name();
    let mut secrets_to_delete = vec![current_secret.clone()];
    secrets_to_delete.extend(previous_secret(provider, &current_secret));
    // Never the registrar's: a Provider whose name maps onto it was refused, not provisioned.
    secrets_to_delete.retain(|s| !is_reserved_secret(s));
    let mut message = if valid {
        format!(
            "Deleting workspace {path} and kubeconfig Secret {}",
            secrets_to_delete.join(", ")
        )
    } else {
        format!("Deleting kubeconfig Secret {}", secrets_to_delete.join(", "))
    };
    if let Some(mirror) = &ctx.mirror {
        message.push_str(&format!(
            " and its mirror in namespace {} of the hosting cluster",
            mirror.namespace()
        ));
    }
    let mut current = provider.clone();
    // After a failed attempt the condition says why; keep that visible until the teardown succeeds
    // (the Provider is gone then) instead of flipping the message on every retry.
    let already_deleting = provider
        .status
        .as_ref()
        .and_then(|s| conditions::get(&s.conditions, names::CONDITION_READY))
        .is_some_and(|c| c.reason == names::REASON_DELETING);
    if !already_deleting {
        let outcome = Outcome::Deleting {
            message: message.clone(),
        };
        match write_status(api, key, provider, &outcome, None, ctx).await {
            Ok(Some(written)) => current = written,
            Ok(None) => {}
            Err(error) => tracing::warn!(%key, %error, "could not record the teardown in status"),
        }
    }

    if let Err(error) = teardown(key, valid, &secrets_to_delete, ctx).await {
        let outcome = Outcome::Deleting {
            message: format!("{message}; failed, retrying: {error}"),
        };
        if let Err(status_error) = write_status(api, key, &current, &outcome, None, ctx).await {
            tracing::warn!(%key, error = %status_error, "could not record the teardown failure in status");
        }
        return Err(error);
    }

    // The runtime's guarded removal; a Provider gone already (someone else removed the last
    // finalizer) is no failure.
    let write = ctx.own_write(key);
    let removed = finalizer::remove(api, names::PROVIDER_FINALIZER, &current).await;
    write.answered(
        removed
            .as_ref()
            .ok()
            .and_then(Option::as_ref)
            .and_then(ResourceExt::resource_version),
    );
    removed.map_err(|source| finalizer_error(key, source))?;
    ctx.forget(key);
    tracing::info!(%key, "provider torn down; finalizer released");
    Ok(Action::AwaitChange)
}

/// Deletes the workspace (for a valid name), the kubeconfig Secrets in kcp and their mirrors, and
/// waits until the workspace is gone.
async fn teardown(key: &ProviderKey, valid: bool, secrets_to_delete: &[String], ctx: &Context) -> Result<(), Error> {
    let name = key.name.as_str();
    let path = names::provider_workspace_path(name);
    let cleanup_err = |message: String| Error::Cleanup {
        key: key.clone(),
        message,
    };
    let workspaces: Api<Workspace> = Api::all(ctx.factory.cluster(names::PROVIDERS_PATH)?);
    // The workspace as the delete left it: still there (finalizers) and to be waited gone, or gone.
    let deleting = match valid {
        false => None,
        true => match workspaces.delete(name, &DeleteParams::default()).await {
            Ok(either) => either.left(),
            Err(kube::Error::Api(s)) if s.code == 404 => None,
            Err(e) => {
                return Err(cleanup_err(format!(
                    "deleting workspace {path}: {}",
                    crate::message::kube_message(&e)
                )));
            }
        },
    };
    let secrets: Api<Secret> = Api::namespaced(
        ctx.factory.cluster(names::SYSTEM_PROVIDERS_PATH)?,
        names::PROVIDER_NAMESPACE,
    );
    for secret in secrets_to_delete {
        delete_ignoring_absent(&secrets, secret).await.map_err(|e| {
            cleanup_err(format!(
                "deleting kubeconfig Secret {}/{secret}: {}",
                names::PROVIDER_NAMESPACE,
                crate::message::kube_message(&e)
            ))
        })?;
    }
    if let Some(mirror) = &ctx.mirror {
        for secret in secrets_to_delete {
            mirror_step::remove(ctx, mirror, key, secret)
                .await
                .map_err(|source| Error::Mirror {
                    key: key.clone(),
                    source,
                })?;
        }
    }
    if let Some(ws) = deleting {
        wait_from(workspaces, &ws, |ws| ws.is_none(), ctx.settings.workspace_timeout)
            .await
            .map_err(|e| cleanup_err(format!("waiting for workspace {path} to be deleted: {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use faros_core::provider::{ProviderSpec, ProviderStatus, SecretKeyRef};
    use k8s_openapi::ByteString;
    use pretty_assertions::assert_eq;

    #[test]
    fn bodies() {
        assert_eq!(
            serde_json::to_value(cluster_role_binding("q")).unwrap(),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "faros:providers:sa:provider",
                    "labels": {"app.kubernetes.io/managed-by": "faros", "providers.faros.sh/provider": "q"}},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "ServiceAccount", "name": "provider", "namespace": "default"}]})
        );
        assert_eq!(
            serde_json::to_value(token_secret("q")).unwrap(),
            json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "provider-token", "namespace": "default",
                    "labels": {"app.kubernetes.io/managed-by": "faros", "providers.faros.sh/provider": "q"},
                    "annotations": {"kubernetes.io/service-account.name": "provider"}},
                "type": "kubernetes.io/service-account-token"})
        );
    }

    #[test]
    fn status_patch_table() {
        let copy = |status: Option<ProviderStatus>| {
            let mut p = Provider::new("q", ProviderSpec::default());
            p.metadata.resource_version = Some("311".into());
            p.status = status;
            p
        };
        let secret_ref = SecretKeyRef {
            namespace: "default".into(),
            name: "q-kubeconfig".into(),
            key: "kubeconfig".into(),
        };
        let provisioned = ProviderStatus {
            workspace_path: Some("root:faros:providers:q".into()),
            secret_ref: Some(secret_ref.clone()),
            observed_generation: Some(2),
            ..Default::default()
        };
        let cases = [
            (
                "first status: preconditioned on the copy's version",
                copy(None),
                ProviderStatus {
                    observed_generation: Some(1),
                    ..Default::default()
                },
                json!({"metadata": {"resourceVersion": "311"}, "status": {"observedGeneration": 1}}),
            ),
            (
                "fields the desired status drops are nulled (a merge patch would keep them)",
                copy(Some(provisioned.clone())),
                ProviderStatus {
                    observed_generation: Some(3),
                    ..Default::default()
                },
                json!({"metadata": {"resourceVersion": "311"}, "status": {
                    "observedGeneration": 3, "workspacePath": null, "secretRef": null}}),
            ),
            (
                "kept fields are written whole",
                copy(Some(provisioned.clone())),
                provisioned.clone(),
                json!({"metadata": {"resourceVersion": "311"}, "status": {
                    "workspacePath": "root:faros:providers:q", "observedGeneration": 2,
                    "secretRef": {"namespace": "default", "name": "q-kubeconfig", "key": "kubeconfig"}}}),
            ),
        ];
        for (case, provider, desired, want) in cases {
            assert_eq!(status_patch(&provider, &desired), want, "{case}");
        }
    }

    /// A write from a stale copy is refused with 409 ([`status_patch`]): retried at once from the
    /// newer copy, not after the backoff, and expected (no warning while it heals).
    #[test]
    fn write_error_table() {
        let key = ProviderKey {
            cluster: "c".into(),
            namespace: None,
            name: "q".into(),
        };
        let api = |code: u16| kube::Error::Api(kube::core::Status::failure("x", "y").with_code(code).boxed());
        let retry = Retry {
            failures: 1,
            delay: Duration::from_millis(500),
        };
        for (case, code, want_reason, want_decision) in [
            (
                "409: changed since the copy",
                409,
                "Conflict",
                Decision::expected(Action::RequeueAfter(Duration::from_millis(50))),
            ),
            (
                "403: backoff",
                403,
                "ProviderWriteError",
                Decision::unexpected(Action::RequeueAfter(Duration::from_millis(500))),
            ),
            (
                "500: backoff",
                500,
                "ProviderWriteError",
                Decision::unexpected(Action::RequeueAfter(Duration::from_millis(500))),
            ),
        ] {
            let error = write_error(&key, api(code));
            assert_eq!(error.reason(), want_reason, "{case}");
            assert_eq!(error_policy(&error, retry), want_decision, "{case}");
        }
    }

    /// Which failures warn and when they are retried, by consecutive failures: a conflict is quiet
    /// and retried at once until it keeps repeating (it should heal on the next attempt), then it
    /// warns and backs off; any other failure always warns and backs off.
    #[test]
    fn failure_warns_table() {
        let key = ProviderKey {
            cluster: "c".into(),
            namespace: None,
            name: "q".into(),
        };
        let conflict = || Error::Conflict { key: key.clone() };
        let step = || {
            Error::Step(StepError {
                reason: "WorkspaceError",
                message: "forbidden".into(),
                workspace_cluster: None,
            })
        };
        let cleanup = || Error::Cleanup {
            key: key.clone(),
            message: "x".into(),
        };
        // The backoff's delay is 500 ms in every row: a row retried after 50 ms was retried at once.
        for (case, error, failures, want_warns, want_after_ms) in [
            ("a conflict heals on the retry", conflict(), 1, false, 50),
            ("a conflict raced by another write", conflict(), 2, false, 50),
            (
                "conflicts up to the threshold",
                conflict(),
                faros_runtime::QUIET_FAILURES,
                false,
                50,
            ),
            (
                "a conflict that keeps repeating takes the backoff",
                conflict(),
                faros_runtime::QUIET_FAILURES + 1,
                true,
                500,
            ),
            ("a step error, first", step(), 1, true, 500),
            ("a teardown error, first", cleanup(), 1, true, 500),
        ] {
            let retry = Retry {
                failures,
                delay: Duration::from_millis(500),
            };
            let decision = error_policy(&error, retry);
            assert_eq!(decision.warns(failures), want_warns, "{case}");
            assert_eq!(
                decision.action,
                Action::RequeueAfter(Duration::from_millis(want_after_ms)),
                "{case}"
            );
        }
    }

    #[test]
    fn previous_secret_table() {
        let with_ref = |ns: &str, name: &str| {
            let mut p = Provider::new("q", ProviderSpec::default());
            p.status = Some(ProviderStatus {
                secret_ref: Some(SecretKeyRef {
                    namespace: ns.into(),
                    name: name.into(),
                    key: "kubeconfig".into(),
                }),
                ..Default::default()
            });
            p
        };
        assert_eq!(
            previous_secret(&Provider::new("q", ProviderSpec::default()), "q-kubeconfig"),
            None
        );
        assert_eq!(
            previous_secret(&with_ref("default", "q-kubeconfig"), "q-kubeconfig"),
            None
        );
        assert_eq!(
            previous_secret(&with_ref("default", "old"), "q-kubeconfig"),
            Some("old".into())
        );
        assert_eq!(previous_secret(&with_ref("elsewhere", "old"), "q-kubeconfig"), None);
        assert_eq!(previous_secret(&with_ref("default", ""), "q-kubeconfig"), None);
    }

    #[test]
    fn token_extraction() {
        let mut s = Secret::default();
        assert_eq!(token_of(&s), None);
        s.data = Some(BTreeMap::from([("token".to_string(), ByteString(Vec::new()))]));
        assert_eq!(token_of(&s), None);
        s.data = Some(BTreeMap::from([("token".to_string(), ByteString(b"abc".to_vec()))]));
        assert_eq!(token_of(&s).as_deref(), Some("abc"));
    }
}
