//! Tenants created the way users create them: organizations and team workspaces through the hub
//! API's tenancy routes (`POST /api/orgs`, `POST /api/orgs/{org}/workspaces`), with a bounded number
//! of requests in flight, and memberships granted through its member routes. The hub answers a
//! creation once kcp made the workspace Ready, so the answers are the readiness signal. Measuring is
//! the caller's job.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};

use super::plan::TenantStep;
use crate::bench::faros::Faros;

/// Creations in flight at once: enough to keep kcp and the hub busy on two cores without queueing
/// thousands of requests behind each other.
pub(super) const IN_FLIGHT: usize = 32;

/// How often a creation the hub answered 503 (kcp still initializing the workspace) is sent again.
const RETRIES: usize = 20;

#[derive(Debug, thiserror::Error)]
pub(super) enum TenantError {
    #[error("{method} {path}: {source}")]
    Http {
        method: &'static str,
        path: String,
        source: reqwest::Error,
    },
    #[error("{method} {path}: {status} {body}")]
    Refused {
        method: &'static str,
        path: String,
        status: reqwest::StatusCode,
        body: String,
    },
}

pub(super) fn org_name(i: usize) -> String {
    format!("org-{i:05}")
}

pub(super) fn workspace_name(j: usize) -> String {
    format!("ws-{j:03}")
}

/// Runs `jobs` with at most `in_flight` of them pending; the first error ends the run.
pub(super) async fn bounded<E>(
    jobs: impl Iterator<Item = impl Future<Output = Result<(), E>>>,
    in_flight: usize,
) -> Result<(), E> {
    let mut pending = futures::stream::iter(jobs).buffer_unordered(in_flight);
    while let Some(done) = pending.next().await {
        done?;
    }
    Ok(())
}

/// The hub API as one caller (a bearer token) sees it.
pub(super) struct HubClient<'a> {
    pub f: &'a Faros,
    pub token: &'a str,
    /// 503 answers sent again, over the client's life.
    pub retries: AtomicUsize,
}

impl<'a> HubClient<'a> {
    pub fn new(f: &'a Faros, token: &'a str) -> Self {
        Self {
            f,
            token,
            retries: AtomicUsize::new(0),
        }
    }

    /// Sends `body`; a 503 (the new workspace was not Ready within the hub's wait) is sent again, and
    /// a 409 after such a retry means the earlier attempt finished the creation.
    async fn send(&self, method: reqwest::Method, path: String, body: Value) -> Result<(), TenantError> {
        let name = if method == reqwest::Method::POST { "POST" } else { "PUT" };
        let mut retried = false;
        for attempt in 0..=RETRIES {
            let resp = self
                .f
                .http
                .request(method.clone(), format!("{}{path}", self.f.hub))
                .bearer_auth(self.token)
                .json(&body)
                .send()
                .await
                .map_err(|source| TenantError::Http {
                    method: name,
                    path: path.clone(),
                    source,
                })?;
            let status = resp.status();
            // Read the body: dropping it cancels the HTTP/2 stream (see `Faros::post`).
            let text = resp.text().await.unwrap_or_default();
            if status.is_success() || (retried && status == reqwest::StatusCode::CONFLICT) {
                return Ok(());
            }
            if status != reqwest::StatusCode::SERVICE_UNAVAILABLE || attempt == RETRIES {
                return Err(TenantError::Refused {
                    method: name,
                    path,
                    status,
                    body: text,
                });
            }
            retried = true;
            self.retries.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        unreachable!("the last attempt returns")
    }

    /// Creates the step's organizations, then their team workspaces, `IN_FLIGHT` at a time.
    pub async fn create(&self, step: &TenantStep) -> Result<(), TenantError> {
        let orgs = step
            .orgs
            .clone()
            .map(|i| self.send(reqwest::Method::POST, "/api/orgs".into(), json!({"name": org_name(i)})));
        bounded(orgs, IN_FLIGHT).await?;
        let workspaces = step
            .orgs
            .clone()
            .flat_map(|i| (0..step.per_org).map(move |j| (i, j)))
            .map(|(i, j)| {
                self.send(
                    reqwest::Method::POST,
                    format!("/api/orgs/{}/workspaces", org_name(i)),
                    json!({"name": workspace_name(j)}),
                )
            });
        bounded(workspaces, IN_FLIGHT).await
    }

    /// Makes `user` a member of organization `org` (and through it of nothing else: team workspaces
    /// only inherit org admins).
    pub async fn grant_org(&self, org: usize, user: &str) -> Result<(), TenantError> {
        let path = format!("/api/orgs/{}/members/{user}", org_name(org));
        self.send(reqwest::Method::PUT, path, json!({"role": "member"})).await
    }

    /// Makes `user` a member of team workspace `ws` of organization `org`.
    pub async fn grant_workspace(&self, org: usize, ws: usize, user: &str) -> Result<(), TenantError> {
        let path = format!(
            "/api/orgs/{}/workspaces/{}/members/{user}",
            org_name(org),
            workspace_name(ws)
        );
        self.send(reqwest::Method::PUT, path, json!({"role": "member"})).await
    }
}
