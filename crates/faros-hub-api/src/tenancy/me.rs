//! `GET /api/me`: who the hub thinks the caller is, and where they belong.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use axum::extract::State;
use axum::{Extension, Json};
use faros_core::kcp::Workspace;
use faros_core::names;
use faros_core::status::Status;
use futures::future::join_all;
use kube::ResourceExt;

use super::Tenancy;
use super::orgs::visible;
use super::role::Role;
use super::spaces;
use crate::auth::Caller;

#[derive(Debug, serde::Serialize, PartialEq, Eq)]
pub struct Me {
    pub user: String,
    pub groups: Vec<String>,
    pub organizations: Vec<OrgMembership>,
}

#[derive(Debug, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct OrgMembership {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// `None` for someone who is only a member of some of the org's workspaces.
    pub role: Option<Role>,
    pub workspaces: Vec<WorkspaceMembership>,
}

#[derive(Debug, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceMembership {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    pub role: Role,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
}

/// Every organization the caller belongs to, or has a workspace in (a workspace member need not
/// be an org member).
///
/// With the membership index ([`super::index`]), only the organizations where the caller holds a
/// role, or holds one in a workspace of, are looked into, plus those the index does not cover yet
/// (asked about as before): no request per organization, and no walk over all of them.
pub async fn me(State(tenancy): State<Arc<Tenancy>>, Extension(caller): Extension<Caller>) -> Result<Json<Me>, Status> {
    let t = &tenancy;
    let candidates = candidates(t, &caller).await?;
    let per_org = candidates.into_iter().map(|org| {
        let tenancy = tenancy.clone();
        let caller = caller.clone();
        async move {
            let name = org.metadata.name.clone().unwrap_or_default();
            let cluster = org.spec.cluster.clone().unwrap_or_default();
            let role = tenancy.access.role(&caller, &cluster).await.ok().flatten();
            let path = names::org_workspace_path(&name);
            let workspaces: Vec<WorkspaceMembership> =
                visible(&tenancy, &caller, &path, |ws| names::team_workspace_path(&name, ws))
                    .await
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|w| {
                        Some(WorkspaceMembership {
                            role: w.role?,
                            name: w.name,
                            display_name: w.display_name,
                            cluster: w.cluster,
                        })
                    })
                    .collect();
            if role.is_none() && workspaces.is_empty() {
                return None;
            }
            Some(OrgMembership {
                display_name: spaces::space(&org, path, role).display_name,
                name,
                role,
                workspaces,
            })
        }
    });
    let mut organizations: Vec<OrgMembership> = join_all(per_org).await.into_iter().flatten().collect();
    organizations.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Json(Me {
        user: caller.user.clone(),
        groups: caller.groups.clone(),
        organizations,
    }))
}

/// The Ready organizations to look into for the caller: where the index decides for the caller,
/// the organizations of the workspaces it holds a role in and those the index does not cover;
/// otherwise every Ready organization.
async fn candidates(t: &Tenancy, caller: &Caller) -> Result<Vec<Arc<Workspace>>, Status> {
    let Some(roles) = t.index.roles(caller) else {
        let orgs = spaces::listed_children(t, names::TENANTS_PATH).await?;
        return Ok(orgs.into_iter().filter(|o| o.is_ready()).collect());
    };
    let member_orgs = member_orgs(t, &roles).await;
    if let Some(uncovered) = t.index.uncovered_orgs() {
        let mut orgs: BTreeMap<String, Arc<Workspace>> =
            uncovered.iter().map(|org| (org.name_any(), org.clone())).collect();
        for name in member_orgs {
            if let Some(Some(org)) = t.index.orgs.get(&name)
                && org.is_ready()
            {
                orgs.entry(name).or_insert(org);
            }
        }
        return Ok(orgs.into_values().collect());
    }
    // The organizations are not listed from the watch yet (the hub just started): from kcp, with
    // the same choice made one organization at a time, so a covered organization the caller has
    // nothing in costs no list of its workspaces.
    let ready: Vec<_> = spaces::listed_children(t, names::TENANTS_PATH)
        .await?
        .into_iter()
        .filter(|o| o.is_ready())
        .collect();
    let covered = t
        .index
        .covers_each(ready.iter().map(|o| o.spec.cluster.as_deref().unwrap_or_default()));
    Ok(ready
        .into_iter()
        .zip(covered)
        .filter(|(org, covered)| org.spec.cluster.is_none() || !covered || member_orgs.contains(&org.name_any()))
        .map(|(org, _)| org)
        .collect())
}

/// The organizations of the workspaces in `roles` (logical clusters): an organization's own
/// cluster from the organization watch, a team workspace's by its path.
async fn member_orgs(t: &Tenancy, roles: &BTreeMap<String, Role>) -> HashSet<String> {
    let mut orgs = HashSet::new();
    let mut others = Vec::new();
    for cluster in roles.keys() {
        match t.index.orgs.by_cluster(cluster).flatten() {
            Some(org) => {
                orgs.insert(org.name_any());
            }
            None => others.push(cluster),
        }
    }
    let paths = join_all(others.into_iter().map(|cluster| t.paths.path_of(cluster))).await;
    orgs.extend(
        paths
            .into_iter()
            .filter_map(Result::ok)
            .filter_map(|p| org_of(&p).map(str::to_string)),
    );
    orgs
}

/// The organization of a tenant workspace path (`root:faros:tenants:<org>[:<ws>]`).
fn org_of(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(names::TENANTS_PATH)?.strip_prefix(':')?;
    rest.split(':').next().filter(|o| !o.is_empty())
}

#[cfg(test)]
mod tests {
    use super::org_of;

    #[test]
    fn orgs_of_paths() {
        for (path, want) in [
            ("root:faros:tenants:acme", Some("acme")),
            ("root:faros:tenants:acme:dev", Some("acme")),
            ("root:faros:tenants", None),
            ("root:faros:tenants:", None),
            ("root:faros:providers:quickstart", None),
            ("root:faros:tenantsx:acme", None),
        ] {
            assert_eq!(org_of(path), want, "{path}");
        }
    }
}
