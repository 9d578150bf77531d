//! `/api/orgs[/{org}[/workspaces[/{ws}]]]`: organizations and team workspaces.
//!
//! Any authenticated user may create an organization and becomes its admin. Org admins create
//! team workspaces and are admins of all of them; members see what they belong to.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use faros_core::kcp::Workspace;
use faros_core::names;
use faros_core::status::Status;
use futures::future::join_all;

use super::Tenancy;
use super::access::{WorkspaceRef, describe};
use super::role::Role;
use super::scope::Scoped;
use super::spaces::{self, CreateRequest, Space};
use crate::auth::Caller;

/// `{"items": [...]}`.
#[derive(serde::Serialize)]
pub struct SpaceList {
    pub items: Vec<Space>,
}

fn body<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, Status> {
    serde_json::from_slice(bytes).map_err(|e| Status::bad_request(format!("invalid request body: {e}")))
}

/// `POST /api/orgs`
pub async fn create_org(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(caller): Extension<Caller>,
    bytes: axum::body::Bytes,
) -> Result<(StatusCode, Json<Space>), Status> {
    let req: CreateRequest = body(&bytes)?;
    req.validate()?;
    let (ws, created) = spaces::create_org(&tenancy, &req, &caller.user).await?;
    tracing::info!(org = %req.name, user = %caller.user, "organization created");
    let code = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((
        code,
        Json(spaces::space(
            &ws,
            names::org_workspace_path(&req.name),
            Some(Role::Admin),
        )),
    ))
}

/// `GET /api/orgs`: the organizations the caller belongs to.
pub async fn list_orgs(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<SpaceList>, Status> {
    let items = visible(&tenancy, &caller, names::TENANTS_PATH, names::org_workspace_path).await?;
    Ok(Json(SpaceList { items }))
}

/// Children of `parent` the caller has a role in, with that role, sorted by name. A child the
/// index covers is decided in memory, any other by asking kcp.
pub async fn visible(
    tenancy: &Tenancy,
    caller: &Caller,
    parent: &str,
    path_of: impl Fn(&str) -> String,
) -> Result<Vec<Space>, Status> {
    let t = tenancy;
    let (mut decided, undecided) = match organizations(t, caller, parent, &path_of) {
        Some(split) => split,
        None => children_decided(t, caller, parent, &path_of).await?,
    };
    let checks = undecided.iter().map(|(ws, cluster)| async {
        // A failed review hides the entry rather than failing the whole listing.
        let role = t.access.role(caller, cluster).await.ok().flatten()?;
        Some(spaces::space(
            ws,
            path_of(ws.metadata.name.as_deref().unwrap_or_default()),
            Some(role),
        ))
    });
    decided.extend(join_all(checks).await.into_iter().flatten());
    decided.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(decided)
}

/// What the caller sees, when the index decides for the caller and the organizations are listed:
/// the organizations of the clusters the caller holds a role in, decided; those the index does
/// not cover, undecided. From the caller's roles and the kept set of uncovered organizations,
/// so no walk over ten thousand organizations.
fn organizations(t: &Tenancy, caller: &Caller, parent: &str, path_of: &impl Fn(&str) -> String) -> Option<Split> {
    if parent != names::TENANTS_PATH {
        return None;
    }
    let uncovered = t.index.uncovered_orgs()?;
    let roles = t.index.roles(caller)?;
    let decided: Vec<Space> = roles
        .iter()
        .filter_map(|(cluster, role)| {
            let org = t.index.orgs.by_cluster(cluster).flatten().filter(|o| o.is_ready())?;
            let name = org.metadata.name.as_deref().unwrap_or_default();
            Some(spaces::space(&org, path_of(name), Some(*role)))
        })
        .collect();
    t.index.metrics.decided_n("index", decided.len() as u64);
    // The kept set may predate the roles by a moment: a cluster covered in between is decided
    // above already, and listed once.
    let undecided = uncovered
        .iter()
        .filter_map(|org| Some((org.clone(), org.spec.cluster.clone()?)))
        .filter(|(_, cluster)| !roles.contains_key(cluster))
        .collect();
    Some((decided, undecided))
}

/// Children decided from the index where it covers them, the rest left to ask (with their
/// logical clusters).
type Split = (Vec<Space>, Vec<(Arc<Workspace>, String)>);

/// [`Split`] of `parent`'s Ready children, listed (from the organization watch, or from kcp) and
/// decided from one view of the index.
async fn children_decided(
    t: &Tenancy,
    caller: &Caller,
    parent: &str,
    path_of: &impl Fn(&str) -> String,
) -> Result<Split, Status> {
    let all = spaces::listed_children(t, parent).await?;
    let ready: Vec<(&Arc<Workspace>, &str)> = all
        .iter()
        .filter(|ws| ws.is_ready())
        .filter_map(|ws| Some((ws, ws.spec.cluster.as_deref()?)))
        .collect();
    let answers = t.index.roles_in(caller, ready.iter().map(|(_, cluster)| *cluster));
    let mut decided: Vec<Space> = Vec::new();
    let mut undecided: Vec<(Arc<Workspace>, String)> = Vec::new();
    for ((ws, cluster), answer) in ready.into_iter().zip(answers) {
        match answer {
            Some(Some(role)) => decided.push(spaces::space(
                ws,
                path_of(ws.metadata.name.as_deref().unwrap_or_default()),
                Some(role),
            )),
            Some(None) => {}
            None => undecided.push((ws.clone(), cluster.to_string())),
        }
    }
    Ok((decided, undecided))
}

/// `GET /api/orgs/{org}` and `GET /api/orgs/{org}/workspaces/{ws}`
pub async fn get(State(tenancy): State<Arc<Tenancy>>, s: Scoped) -> Result<Json<Space>, Status> {
    Ok(Json(describe_space(&tenancy, &s.target, s.role).await?))
}

async fn describe_space(tenancy: &Tenancy, target: &WorkspaceRef, role: Role) -> Result<Space, Status> {
    let (parent, name) = match &target.workspace {
        Some(ws) => (names::org_workspace_path(&target.org), ws.as_str()),
        None => (names::TENANTS_PATH.to_string(), target.org.as_str()),
    };
    let cached = match &target.workspace {
        None => tenancy.index.orgs.get(name).flatten(),
        Some(_) => None,
    };
    let ws = match cached {
        Some(ws) => ws,
        None => spaces::children(tenancy, &parent)
            .await?
            .into_iter()
            .find(|w| w.metadata.name.as_deref() == Some(name))
            .map(Arc::new)
            .ok_or_else(|| Status::not_found_message(format!("{} not found", describe(target))))?,
    };
    Ok(spaces::space(&ws, target.path.clone(), Some(role)))
}

/// `DELETE /api/orgs/{org}` (kcp deletes the org's workspaces with it) and
/// `DELETE /api/orgs/{org}/workspaces/{ws}`.
pub async fn delete(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(caller): Extension<Caller>,
    Scoped { target, .. }: Scoped,
) -> Result<Response, Status> {
    let (parent, name) = match &target.workspace {
        Some(ws) => (names::org_workspace_path(&target.org), ws.as_str()),
        None => (names::TENANTS_PATH.to_string(), target.org.as_str()),
    };
    spaces::delete(&tenancy, &parent, name).await?;
    tracing::info!(org = %target.org, workspace = ?target.workspace, user = %caller.user, "deleted");
    Ok(accepted(&format!("{} is being deleted", describe(&target))))
}

fn accepted(message: &str) -> Response {
    (
        StatusCode::ACCEPTED,
        Json(serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Success", "message": message})),
    )
        .into_response()
}

/// `POST /api/orgs/{org}/workspaces`
pub async fn create_workspace(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(caller): Extension<Caller>,
    Scoped { target: org_ref, .. }: Scoped,
    bytes: axum::body::Bytes,
) -> Result<(StatusCode, Json<Space>), Status> {
    let req: CreateRequest = body(&bytes)?;
    req.validate()?;
    let (ws, created) = spaces::create_team_workspace(&tenancy, &org_ref, &req, &caller.user).await?;
    let org = &org_ref.org;
    tracing::info!(%org, workspace = %req.name, user = %caller.user, "workspace created");
    let code = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((
        code,
        Json(spaces::space(
            &ws,
            names::team_workspace_path(org, &req.name),
            Some(Role::Admin),
        )),
    ))
}

/// `GET /api/orgs/{org}/workspaces`: the org's workspaces the caller belongs to.
pub async fn list_workspaces(
    State(tenancy): State<Arc<Tenancy>>,
    Extension(caller): Extension<Caller>,
    Scoped { target: org_ref, .. }: Scoped,
) -> Result<Json<SpaceList>, Status> {
    let items = visible(&tenancy, &caller, &org_ref.path, |name| {
        names::team_workspace_path(&org_ref.org, name)
    })
    .await?;
    Ok(Json(SpaceList { items }))
}
