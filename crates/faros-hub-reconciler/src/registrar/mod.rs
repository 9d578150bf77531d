//! The GitOps registrar: a credential that can manage `Provider`s in `root:faros:system:providers`
//! and nothing else, for Flux, Argo CD or `kubectl apply` in a pipeline (docs/install.md).
//!
//! While leading, the reconciler keeps in `system:providers` ServiceAccount `default/faros-registrar`,
//! ClusterRole and ClusterRoleBinding `faros:registrar` ([`objects::cluster_role`]), the token Secret
//! `default/faros-registrar-token`, and Secret `default/faros-registrar-kubeconfig` with a kubeconfig
//! whose server is `<hub URL>/clusters/<logical cluster of system:providers>` (the hub's kcp
//! pass-through, as provider kubeconfigs), and, with the mirror on, the same Secret in the mirror
//! namespace of the hosting cluster. It is re-applied every resync period, which repairs a deleted
//! Secret and follows a new hub URL or CA; a rotated token (token Secret deleted) is picked up too.
//!
//! Why leader-only and not part of the bootstrap: the mirror is the leader's, and one writer keeps
//! the hosting-cluster copy from flapping between replicas with different settings during a rollout.

pub mod objects;

use std::time::Duration;

use faros_core::client::{ClientError, ClientFactory};
use faros_core::kcp::Workspace;
use faros_core::names;
use faros_core::wait::{WaitError, wait_for};
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::controller::context::Settings;
use crate::controller::provider::token_of;
use crate::kubeconfig::{self, KubeconfigError, KubeconfigParams, SecretData};
use crate::mirror::Mirror;
use crate::mirror::plan::{Ownership, Plan};

pub use objects::{KUBECONFIG_SECRET, NAMESPACE, ROLE, SERVICE_ACCOUNT, TOKEN_SECRET};

/// Why one pass failed; messages name the object, never a token.
#[derive(Debug, thiserror::Error)]
pub enum RegistrarError {
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
    #[error("workspace {path} has no logical cluster (spec.cluster) yet")]
    NoCluster { path: String },
    #[error("waiting for kcp to fill token Secret {namespace}/{name}: {source}", namespace = NAMESPACE, name = TOKEN_SECRET)]
    Token {
        #[source]
        source: Box<WaitError>,
    },
    #[error("token Secret {namespace}/{name} disappeared while waiting for its token", namespace = NAMESPACE, name = TOKEN_SECRET)]
    TokenGone,
    #[error("rendering the registrar kubeconfig: {0}")]
    Kubeconfig(#[from] KubeconfigError),
    #[error("{op} Secret {namespace}/{name} in the hosting cluster: {}", crate::message::kube_message(.source), name = KUBECONFIG_SECRET)]
    Mirror {
        op: &'static str,
        namespace: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "Secret {namespace}/{name} in the hosting cluster exists and {}; delete or rename it so the registrar kubeconfig can be mirrored",
        match .owner { Ownership::OtherProvider(p) => format!("belongs to Provider {p:?}"), _ => "was not written by faros".to_string() },
        name = KUBECONFIG_SECRET
    )]
    ForeignMirror { namespace: String, owner: Ownership },
}

/// Keeps the registrar in place until `term` ends: one pass now, then every `settings.resync`;
/// a failed pass is logged and retried with backoff (0.5 s doubling to 60 s).
pub async fn run(factory: ClientFactory, settings: Settings, mirror: Option<Mirror>, term: CancellationToken) {
    let mut retry = Duration::from_millis(500);
    let mut published = false;
    loop {
        let next = tokio::select! {
            _ = term.cancelled() => return,
            r = ensure(&factory, &settings, mirror.as_ref()) => match r {
                Ok(()) => {
                    if !published {
                        tracing::info!(
                            secret = %format!("{NAMESPACE}/{KUBECONFIG_SECRET}"),
                            workspace = names::SYSTEM_PROVIDERS_PATH,
                            mirror = mirror.as_ref().map(Mirror::namespace),
                            "published the GitOps registrar kubeconfig"
                        );
                        published = true;
                    }
                    retry = Duration::from_millis(500);
                    settings.resync
                }
                Err(error) => {
                    tracing::warn!(%error, retry_in = ?retry, "GitOps registrar: retrying");
                    let wait = retry;
                    retry = (retry * 2).min(Duration::from_secs(60));
                    wait
                }
            },
        };
        tokio::select! {
            _ = term.cancelled() => return,
            _ = tokio::time::sleep(next) => {}
        }
    }
}

/// One pass: identity, RBAC, token, kubeconfig Secret in kcp, then its mirror.
pub async fn ensure(
    factory: &ClientFactory,
    settings: &Settings,
    mirror: Option<&Mirror>,
) -> Result<(), RegistrarError> {
    let cluster = logical_cluster(factory).await?;
    let client = client(factory, names::SYSTEM_PROVIDERS_PATH)?;
    let ns = NAMESPACE;
    apply(
        &Api::<ServiceAccount>::namespaced(client.clone(), ns),
        &objects::service_account(),
        "ServiceAccount",
    )
    .await?;
    apply(
        &Api::<ClusterRole>::all(client.clone()),
        &objects::cluster_role(),
        "ClusterRole",
    )
    .await?;
    apply(
        &Api::<ClusterRoleBinding>::all(client.clone()),
        &objects::cluster_role_binding(),
        "ClusterRoleBinding",
    )
    .await?;
    let tokens: Api<Secret> = Api::namespaced(client.clone(), ns);
    let applied = apply(&tokens, &objects::token_secret(), "token Secret").await?;
    let token = match token_of(&applied) {
        Some(token) => token,
        None => wait_token(tokens.clone(), settings.token_timeout).await?,
    };
    let params = KubeconfigParams {
        server_base: &settings.hub_url,
        cluster_id: &cluster,
        token: &token,
        ca_pem: settings.ca_pem.as_deref(),
        insecure_skip_tls_verify: settings.insecure_provider_kubeconfigs,
    };
    let yaml = kubeconfig::render(&params)?;
    let data = SecretData::of(yaml.as_bytes(), &params);
    apply(&tokens, &objects::kubeconfig_secret(ns, data), "kubeconfig Secret").await?;
    if let Some(mirror) = mirror {
        sync_mirror(mirror, data).await?;
    }
    Ok(())
}

/// Waits until kcp's token controller has filled the token Secret.
async fn wait_token(tokens: Api<Secret>, timeout: Duration) -> Result<String, RegistrarError> {
    let filled = wait_for(tokens, TOKEN_SECRET, |s| s.and_then(token_of).is_some(), timeout)
        .await
        .map_err(|source| RegistrarError::Token {
            source: Box::new(source),
        })?;
    filled.as_ref().and_then(token_of).ok_or(RegistrarError::TokenGone)
}

/// The logical cluster name of `root:faros:system:providers` (its Workspace's `spec.cluster`):
/// the kubeconfig addresses it by name, never by path, like provider kubeconfigs.
async fn logical_cluster(factory: &ClientFactory) -> Result<String, RegistrarError> {
    let (parent, name) = names::SYSTEM_PROVIDERS_PATH
        .rsplit_once(':')
        .unwrap_or((names::ROOT_PATH, names::SYSTEM_PROVIDERS_PATH));
    let workspaces: Api<Workspace> = Api::all(client(factory, parent)?);
    let ws = workspaces.get(name).await.map_err(|source| RegistrarError::Kube {
        step: format!("reading workspace {}", names::SYSTEM_PROVIDERS_PATH),
        source,
    })?;
    ws.spec
        .cluster
        .filter(|c| !c.is_empty())
        .ok_or_else(|| RegistrarError::NoCluster {
            path: names::SYSTEM_PROVIDERS_PATH.into(),
        })
}

async fn sync_mirror(mirror: &Mirror, data: SecretData<'_>) -> Result<(), RegistrarError> {
    let namespace = mirror.namespace().to_string();
    let api_error = |op: &'static str| {
        let namespace = namespace.clone();
        move |source| RegistrarError::Mirror { op, namespace, source }
    };
    let observed = mirror
        .secrets()
        .get_opt(KUBECONFIG_SECRET)
        .await
        .map_err(api_error("reading"))?;
    match objects::mirror_plan(observed.as_ref(), data) {
        Plan::Nothing | Plan::Delete => Ok(()),
        Plan::Foreign(owner) => Err(RegistrarError::ForeignMirror { namespace, owner }),
        Plan::Apply => {
            let body = objects::kubeconfig_secret(&namespace, data);
            mirror
                .secrets()
                .patch(
                    KUBECONFIG_SECRET,
                    &PatchParams::apply(&objects::field_manager()).force(),
                    &Patch::Apply(&body),
                )
                .await
                .map_err(api_error("writing"))?;
            tracing::info!(%namespace, secret = KUBECONFIG_SECRET, "mirrored the GitOps registrar kubeconfig into the hosting cluster");
            Ok(())
        }
    }
}

fn client(factory: &ClientFactory, cluster: &str) -> Result<kube::Client, RegistrarError> {
    factory.cluster(cluster).map_err(|source| RegistrarError::Client {
        cluster: cluster.into(),
        source,
    })
}

/// Server-side applies `obj` (field manager `faros-hub-reconciler/registrar`, forced) in
/// `system:providers`.
async fn apply<K>(api: &Api<K>, obj: &K, kind: &str) -> Result<K, RegistrarError>
where
    K: kube::Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let name = obj.meta().name.clone().unwrap_or_default();
    api.patch(
        &name,
        &PatchParams::apply(&objects::field_manager()).force(),
        &Patch::Apply(obj),
    )
    .await
    .map_err(|source| RegistrarError::Kube {
        step: format!("applying {kind} {name} in {}", names::SYSTEM_PROVIDERS_PATH),
        source,
    })
}
