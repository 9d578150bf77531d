//! `GET /api/me`: who the hub thinks the caller is, and where they belong.

use std::sync::Arc;

use axum::extract::State;
use axum::{Extension, Json};
use faros_core::names;
use faros_core::status::Status;
use futures::future::join_all;

use super::Tenancy;
use super::access::Role;
use super::orgs::visible;
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
pub async fn me(State(tenancy): State<Arc<Tenancy>>, Extension(caller): Extension<Caller>) -> Result<Json<Me>, Status> {
    let t = &tenancy;
    let orgs = spaces::children(t, names::TENANTS_PATH).await?;
    let per_org = orgs.into_iter().filter(|o| o.is_ready()).map(|org| {
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
    Ok(Json(Me {
        user: caller.user.clone(),
        groups: caller.groups.clone(),
        organizations: join_all(per_org).await.into_iter().flatten().collect(),
    }))
}
