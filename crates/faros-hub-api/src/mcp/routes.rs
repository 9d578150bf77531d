//! `/api/orgs/{org}/workspaces/{ws}/mcp`: authentication and membership first (Status JSON),
//! then rmcp's streamable HTTP service bound to that workspace and caller.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use tower::ServiceExt;

use super::{Federation, WorkspaceCtx, resume};
use crate::auth::{Caller, missing_credentials};

/// The endpoint's route.
pub const MCP_ROUTE: &str = "/api/orgs/{org}/workspaces/{ws}/mcp";

/// The MCP route. Mount it behind the authenticating middleware (it needs the
/// [`Caller`] extension; without one it answers 401).
pub fn routes<S>(fed: Arc<Federation>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new().route(MCP_ROUTE, any(handle)).with_state(fed)
}

/// The endpoint itself: any method (streamable HTTP uses POST, GET and DELETE).
pub async fn handle(
    State(fed): State<Arc<Federation>>,
    Path((org, ws)): Path<(String, String)>,
    req: Request,
) -> Response {
    let Some(caller) = req.extensions().get::<Caller>().cloned() else {
        return missing_credentials().into_response();
    };
    let target = match fed.directory.resolve(&caller, &org, &ws).await {
        Ok(t) => t,
        Err(status) => return status.into_response(),
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
