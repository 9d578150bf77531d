//! The quickstart HTTP surface, in process (no kcp): assets, health, identity, streaming.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use faros_core::identity::{self, Claims, Identity, Jwks, SigningKey};
use faros_core::names;
use faros_sdk::app::Tenants;
use faros_sdk::identity::IdentityVerifier;
use http_body_util::BodyExt;
use tower::ServiceExt;

fn app() -> (axum::Router, SigningKey) {
    let key = SigningKey::generate("hub").unwrap();
    (app_for(&key), key)
}

fn app_for(key: &SigningKey) -> axum::Router {
    let verifier = IdentityVerifier::with_jwks(
        "quickstart",
        Jwks {
            keys: vec![key.public_jwk()],
        },
    );
    faros_provider_quickstart::app().router(Arc::new(verifier), Tenants::new("quickstart"), Default::default())
}

fn assertion(key: &SigningKey) -> String {
    let who = Identity {
        user: "alice".into(),
        groups: vec!["system:authenticated".into()],
        org: "acme".into(),
        workspace: "dev".into(),
        cluster: "c1".into(),
    };
    key.sign(&Claims::new(
        who,
        "quickstart",
        identity::now_unix(),
        identity::DEFAULT_TTL,
    ))
    .unwrap()
}

async fn get(app: &axum::Router, path: &str, token: Option<&str>) -> (u16, String, String) {
    let mut req = http::Request::get(path);
    if let Some(t) = token {
        req = req.header(names::HEADER_ASSERTION, t);
    }
    let resp = app.clone().oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
    let code = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (code, ct, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test]
async fn assets_and_health_are_open() {
    let (app, _) = app();
    let (code, ct, body) = get(&app, "/healthz", None).await;
    assert_eq!((code, body.as_str()), (200, r#"{"status":"ok"}"#));
    assert_eq!(ct, "application/json");
    let (code, ct, body) = get(&app, "/main.js", None).await;
    assert_eq!(code, 200);
    assert!(ct.contains("javascript"), "{ct}");
    assert!(body.contains("customElements.define"));
    assert!(body.contains("faros-provider-quickstart"));
    let (code, ct, _) = get(&app, "/icon.svg", None).await;
    assert_eq!(code, 200);
    assert!(ct.contains("svg"), "{ct}");
}

#[tokio::test]
async fn hello_echoes_the_verified_identity_only() {
    let (app, key) = app();
    let (code, _, body) = get(&app, "/api/hello", Some(&assertion(&key))).await;
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["provider"], "quickstart");
    assert_eq!(v["user"], "alice");
    assert_eq!(
        (v["org"].as_str(), v["workspace"].as_str(), v["cluster"].as_str()),
        (Some("acme"), Some("dev"), Some("c1"))
    );
    let (code, _, body) = get(&app, "/api/hello", None).await;
    assert_eq!(code, 401, "{body}");
    let other = SigningKey::generate("hub").unwrap();
    let (code, _, _) = get(&app, "/api/hello", Some(&assertion(&other))).await;
    assert_eq!(code, 401, "forged assertion");
    // Tenant APIs without a virtual workspace yet: 503, not a hang or a panic.
    let (code, _, body) = get(&app, "/api/greetings", Some(&assertion(&key))).await;
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("no workspace has enabled quickstart yet"), "{body}");
}

#[tokio::test]
async fn stream_flushes_each_chunk_separately() {
    let (app, key) = app();
    let req = http::Request::get("/api/stream?chunks=4")
        .header(names::HEADER_ASSERTION, assertion(&key))
        .body(Body::empty())
        .unwrap();
    let resp = app.oneshot(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let mut body = resp.into_body();
    let mut chunks = Vec::new();
    let mut arrivals = Vec::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            arrivals.push(Instant::now());
            chunks.push(String::from_utf8(data.to_vec()).unwrap());
        }
    }
    assert_eq!(chunks, vec!["chunk 0\n", "chunk 1\n", "chunk 2\n", "chunk 3\n"]);
    assert!(
        arrivals[3] - arrivals[0] >= Duration::from_millis(400),
        "chunks are paced, not buffered"
    );
    // Out-of-range counts fall back to 3.
    let (code, _, body) = get(&app_for(&key), "/api/stream?chunks=1000", Some(&assertion(&key))).await;
    assert_eq!((code, body.as_str()), (200, "chunk 0\nchunk 1\nchunk 2\n"));
}
