//! `/api/orgs/{org}[/workspaces/{ws}]/members[/{user}]`: membership as ClusterRoleBindings; and
//! `…/groups[/{group}]`: a role granted to an identity provider's group, held by whoever's token
//! says they are in it (kcp decides on each request's groups, so a user the IdP removes from the
//! group loses the role with their next token).
//!
//! Members may read the list; admins change it (the route table's scopes, [`super::scope`]); one
//! handler serves an organization and a team workspace alike, the resolved [`Scoped`] target says
//! which. Changing an organization's admins re-materializes
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
use super::scope::Scoped;
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

/// The `{user}` of a membership route.
#[derive(serde::Deserialize)]
pub struct UserParam {
    user: String,
}

/// The `{group}` of a group route.
#[derive(serde::Deserialize)]
pub struct GroupParam {
    group: String,
}

fn put_body(bytes: &[u8]) -> Result<PutMember, Status> {
    serde_json::from_slice(bytes).map_err(|e| Status::bad_request(format!("invalid request body: {e}")))
}

/// `GET …/groups`: the organization's or workspace's group roles.
pub async fn list_groups(State(tenancy): State<Arc<Tenancy>>, s: Scoped) -> Result<Json<GroupList>, Status> {
    Ok(Json(GroupList {
        items: spaces::groups(&tenancy, &s.target.cluster).await?,
    }))
}

/// `PUT …/groups/{group}`
pub async fn put_group(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(caller): Extension<Caller>,
    Scoped { target, .. }: Scoped,
    Path(GroupParam { group }): Path<GroupParam>,
    bytes: axum::body::Bytes,
) -> Result<Response, Status> {
    validate_group(&group)?;
    let req = put_body(&bytes)?;
    spaces::set_group(&tenancy, &target.cluster, &group, req.role).await?;
    if target.workspace.is_none() {
        spaces::propagate_org_admins(&tenancy, &target).await?;
    }
    let (org, ws) = (&target.org, &target.workspace);
    tracing::info!(%org, workspace = ?ws, %group, role = req.role.as_str(), by = %caller.user, "group role set");
    Ok(Json(GroupMembership {
        group,
        role: req.role,
        inherited: false,
    })
    .into_response())
}

/// `DELETE …/groups/{group}`
pub async fn remove_group(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(caller): Extension<Caller>,
    Scoped { target, .. }: Scoped,
    Path(GroupParam { group }): Path<GroupParam>,
) -> Result<Response, Status> {
    validate_group(&group)?;
    let removed = spaces::remove_group(&tenancy, &target.cluster, &group).await?;
    if target.workspace.is_none() {
        spaces::propagate_org_admins(&tenancy, &target).await?;
    }
    if !removed {
        return Err(Status::not_found_message(format!("{group:?} has no direct role here")));
    }
    let (org, ws) = (&target.org, &target.workspace);
    tracing::info!(%org, workspace = ?ws, %group, by = %caller.user, "group role removed");
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `GET …/members`: the organization's or workspace's members.
pub async fn list(State(tenancy): State<Arc<Tenancy>>, s: Scoped) -> Result<Json<MemberList>, Status> {
    Ok(Json(MemberList {
        items: spaces::members(&tenancy, &s.target.cluster).await?,
    }))
}

/// `PUT …/members/{user}`
pub async fn put(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(caller): Extension<Caller>,
    Scoped { target, .. }: Scoped,
    Path(UserParam { user }): Path<UserParam>,
    bytes: axum::body::Bytes,
) -> Result<Response, Status> {
    validate_user(&user)?;
    let req = put_body(&bytes)?;
    if req.role == Role::Member {
        guard_last_admin(&tenancy, &target, &user).await?;
    }
    spaces::set_member(&tenancy, &target.cluster, &user, req.role).await?;
    if target.workspace.is_none() {
        spaces::propagate_org_admins(&tenancy, &target).await?;
    }
    let (org, ws) = (&target.org, &target.workspace);
    tracing::info!(%org, workspace = ?ws, member = %user, role = req.role.as_str(), by = %caller.user, "membership set");
    Ok(Json(Membership {
        user,
        role: req.role,
        inherited: false,
    })
    .into_response())
}

/// `DELETE …/members/{user}`
pub async fn remove(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(caller): Extension<Caller>,
    Scoped { target, .. }: Scoped,
    Path(UserParam { user }): Path<UserParam>,
) -> Result<Response, Status> {
    validate_user(&user)?;
    guard_last_admin(&tenancy, &target, &user).await?;
    let removed = spaces::remove_member(&tenancy, &target.cluster, &user).await?;
    if target.workspace.is_none() {
        spaces::propagate_org_admins(&tenancy, &target).await?;
    }
    if !removed {
        return Err(Status::not_found_message(format!("{user:?} is not a direct member")));
    }
    let (org, ws) = (&target.org, &target.workspace);
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
