//! The quickstart HTTP surface: UI assets (open), and `/api/*` (behind the SDK's identity check).

use std::time::Duration;

use faros_sdk::axum::body::{Body, Bytes};
use faros_sdk::axum::extract::Query;
use faros_sdk::axum::extract::rejection::JsonRejection;
use faros_sdk::axum::http::{HeaderValue, StatusCode, header};
use faros_sdk::axum::response::{IntoResponse, Response};
use faros_sdk::axum::routing::get;
use faros_sdk::axum::{Json, Router};
use faros_sdk::prelude::*;
use faros_sdk::{futures, jiff, serde, tokio};

use crate::greeting::{self, NewGreeting};

const MAIN_JS: &str = include_str!("../ui/main.js");
const ICON_SVG: &str = include_str!("../ui/icon.svg");

/// `/api/hello`, `/api/greetings`, `/api/stream`.
pub fn routes() -> Router {
    Router::new()
        .route("/api/hello", get(hello))
        .route("/api/greetings", get(list_greetings).post(create_greeting))
        .route("/api/stream", get(stream))
}

/// The UI: `/main.js` (the custom element) and `/icon.svg`.
pub fn assets() -> Router {
    Router::new()
        .route(
            "/main.js",
            get(|| async { asset(MAIN_JS, "text/javascript; charset=utf-8") }),
        )
        .route("/icon.svg", get(|| async { asset(ICON_SVG, "image/svg+xml") }))
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
    ];
    (headers, body).into_response()
}

async fn hello(provider: ProviderInfo, who: VerifiedIdentity) -> Json<Value> {
    Json(json!({
        "message": "hello from the quickstart provider",
        "provider": provider.name,
        "servedAt": jiff::Timestamp::now().to_string(),
        "user": who.user,
        "groups": who.groups,
        "org": who.org,
        "workspace": who.workspace,
        "cluster": who.cluster,
    }))
}

async fn list_greetings(caller: Caller) -> Result<Json<Value>, Status> {
    Ok(Json(json!({"items": greeting::list(caller.client).await?})))
}

async fn create_greeting(caller: Caller, body: Result<Json<NewGreeting>, JsonRejection>) -> Result<Response, Status> {
    let Json(new) = body.map_err(|e| Status::bad_request(e.body_text()))?;
    let created = greeting::create(caller.client, &new).await?;
    Ok((StatusCode::CREATED, Json(created)).into_response())
}

#[derive(serde::Deserialize)]
#[serde(crate = "faros_sdk::serde")]
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
            Ok::<_, std::convert::Infallible>(Bytes::from(format!("chunk {i}\n"))),
            i + 1,
        ))
    });
    let content_type = [(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    )];
    (content_type, Body::from_stream(chunks)).into_response()
}
