//! The quickstart HTTP surface: UI assets and `/healthz` (open), `/api/*` and `/mcp` (verified
//! identity required).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use faros_core::client::ClientFactory;
use faros_core::status::Status;
use faros_sdk::identity::{IdentityVerifier, VerifiedIdentity, require_identity};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::RwLock;

use crate::greeting::{self, NewGreeting};
use crate::tools::QuickstartTools;

const MAIN_JS: &str = include_str!("../ui/main.js");
const ICON_SVG: &str = include_str!("../ui/icon.svg");

/// How the backend reaches tenants: the export's virtual workspace, once kcp has published it.
#[derive(Clone, Default)]
pub struct Tenants {
    inner: Arc<RwLock<Option<(ClientFactory, String)>>>,
}

impl Tenants {
    /// Records the virtual workspace URL (set by the controller once the slice has one).
    pub async fn set(&self, factory: ClientFactory, vw_url: String) {
        *self.inner.write().await = Some((factory, vw_url));
    }

    /// A client for the caller's logical cluster through the virtual workspace.
    pub async fn client_for(&self, who: &VerifiedIdentity) -> Result<kube::Client, Status> {
        if who.cluster.is_empty() {
            return Err(Status::bad_request(
                "the request names no workspace; call it from a workspace that enabled quickstart",
            ));
        }
        let guard = self.inner.read().await;
        let Some((factory, url)) = guard.as_ref() else {
            return Err(Status::unavailable(
                "no workspace has enabled quickstart yet, or the provider has no kubeconfig",
            ));
        };
        factory
            .virtual_workspace(url, &who.cluster)
            .map_err(|e| Status::internal(e.to_string()))
    }
}

/// Shared state of the handlers and MCP tools.
#[derive(Clone)]
pub struct AppState {
    pub provider: String,
    pub tenants: Tenants,
}

/// The full router.
pub fn router(state: AppState, verifier: Arc<IdentityVerifier>) -> Router {
    let api = Router::new()
        .route("/api/hello", get(hello))
        .route("/api/greetings", get(list_greetings).post(create_greeting))
        .route("/api/stream", get(stream))
        .route_layer(axum::middleware::from_fn_with_state(verifier.clone(), require_identity))
        .with_state(state.clone());
    let mcp_state = state;
    Router::new()
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .route(
            "/main.js",
            get(|| async { asset(MAIN_JS, "text/javascript; charset=utf-8") }),
        )
        .route("/icon.svg", get(|| async { asset(ICON_SVG, "image/svg+xml") }))
        .merge(api)
        .merge(faros_sdk::mcp::router(verifier, move || {
            QuickstartTools::new(mcp_state.clone())
        }))
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}

async fn hello(State(state): State<AppState>, who: VerifiedIdentity) -> Json<serde_json::Value> {
    Json(json!({
        "message": "hello from the quickstart provider",
        "provider": state.provider,
        "servedAt": jiff::Timestamp::now().to_string(),
        "user": who.user,
        "groups": who.groups,
        "org": who.org,
        "workspace": who.workspace,
        "cluster": who.cluster,
    }))
}

async fn list_greetings(State(state): State<AppState>, who: VerifiedIdentity) -> Result<Response, Status> {
    let client = state.tenants.client_for(&who).await?;
    let items = greeting::list(client).await?;
    Ok(Json(json!({"items": items})).into_response())
}

async fn create_greeting(
    State(state): State<AppState>,
    who: VerifiedIdentity,
    body: Result<Json<NewGreeting>, axum::extract::rejection::JsonRejection>,
) -> Result<Response, Status> {
    let Json(new) = body.map_err(|e| Status::bad_request(e.body_text()))?;
    let client = state.tenants.client_for(&who).await?;
    let created = greeting::create(client, &new).await?;
    Ok((axum::http::StatusCode::CREATED, Json(created)).into_response())
}

#[derive(Deserialize)]
struct StreamQuery {
    chunks: Option<String>,
}

/// `chunk i\n` every 150 ms, each flushed as its own body frame, for proxy streaming tests.
async fn stream(Query(q): Query<StreamQuery>, _who: VerifiedIdentity) -> Response {
    let n = q
        .chunks
        .and_then(|c| c.parse::<u32>().ok())
        .filter(|n| (1..=100).contains(n))
        .unwrap_or(3);
    let chunks = futures::stream::unfold(0u32, move |i| async move {
        if i >= n {
            return None;
        }
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        Some((
            Ok::<_, std::convert::Infallible>(bytes::Bytes::from(format!("chunk {i}\n"))),
            i + 1,
        ))
    });
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        )],
        Body::from_stream(chunks),
    )
        .into_response()
}
