//! The opt-in kubeconfig mirror: copies each Provider's kubeconfig Secret from kcp into one
//! namespace of the hosting Kubernetes cluster, where the provider's pod mounts it.
//!
//! The hosting cluster is a plain Kubernetes API, reached with its own credentials (in-cluster by
//! default, never the kcp ones). The mirror only reads and writes Secrets in its one namespace, so it
//! needs nothing beyond a namespaced Role on `secrets` (get, list, watch, create, update, patch,
//! delete). It must not overwrite or delete a Secret it did not write for the same Provider (see
//! [`plan`]), and it must never log Secret contents: errors name the Secret, not its data.
//!
//! When to sync is the Provider controller's business; this module only does one sync or one removal.

pub mod plan;

use faros_core::names;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{DeleteParams, PartialObjectMeta, Patch, PatchParams};

use crate::kubeconfig;
use plan::{Ownership, Plan, Want};

/// `Ready` reason of a Provider whose kubeconfig could not be mirrored into the hosting cluster.
pub const REASON_MIRROR_ERROR: &str = "MirrorError";

/// Where the mirror writes: one namespace of the hosting cluster.
#[derive(Clone)]
pub struct MirrorConfig {
    /// Namespace in the hosting cluster (must exist; the mirror does not create it).
    pub namespace: String,
    /// The hosting cluster's API. Used as given: no `/clusters/...` handling, this is not kcp.
    pub kube: kube::Config,
}

impl std::fmt::Debug for MirrorConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The kube config holds credentials; show only where it points.
        f.debug_struct("MirrorConfig")
            .field("namespace", &self.namespace)
            .field("server", &self.kube.cluster_url.to_string())
            .finish()
    }
}

impl MirrorConfig {
    /// The hosting cluster from the pod's service account (`kube::Config::incluster`). Deliberately
    /// not `infer()`: a stray `KUBECONFIG` must never redirect the mirror to another cluster.
    pub fn in_cluster(namespace: impl Into<String>) -> Result<Self, MirrorError> {
        let kube = kube::Config::incluster().map_err(|e| MirrorError::InCluster(Box::new(e)))?;
        Ok(Self {
            namespace: namespace.into(),
            kube,
        })
    }

    /// The namespace must be a namespace name (DNS-1123 label).
    pub fn validate(&self) -> Result<(), MirrorError> {
        names::validate_dns_label(&self.namespace).map_err(|e| MirrorError::InvalidNamespace {
            namespace: self.namespace.clone(),
            reason: e.to_string(),
        })
    }
}

/// Mirror failures. Messages name the Secret and namespace, never its contents.
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    #[error(
        "no in-cluster configuration for the hosting cluster (set --mirror-kubeconfig / FAROS_MIRROR_KUBECONFIG when not running in a pod): {0}"
    )]
    InCluster(#[source] Box<kube::config::InClusterError>),
    #[error("--mirror-namespace (FAROS_MIRROR_NAMESPACE) {namespace:?} is not a namespace name: {reason}")]
    InvalidNamespace { namespace: String, reason: String },
    #[error("building the hosting cluster client: {0}")]
    Client(#[source] Box<kube::Error>),
    #[error("{op} mirrored kubeconfig Secret {namespace}/{name} in the hosting cluster: {}", crate::message::kube_message(.source))]
    Api {
        op: &'static str,
        namespace: String,
        name: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error("mirrored kubeconfig Secret {namespace}/{name} in the hosting cluster is still being deleted (finalizers)")]
    StillDeleting { namespace: String, name: String },
    #[error(
        "mirrored kubeconfig Secret {namespace}/{name} in the hosting cluster exists and {}; delete or rename it, or set spec.secretName",
        foreign_owner(.owner)
    )]
    Foreign {
        namespace: String,
        name: String,
        owner: Ownership,
    },
}

fn foreign_owner(owner: &Ownership) -> String {
    match owner {
        Ownership::OtherProvider(p) => format!("belongs to Provider {p:?}"),
        Ownership::Unmanaged | Ownership::Ours => "was not written by faros for this Provider".into(),
    }
}

/// What [`Mirror::ensure`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Synced {
    /// Already identical; nothing written.
    InSync,
    /// Created or restored; the resourceVersion of the write (its watch echo needs no work).
    Written { resource_version: Option<String> },
}

/// What [`Mirror::remove`] found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Removed {
    /// Confirmed absent.
    Absent,
    /// Deleted now.
    Deleted,
    /// Deletion accepted but the Secret is still there (finalizers): not gone yet.
    Pending,
    /// A Secret of that name is someone else's and was left alone.
    LeftForeign(Ownership),
}

/// A client for Secrets in the mirror namespace of the hosting cluster.
#[derive(Clone)]
pub struct Mirror {
    namespace: String,
    secrets: Api<Secret>,
}

impl std::fmt::Debug for Mirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mirror").field("namespace", &self.namespace).finish()
    }
}

/// The mirror's server-side apply field manager; also how [`plan::ownership`] recognises its writes.
pub fn field_manager() -> String {
    format!("{}/mirror", names::RECONCILER_FIELD_MANAGER)
}

impl Mirror {
    /// Builds the client. Needs a Tokio runtime (kube clients spawn their request buffer).
    pub fn new(config: &MirrorConfig) -> Result<Self, MirrorError> {
        config.validate()?;
        let client = kube::Client::try_from(config.kube.clone()).map_err(|e| MirrorError::Client(Box::new(e)))?;
        Ok(Self {
            namespace: config.namespace.clone(),
            secrets: Api::namespaced(client, &config.namespace),
        })
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The Secrets of the mirror namespace, for the GitOps registrar's copy ([`crate::registrar`]),
    /// which follows ownership rules of its own.
    pub(crate) fn secrets(&self) -> &Api<Secret> {
        &self.secrets
    }

    /// The Secrets of the mirror namespace, metadata only (for the controller's watch: it never
    /// needs, and so never receives, their data).
    pub fn secret_metadata(&self) -> Api<PartialObjectMeta<Secret>> {
        Api::namespaced(self.secrets.clone().into_client(), &self.namespace)
    }

    fn api_error(&self, op: &'static str, name: &str) -> impl FnOnce(kube::Error) -> MirrorError + use<> {
        let (namespace, name) = (self.namespace.clone(), name.to_string());
        move |source| MirrorError::Api {
            op,
            namespace,
            name,
            source: Box::new(source),
        }
    }

    /// Makes Secret `name` hold exactly `data` for `provider`, unless someone else's Secret holds
    /// the name.
    pub async fn ensure(
        &self,
        provider: &str,
        name: &str,
        data: kubeconfig::SecretData<'_>,
    ) -> Result<Synced, MirrorError> {
        let manager = field_manager();
        let observed = self
            .secrets
            .get_opt(name)
            .await
            .map_err(self.api_error("reading", name))?;
        match plan::plan(Want::Present { provider, data }, observed.as_ref(), &manager) {
            Plan::Nothing | Plan::Delete => Ok(Synced::InSync),
            Plan::Foreign(owner) => Err(MirrorError::Foreign {
                namespace: self.namespace.clone(),
                name: name.to_string(),
                owner,
            }),
            Plan::Apply => {
                let body = kubeconfig::secret(provider, &self.namespace, name, data);
                let written = self
                    .secrets
                    .patch(name, &PatchParams::apply(&manager).force(), &Patch::Apply(&body))
                    .await
                    .map_err(self.api_error("writing", name))?;
                Ok(Synced::Written {
                    resource_version: written.metadata.resource_version,
                })
            }
        }
    }

    /// Removes `provider`'s Secret `name` if it is there; someone else's is left alone.
    pub async fn remove(&self, provider: &str, name: &str) -> Result<Removed, MirrorError> {
        let observed = self
            .secrets
            .get_opt(name)
            .await
            .map_err(self.api_error("reading", name))?;
        match plan::plan(Want::Absent { provider }, observed.as_ref(), &field_manager()) {
            Plan::Nothing | Plan::Apply => Ok(Removed::Absent),
            Plan::Foreign(owner) => Ok(Removed::LeftForeign(owner)),
            Plan::Delete => {
                // Preconditioned on the uid we judged, so a Secret someone recreated in between
                // (no longer ours) is not deleted.
                let uid = observed.and_then(|s| s.metadata.uid);
                let params = DeleteParams {
                    preconditions: uid.map(|uid| kube::api::Preconditions {
                        uid: Some(uid),
                        resource_version: None,
                    }),
                    ..Default::default()
                };
                match self.secrets.delete(name, &params).await {
                    // The API returns the object, marked for deletion, when deletion has to wait
                    // for finalizers; a Status (or the deleted object) when it is gone.
                    Ok(outcome) => {
                        let waiting = outcome.left().is_some_and(|s| {
                            s.metadata.deletion_timestamp.is_some()
                                && s.metadata.finalizers.as_ref().is_some_and(|f| !f.is_empty())
                        });
                        Ok(if waiting { Removed::Pending } else { Removed::Deleted })
                    }
                    Err(kube::Error::Api(s)) if s.code == 404 => Ok(Removed::Absent),
                    Err(e) => Err(self.api_error("deleting", name)(e)),
                }
            }
        }
    }
}
