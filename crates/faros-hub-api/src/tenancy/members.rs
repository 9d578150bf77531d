//! `/api/orgs/{org}[/workspaces/{ws}]/members[/{user}]`: membership as ClusterRoleBindings; and
//! `…/groups[/{group}]`: a role granted to an identity provider's group, held by whoever's token
//! says they are in it (kcp decides on each request's groups, so a user the IdP removes from the
//! group loses the role with their next token).
//!
//! Members may read the list; admins change it. Changing an organization's admins re-materializes
//! them into every team workspace of the org. The last direct admin of an organization cannot be
//! removed or demoted: nobody could manage it afterwards.

use std::sync::Arc;

use axum::Extension;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use faros_core::status::Status;

use super::Tenancy;
use super::access::WorkspaceRef;
use super::rbac::{GroupMembership, Membership};
use super::role::Role;
use super::spaces;
use crate::auth::Caller;

#[derive(serde::Serialize)]
pub struct MemberList {
    pub items: Vec<Membership>,
}

#[derive(serde::Serialize)]
pub struct GroupList {
    pub items: Vec<GroupMembership>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutMember {
    pub role: Role,
}

fn validate_user(user: &str) -> Result<(), Status> {
    if user.is_empty() || user.len() > 256 || user.chars().any(char::is_control) {
        return Err(Status::bad_request(format!(
            "user {user:?}: must be 1-256 printable characters"
        )));
    }
    if user.starts_with("system:") {
        return Err(Status::bad_request(format!(
            "user {user:?}: system identities cannot be workspace members"
        )));
    }
    Ok(())
}

fn validate_group(group: &str) -> Result<(), Status> {
    if group.is_empty() || group.len() > 256 || group.chars().any(char::is_control) {
        return Err(Status::bad_request(format!(
            "group {group:?}: must be 1-256 printable characters"
        )));
    }
    // `system:authenticated` and friends would grant the role to everyone of a kind.
    if group.starts_with("system:") {
        return Err(Status::bad_request(format!(
            "group {group:?}: system groups cannot be granted workspace roles"
        )));
    }
    Ok(())
}

async fn list_groups(
    tenancy: &Tenancy,
    caller: &Caller,
    org: &str,
    ws: Option<&str>,
) -> Result<Json<GroupList>, Status> {
    let (target, _) = tenancy.access.require(caller, org, ws, Role::Member).await?;
    Ok(Json(GroupList {
        items: spaces::groups(tenancy, &target.cluster).await?,
    }))
}

async fn put_group(
    tenancy: &Tenancy,
    caller: &Caller,
    org: &str,
    ws: Option<&str>,
    group: &str,
    bytes: &[u8],
) -> Result<Response, Status> {
    validate_group(group)?;
    let req: PutMember =
        serde_json::from_slice(bytes).map_err(|e| Status::bad_request(format!("invalid request body: {e}")))?;
    let (target, _) = tenancy.access.require(caller, org, ws, Role::Admin).await?;
    spaces::set_group(tenancy, &target.cluster, group, req.role).await?;
    if target.workspace.is_none() {
        spaces::propagate_org_admins(tenancy, &target).await?;
    }
    tracing::info!(%org, workspace = ?ws, %group, role = req.role.as_str(), by = %caller.user, "group role set");
    Ok(Json(GroupMembership {
        group: group.to_string(),
        role: req.role,
        inherited: false,
    })
    .into_response())
}

async fn remove_group(
    tenancy: &Tenancy,
    caller: &Caller,
    org: &str,
    ws: Option<&str>,
    group: &str,
) -> Result<Response, Status> {
    validate_group(group)?;
    let (target, _) = tenancy.access.require(caller, org, ws, Role::Admin).await?;
    let removed = spaces::remove_group(tenancy, &target.cluster, group).await?;
    if target.workspace.is_none() {
        spaces::propagate_org_admins(tenancy, &target).await?;
    }
    if !removed {
        return Err(Status::not_found_message(format!("{group:?} has no direct role here")));
    }
    tracing::info!(%org, workspace = ?ws, %group, by = %caller.user, "group role removed");
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn list(tenancy: &Tenancy, caller: &Caller, org: &str, ws: Option<&str>) -> Result<Json<MemberList>, Status> {
    let (target, _) = tenancy.access.require(caller, org, ws, Role::Member).await?;
    Ok(Json(MemberList {
        items: spaces::members(tenancy, &target.cluster).await?,
    }))
}

async fn put(
    tenancy: &Tenancy,
    caller: &Caller,
    org: &str,
    ws: Option<&str>,
    user: &str,
    bytes: &[u8],
) -> Result<Response, Status> {
    validate_user(user)?;
    let req: PutMember =
        serde_json::from_slice(bytes).map_err(|e| Status::bad_request(format!("invalid request body: {e}")))?;
    let (target, _) = tenancy.access.require(caller, org, ws, Role::Admin).await?;
    if req.role == Role::Member {
        guard_last_admin(tenancy, &target, user).await?;
    }
    spaces::set_member(tenancy, &target.cluster, user, req.role).await?;
    if target.workspace.is_none() {
        spaces::propagate_org_admins(tenancy, &target).await?;
    }
    tracing::info!(%org, workspace = ?ws, member = %user, role = req.role.as_str(), by = %caller.user, "membership set");
    Ok(Json(Membership {
        user: user.to_string(),
        role: req.role,
        inherited: false,
    })
    .into_response())
}

async fn remove(
    tenancy: &Tenancy,
    caller: &Caller,
    org: &str,
    ws: Option<&str>,
    user: &str,
) -> Result<Response, Status> {
    validate_user(user)?;
    let (target, _) = tenancy.access.require(caller, org, ws, Role::Admin).await?;
    guard_last_admin(tenancy, &target, user).await?;
    let removed = spaces::remove_member(tenancy, &target.cluster, user).await?;
    if target.workspace.is_none() {
        spaces::propagate_org_admins(tenancy, &target).await?;
    }
    if !removed {
        return Err(Status::not_found_message(format!("{user:?} is not a direct member")));
    }
    tracing::info!(%org, workspace = ?ws, member = %user, by = %caller.user, "membership removed");
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// 409 when `user` is the only direct admin of an organization.
async fn guard_last_admin(tenancy: &Tenancy, target: &WorkspaceRef, user: &str) -> Result<(), Status> {
    if target.workspace.is_some() {
        return Ok(());
    }
    let admins = spaces::org_admins(tenancy, target).await?;
    if admins.len() == 1 && admins[0] == user {
        return Err(Status::conflict_message(format!(
            "{user:?} is the last admin of organization {:?}; add another admin first",
            target.org
        )));
    }
    Ok(())
}

pub async fn list_org(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(c): Extension<Caller>,
    Path(org): Path<String>,
) -> Result<Json<MemberList>, Status> {
    list(&tenancy, &c, &org, None).await
}

pub async fn list_ws(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(c): Extension<Caller>,
    Path((org, ws)): Path<(String, String)>,
) -> Result<Json<MemberList>, Status> {
    list(&tenancy, &c, &org, Some(&ws)).await
}

pub async fn put_org(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(c): Extension<Caller>,
    Path((org, user)): Path<(String, String)>,
    bytes: axum::body::Bytes,
) -> Result<Response, Status> {
    put(&tenancy, &c, &org, None, &user, &bytes).await
}

pub async fn put_ws(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(c): Extension<Caller>,
    Path((org, ws, user)): Path<(String, String, String)>,
    bytes: axum::body::Bytes,
) -> Result<Response, Status> {
    put(&tenancy, &c, &org, Some(&ws), &user, &bytes).await
}

pub async fn delete_org(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(c): Extension<Caller>,
    Path((org, user)): Path<(String, String)>,
) -> Result<Response, Status> {
    remove(&tenancy, &c, &org, None, &user).await
}

pub async fn delete_ws(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(c): Extension<Caller>,
    Path((org, ws, user)): Path<(String, String, String)>,
) -> Result<Response, Status> {
    remove(&tenancy, &c, &org, Some(&ws), &user).await
}

pub async fn list_groups_org(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(c): Extension<Caller>,
    Path(org): Path<String>,
) -> Result<Json<GroupList>, Status> {
    list_groups(&tenancy, &c, &org, None).await
}

pub async fn list_groups_ws(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(c): Extension<Caller>,
    Path((org, ws)): Path<(String, String)>,
) -> Result<Json<GroupList>, Status> {
    list_groups(&tenancy, &c, &org, Some(&ws)).await
}

pub async fn put_group_org(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(c): Extension<Caller>,
    Path((org, group)): Path<(String, String)>,
    bytes: axum::body::Bytes,
) -> Result<Response, Status> {
    put_group(&tenancy, &c, &org, None, &group, &bytes).await
}

pub async fn put_group_ws(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(c): Extension<Caller>,
    Path((org, ws, group)): Path<(String, String, String)>,
    bytes: axum::body::Bytes,
) -> Result<Response, Status> {
    put_group(&tenancy, &c, &org, Some(&ws), &group, &bytes).await
}

pub async fn delete_group_org(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(c): Extension<Caller>,
    Path((org, group)): Path<(String, String)>,
) -> Result<Response, Status> {
    remove_group(&tenancy, &c, &org, None, &group).await
}

pub async fn delete_group_ws(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(c): Extension<Caller>,
    Path((org, ws, group)): Path<(String, String, String)>,
) -> Result<Response, Status> {
    remove_group(&tenancy, &c, &org, Some(&ws), &group).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames() {
        for (u, ok) in [
            ("alice", true),
            ("oidc:alice@example.com", true),
            ("", false),
            ("system:serviceaccount:default:x", false),
            ("a\nb", false),
        ] {
            assert_eq!(validate_user(u).is_ok(), ok, "{u:?}");
        }
    }

    #[test]
    fn group_names() {
        for (g, ok) in [
            ("dev", true),
            ("oidc:ops", true),
            ("", false),
            ("system:authenticated", false),
            ("system:masters", false),
            ("a\tb", false),
        ] {
            assert_eq!(validate_group(g).is_ok(), ok, "{g:?}");
        }
    }
}
