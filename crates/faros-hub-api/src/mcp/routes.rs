//! `/api/orgs/{org}/workspaces/{ws}/mcp`: authentication and membership first (the route table's
//! layers, Status JSON), then rmcp's streamable HTTP service bound to that workspace and caller.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use tower::ServiceExt;

use super::{Federation, WorkspaceCtx, resume};
use crate::auth::{Caller, missing_credentials};
use crate::tenancy::scope::Scoped;

/// The endpoint's route.
pub const MCP_ROUTE: &str = "/api/orgs/{org}/workspaces/{ws}/mcp";

/// The MCP route. Mount it behind the authenticating middleware and the workspace scope's
/// ([`crate::tenancy::scope::admit`]): it needs the [`Caller`] and [`Scoped`] extensions, and
/// answers 401 without the first, 500 without the second.
pub fn routes<S>(fed: Arc<Federation>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new().route(MCP_ROUTE, any(handle)).with_state(fed)
}

/// The endpoint itself: any method (streamable HTTP uses POST, GET and DELETE).
pub async fn handle(State(fed): State<Arc<Federation>>, Scoped { target, .. }: Scoped, req: Request) -> Response {
    let Some(caller) = req.extensions().get::<Caller>().cloned() else {
        return missing_credentials().into_response();
    };
    let ctx = Arc::new(WorkspaceCtx { caller, target });
    let service = fed.service_for(&ctx);
    let resume = resume::resumes_a_request_stream(req.method(), req.headers());
    let resp = match service.oneshot(req).await {
        Ok(resp) => resp.map(Body::new),
        Err(never) => match never {},
    };
    if resume {
        resume::unless_unreplayable(resp).await
    } else {
        resp
    }
}
