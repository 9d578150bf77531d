//! Who may act on an `/api/orgs/{org}/…` route, as data of the route table: a row's [`Scope`]
//! names the organization or team workspace its path addresses and the least [`Role`] it needs.
//! [`admit`] is the one layer that resolves `{org}` and `{ws}`, asks [`super::Access::require`]
//! once, and hands the handler the answer as [`Scoped`]; handlers never check membership
//! themselves, so a row without a scope is visibly open and a forgotten check cannot hide in a
//! handler.
//!
//! Refusals are [`super::Access::require`]'s: a stranger gets exactly the 404 of a workspace that
//! does not exist, a member short of the role a 403, both as Kubernetes `Status` JSON.

use std::sync::Arc;

use axum::extract::{FromRequestParts, RawPathParams, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use faros_core::status::Status;
use http::request::Parts;

use super::Tenancy;
use super::role::Role;
use crate::auth::{Caller, missing_credentials};
use crate::workspace::WorkspaceRef;

/// What a route acts on, and the least role the caller needs there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Nothing tenant-scoped: the handler serves the caller alone (or nobody).
    None,
    /// The organization `{org}`.
    Org(Role),
    /// The team workspace `{ws}` of organization `{org}`.
    Workspace(Role),
}

impl Scope {
    /// The role the scope needs, if any.
    pub fn role(self) -> Option<Role> {
        match self {
            Scope::None => None,
            Scope::Org(r) | Scope::Workspace(r) => Some(r),
        }
    }

    /// The path parameters the scope reads: a row's path must name them.
    pub fn params(self) -> &'static [&'static str] {
        match self {
            Scope::None => &[],
            Scope::Org(_) => &["org"],
            Scope::Workspace(_) => &["org", "ws"],
        }
    }

    /// For the route list of docs/hub-api.md: who within the tenancy may call.
    pub fn describe(self) -> Option<&'static str> {
        match self {
            Scope::None => None,
            Scope::Org(Role::Member) => Some("org members"),
            Scope::Org(Role::Admin) => Some("org admins"),
            Scope::Workspace(Role::Member) => Some("workspace members"),
            Scope::Workspace(Role::Admin) => Some("workspace admins (org admins are)"),
        }
    }
}

/// The organization or workspace a scoped route acts on, resolved, and the caller's role there
/// (at least the route's). Extracted by handlers of scoped routes; on a route without a scope it
/// is a 500, so a handler written for a scope cannot serve unchecked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scoped {
    pub target: WorkspaceRef,
    pub role: Role,
}

impl<S: Send + Sync> FromRequestParts<S> for Scoped {
    type Rejection = Status;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Status> {
        parts
            .extensions
            .get::<Scoped>()
            .cloned()
            .ok_or_else(|| Status::internal("this route has no scope in the route table"))
    }
}

/// The layer of a scoped row: resolves the target named by the path, requires the role and
/// passes [`Scoped`] on. Runs after authentication (it needs the [`Caller`]).
pub async fn admit(
    State((tenancy, scope)): State<(Arc<Tenancy>, Scope)>,
    params: RawPathParams,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(caller) = req.extensions().get::<Caller>().cloned() else {
        return missing_credentials().into_response();
    };
    let Some(min) = scope.role() else {
        return next.run(req).await;
    };
    let param = |name: &str| params.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string());
    let Some(org) = param("org") else {
        return Status::internal("a scoped route without {org}").into_response();
    };
    let ws = match scope {
        Scope::Workspace(_) => match param("ws") {
            Some(ws) => Some(ws),
            None => return Status::internal("a workspace-scoped route without {ws}").into_response(),
        },
        _ => None,
    };
    match tenancy.access.require(&caller, &org, ws.as_deref(), min).await {
        Ok((target, role)) => {
            req.extensions_mut().insert(Scoped { target, role });
            next.run(req).await
        }
        Err(status) => status.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_name_their_parameters_and_role() {
        for (scope, params, role) in [
            (Scope::None, &[][..], None),
            (Scope::Org(Role::Admin), &["org"][..], Some(Role::Admin)),
            (Scope::Workspace(Role::Member), &["org", "ws"][..], Some(Role::Member)),
        ] {
            assert_eq!(scope.params(), params, "{scope:?}");
            assert_eq!(scope.role(), role, "{scope:?}");
            assert_eq!(scope.describe().is_some(), role.is_some(), "{scope:?}");
        }
    }
}
