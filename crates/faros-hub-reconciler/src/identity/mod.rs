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
//!
//! [`grant_hub`] does the same for the hub API's own kcp user ([`hub`]): in `root` token reviews
//! only; in the faros workspaces that exist, the hub's roles ([`apply_hub_tree`],
//! [`apply_hub_provider`], which the reconciler also writes itself when it bootstraps the tree
//! and provisions a provider, given [`crate::Config::hub_user`]); and `cluster-admin` in
//! organizations and team workspaces that exist (made before the hub had its own identity).

pub mod hub;
pub mod objects;

use std::collections::HashMap;
use std::time::Duration;

use faros_core::client::{ClientError, ClientFactory};
use faros_core::kcp::Workspace;
use faros_core::names;
use faros_core::wait::{WaitError, wait_for};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
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
    #[error("{step}: {}", crate::message::kube_message(.source))]
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
    grant_in_root(admin, user, &objects::root_cluster_role(), &objects::root_binding(user)).await?;
    let mut owned = Vec::new();
    for path in present_tree(admin, objects::owned_tree(), ready_timeout).await? {
        own(admin, &path, user).await?;
        owned.push(path);
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

/// The workspaces of `paths` that exist, once Ready. Each one's ancestors are asked about first,
/// and nothing under a missing one: through kcp's front-proxy a path that does not resolve is
/// refused (403), not reported missing.
async fn present_tree(
    admin: &ClientFactory,
    paths: impl IntoIterator<Item = String>,
    ready_timeout: Duration,
) -> Result<Vec<String>, IdentityError> {
    let mut known: HashMap<String, bool> = HashMap::new();
    let mut found = Vec::new();
    for path in paths {
        let mut present = true;
        for ancestor in ancestry(&path) {
            let exists = match known.get(&ancestor) {
                Some(exists) => *exists,
                None => {
                    let exists = ready_if_present(admin, &ancestor, ready_timeout).await?;
                    known.insert(ancestor, exists);
                    exists
                }
            };
            if !exists {
                present = false;
                break;
            }
        }
        if present {
            found.push(path);
        }
    }
    Ok(found)
}

/// The workspaces from `root`'s child down to `path` itself: `root:a:b` → `root:a`, `root:a:b`.
fn ancestry(path: &str) -> Vec<String> {
    path.match_indices(':')
        .skip(1)
        .map(|(i, _)| path[..i].to_string())
        .chain(std::iter::once(path.to_string()))
        .filter(|p| p != names::ROOT_PATH)
        .collect()
}

/// Refuses an empty user name, then writes `user`'s ClusterRole and its binding in `root`.
async fn grant_in_root(
    admin: &ClientFactory,
    user: &str,
    role: &ClusterRole,
    binding: &ClusterRoleBinding,
) -> Result<(), IdentityError> {
    if user.trim().is_empty() {
        return Err(IdentityError::EmptyUser);
    }
    let root = client(admin, names::ROOT_PATH)?;
    apply_role(&root, role, binding, names::ROOT_PATH, objects::FIELD_MANAGER).await
}

/// Binds `cluster-admin` to `user` in the Ready workspace `path`.
async fn own(admin: &ClientFactory, path: &str, user: &str) -> Result<(), IdentityError> {
    let bindings = Api::<ClusterRoleBinding>::all(client(admin, path)?);
    apply(&bindings, &objects::owner_binding(user), path).await?;
    Ok(())
}

/// Binds `cluster-admin` to `user` in workspace `path` once it is Ready; `false` if it does not exist.
async fn own_if_present(
    admin: &ClientFactory,
    path: &str,
    user: &str,
    ready_timeout: Duration,
) -> Result<bool, IdentityError> {
    if !ready_if_present(admin, path, ready_timeout).await? {
        return Ok(false);
    }
    own(admin, path, user).await?;
    Ok(true)
}

/// Waits for workspace `path` to be Ready; `false` if it does not exist (or went away meanwhile).
async fn ready_if_present(admin: &ClientFactory, path: &str, ready_timeout: Duration) -> Result<bool, IdentityError> {
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
    Ok(true)
}

/// The names of the workspaces in `parent`.
async fn children(admin: &ClientFactory, parent: &str) -> Result<Vec<String>, IdentityError> {
    let list = Api::<Workspace>::all(client(admin, parent)?)
        .list(&ListParams::default())
        .await
        .map_err(|source| IdentityError::Kube {
            step: format!("listing the workspaces of {parent}"),
            source,
        })?;
    Ok(list.items.into_iter().filter_map(|w| w.metadata.name).collect())
}

/// What one hub grant wrote, by workspace (parents first).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HubGranted {
    /// Structural faros workspaces where the hub's roles are now in place.
    pub tree: Vec<String>,
    /// Provider workspaces where the hub may bind, review tokens and read the path.
    pub providers: Vec<String>,
    /// Organizations and team workspaces where the hub's user is now `cluster-admin`.
    pub tenants: Vec<String>,
}

/// Grants kcp user `user` what the hub API uses ([`hub`]), with `admin`'s credentials, in `root`
/// and in every faros workspace that exists.
pub async fn grant_hub(
    admin: &ClientFactory,
    user: &str,
    ready_timeout: Duration,
) -> Result<HubGranted, IdentityError> {
    grant_in_root(admin, user, &hub::root_role(), &hub::binding(user)).await?;

    let mut granted = HubGranted {
        tree: present_tree(
            admin,
            hub::tree_roles().into_iter().map(|(p, _)| p.to_string()),
            ready_timeout,
        )
        .await?,
        ..HubGranted::default()
    };
    // Every structural workspace but those missing (the reconciler grants those when it makes them).
    apply_hub_tree_in(admin, user, objects::FIELD_MANAGER, &granted.tree).await?;
    if granted.tree.iter().any(|p| p == names::PROVIDERS_PATH) {
        for name in children(admin, names::PROVIDERS_PATH).await? {
            let path = format!("{}:{name}", names::PROVIDERS_PATH);
            if ready_if_present(admin, &path, ready_timeout).await? {
                apply_hub_provider(&client(admin, &path)?, &path, user, objects::FIELD_MANAGER).await?;
                granted.providers.push(path);
            }
        }
    }
    if granted.tree.iter().any(|p| p == names::TENANTS_PATH) {
        for org in children(admin, names::TENANTS_PATH).await? {
            let org_path = names::org_workspace_path(&org);
            if !ready_if_present(admin, &org_path, ready_timeout).await? {
                continue;
            }
            let mut paths = vec![org_path.clone()];
            for ws in children(admin, &org_path).await? {
                paths.push(names::team_workspace_path(&org, &ws));
            }
            for path in paths {
                if ready_if_present(admin, &path, ready_timeout).await? {
                    let bindings = Api::<ClusterRoleBinding>::all(client(admin, &path)?);
                    apply(&bindings, &hub::owner_binding(user), &path).await?;
                    granted.tenants.push(path);
                }
            }
        }
    }
    Ok(granted)
}

/// Writes the hub's roles for `user` in every structural faros workspace, as `manager`; the
/// caller (the reconciler after bootstrapping the tree) is `cluster-admin` there.
pub async fn apply_hub_tree(factory: &ClientFactory, user: &str, manager: &str) -> Result<(), IdentityError> {
    let all: Vec<String> = hub::tree_roles().iter().map(|(p, _)| p.to_string()).collect();
    apply_hub_tree_in(factory, user, manager, &all).await
}

/// [`apply_hub_tree`] in the workspaces `present` only.
async fn apply_hub_tree_in(
    factory: &ClientFactory,
    user: &str,
    manager: &str,
    present: &[String],
) -> Result<(), IdentityError> {
    for (path, role) in hub::tree_roles() {
        if !present.iter().any(|p| p == path) {
            continue;
        }
        let kube = client(factory, path)?;
        apply_role(&kube, &role, &hub::binding(user), path, manager).await?;
        if path == names::SYSTEM_CONTROLLERS_PATH {
            // The namespace is the reconciler's (bootstrap makes it); a Role needs it to exist.
            let ns = Api::<Namespace>::all(kube.clone())
                .get_opt(names::SYSTEM_NAMESPACE)
                .await
                .map_err(|source| IdentityError::Kube {
                    step: format!("reading namespace {} in {path}", names::SYSTEM_NAMESPACE),
                    source,
                })?;
            if ns.is_some() {
                let roles: Api<Role> = Api::namespaced(kube.clone(), names::SYSTEM_NAMESPACE);
                apply_as(&roles, &hub::records_role(), path, manager).await?;
                let bindings: Api<RoleBinding> = Api::namespaced(kube, names::SYSTEM_NAMESPACE);
                apply_as(&bindings, &hub::records_binding(user), path, manager).await?;
            }
        }
    }
    Ok(())
}

/// Writes the hub's role for `user` in provider workspace `path` (`kube` is a client for it), as
/// `manager`: the reconciler when it provisions the provider, or the grant.
pub async fn apply_hub_provider(
    kube: &kube::Client,
    path: &str,
    user: &str,
    manager: &str,
) -> Result<(), IdentityError> {
    apply_role(kube, &hub::provider_role(), &hub::binding(user), path, manager).await
}

/// Server-side applies a ClusterRole and its binding in workspace `path` as `manager`.
async fn apply_role(
    kube: &kube::Client,
    role: &ClusterRole,
    binding: &ClusterRoleBinding,
    path: &str,
    manager: &str,
) -> Result<(), IdentityError> {
    apply_as(&Api::<ClusterRole>::all(kube.clone()), role, path, manager).await?;
    apply_as(&Api::<ClusterRoleBinding>::all(kube.clone()), binding, path, manager).await?;
    Ok(())
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
    apply_as(api, obj, cluster, objects::FIELD_MANAGER).await
}

/// Server-side applies `obj` in `cluster` with field manager `manager`, forced.
async fn apply_as<K>(api: &Api<K>, obj: &K, cluster: &str, manager: &str) -> Result<K, IdentityError>
where
    K: kube::Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let name = obj.meta().name.clone().unwrap_or_default();
    api.patch(&name, &PatchParams::apply(manager).force(), &Patch::Apply(obj))
        .await
        .map_err(|source| IdentityError::Kube {
            step: format!("applying {} {name} in {cluster}", K::kind(&())),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::ancestry;

    #[test]
    fn ancestry_runs_from_roots_child_down_to_the_path() {
        let cases: &[(&str, &[&str])] = &[
            ("root", &[]),
            ("root:faros", &["root:faros"]),
            (
                "root:faros:system:controllers",
                &["root:faros", "root:faros:system", "root:faros:system:controllers"],
            ),
        ];
        for (path, want) in cases {
            assert_eq!(ancestry(path), *want, "{path}");
        }
    }
}
