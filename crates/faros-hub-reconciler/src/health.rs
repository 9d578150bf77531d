//! `/healthz` (the process is up), `/readyz` (bootstrap done and the election has decided) and
//! `/metrics` (OpenMetrics text).

use std::sync::Arc;

use axum::Router;
use axum::extract::State as AxumState;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::leader::Role;
use crate::state::State;

/// The health and metrics routes over `state`; mount it on its own listener or an existing router.
pub fn router(state: Arc<State>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state)
}

async fn readyz(AxumState(state): AxumState<Arc<State>>) -> Response {
    if !state.is_bootstrapped() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "bootstrapping the faros workspace tree\n",
        )
            .into_response();
    }
    match state.role() {
        Role::Starting => (StatusCode::SERVICE_UNAVAILABLE, "waiting for the leader election\n").into_response(),
        Role::Leader => (StatusCode::OK, "ok: leader\n").into_response(),
        Role::Standby { .. } => (StatusCode::OK, "ok: standby\n").into_response(),
    }
}

async fn metrics(AxumState(state): AxumState<Arc<State>>) -> Response {
    state.metrics.response()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    async fn get_path(state: &Arc<State>, path: &str) -> (StatusCode, String) {
        let req = axum::http::Request::get(path).body(axum::body::Body::empty()).unwrap();
        let resp = router(state.clone()).oneshot(req).await.unwrap();
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn readiness_follows_bootstrap_and_election() {
        let state = Arc::new(State::new(crate::metrics::Metrics::new()));
        assert_eq!(get_path(&state, "/healthz").await, (StatusCode::OK, "ok".into()));
        assert_eq!(
            get_path(&state, "/readyz").await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "bootstrapping the faros workspace tree\n".into()
            )
        );
        state.set_bootstrapped();
        assert_eq!(
            get_path(&state, "/readyz").await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "waiting for the leader election\n".into()
            )
        );
        state.role.send_replace(Role::Standby {
            holder: Some("other".into()),
        });
        assert_eq!(
            get_path(&state, "/readyz").await,
            (StatusCode::OK, "ok: standby\n".into())
        );
        state.role.send_replace(Role::Leader);
        assert_eq!(
            get_path(&state, "/readyz").await,
            (StatusCode::OK, "ok: leader\n".into())
        );
        let (code, text) = get_path(&state, "/metrics").await;
        assert_eq!(code, StatusCode::OK);
        assert!(text.contains("faros_hub_reconciler_bootstrapped 1"), "{text}");
    }
}
