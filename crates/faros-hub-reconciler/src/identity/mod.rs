//! The reconciler's own kcp identity: a one-time grant, made with an admin identity, after which
//! the reconciler runs as a plain kcp user instead of kcp's root admin (docs/install.md#kcp-identities).
//!
//! [`grant`] writes, idempotently (server-side apply, fixed bodies):
//! - in `root`: ClusterRole and ClusterRoleBinding `faros:hub-reconciler` ([`objects::root_cluster_role`]):
//!   enter `root`, read and create workspaces, use the `universal` type;
//! - in every faros workspace that already exists (the structural tree and the provider workspaces):
//!   ClusterRoleBinding `faros:hub-reconciler` to `cluster-admin`, which kcp gives a workspace's
//!   creator; the workspaces the reconciler creates from then on are its own by kcp's rule.
//!
//! Run it again after restoring kcp from a backup made before the identity existed; nothing else
//! needs it twice. It waits for an existing workspace to be Ready (kcp serves no content before).

pub mod objects;

use std::time::Duration;

use faros_core::client::{ClientError, ClientFactory};
use faros_core::kcp::Workspace;
use faros_core::names;
use faros_core::wait::{WaitError, wait_for};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use objects::{DEFAULT_USER, ROLE};

/// Why the grant failed; messages name the workspace and object.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("building a client for {cluster}: {source}")]
    Client {
        cluster: String,
        #[source]
        source: ClientError,
    },
    #[error("{step}: {}", crate::kube_message(.source))]
    Kube {
        step: String,
        #[source]
        source: kube::Error,
    },
    #[error("waiting for workspace {path} to be Ready before granting in it: {source}")]
    NotReady {
        path: String,
        #[source]
        source: Box<WaitError>,
    },
    #[error("the user name is empty")]
    EmptyUser,
}

/// What one grant wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Granted {
    /// Existing faros workspaces where `user` is now `cluster-admin`, parents first.
    pub owned: Vec<String>,
}

/// Grants `user` what the reconciler uses (module docs), with `admin`'s credentials.
pub async fn grant(admin: &ClientFactory, user: &str, ready_timeout: Duration) -> Result<Granted, IdentityError> {
    if user.trim().is_empty() {
        return Err(IdentityError::EmptyUser);
    }
    let root = client(admin, names::ROOT_PATH)?;
    apply(
        &Api::<ClusterRole>::all(root.clone()),
        &objects::root_cluster_role(),
        names::ROOT_PATH,
    )
    .await?;
    apply(
        &Api::<ClusterRoleBinding>::all(root),
        &objects::root_binding(user),
        names::ROOT_PATH,
    )
    .await?;

    let mut owned = Vec::new();
    for path in objects::owned_tree() {
        if own_if_present(admin, &path, user, ready_timeout).await? {
            owned.push(path);
        }
    }
    if owned.iter().any(|p| p == names::PROVIDERS_PATH) {
        let list = Api::<Workspace>::all(client(admin, names::PROVIDERS_PATH)?)
            .list(&ListParams::default())
            .await
            .map_err(|source| IdentityError::Kube {
                step: format!("listing the workspaces of {}", names::PROVIDERS_PATH),
                source,
            })?;
        for ws in list.items {
            let Some(name) = ws.metadata.name else { continue };
            let path = format!("{}:{name}", names::PROVIDERS_PATH);
            if own_if_present(admin, &path, user, ready_timeout).await? {
                owned.push(path);
            }
        }
    }
    Ok(Granted { owned })
}

/// Binds `cluster-admin` to `user` in workspace `path` once it is Ready; `false` if it does not exist.
async fn own_if_present(
    admin: &ClientFactory,
    path: &str,
    user: &str,
    ready_timeout: Duration,
) -> Result<bool, IdentityError> {
    let (parent, name) = path.rsplit_once(':').unwrap_or((names::ROOT_PATH, path));
    let workspaces: Api<Workspace> = Api::all(client(admin, parent)?);
    let found = workspaces.get_opt(name).await.map_err(|source| IdentityError::Kube {
        step: format!("reading workspace {path}"),
        source,
    })?;
    match found {
        None => return Ok(false),
        Some(ws) if ws.is_ready() => {}
        Some(_) => {
            let ready = wait_for(workspaces, name, |w| w.is_none_or(Workspace::is_ready), ready_timeout)
                .await
                .map_err(|source| IdentityError::NotReady {
                    path: path.into(),
                    source: Box::new(source),
                })?;
            if ready.is_none() {
                return Ok(false);
            }
        }
    }
    let bindings = Api::<ClusterRoleBinding>::all(client(admin, path)?);
    apply(&bindings, &objects::owner_binding(user), path).await?;
    Ok(true)
}

fn client(factory: &ClientFactory, cluster: &str) -> Result<kube::Client, IdentityError> {
    factory.cluster(cluster).map_err(|source| IdentityError::Client {
        cluster: cluster.into(),
        source,
    })
}

async fn apply<K>(api: &Api<K>, obj: &K, cluster: &str) -> Result<K, IdentityError>
where
    K: kube::Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let name = obj.meta().name.clone().unwrap_or_default();
    api.patch(
        &name,
        &PatchParams::apply(objects::FIELD_MANAGER).force(),
        &Patch::Apply(obj),
    )
    .await
    .map_err(|source| IdentityError::Kube {
        step: format!("applying {} {name} in {cluster}", K::kind(&())),
        source,
    })
}
