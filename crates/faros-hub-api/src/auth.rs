//! Who is calling: the pluggable authentication seam of every authenticated route.
//!
//! [`Authenticator`] turns request headers into a [`Caller`] or a 401/503 Status. The one
//! implementation for now, [`BearerTokenReview`], asks kcp (TokenReview) about the bearer, so
//! static-token users and ServiceAccounts work; browser sessions and OIDC plug in here later
//! (hub API part 2) without touching the routes.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use faros_core::identity::Identity;
use faros_core::status::Status;
use futures::future::BoxFuture;
use http::HeaderMap;

use crate::tokenreview::TokenReviewer;

/// An authenticated caller. Put into request extensions by [`require_caller`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Caller {
    pub user: String,
    pub groups: Vec<String>,
}

impl Caller {
    /// The identity asserted to providers. Tenancy (org, workspace, cluster) comes with part 2.
    pub fn identity(&self) -> Identity {
        Identity {
            user: self.user.clone(),
            groups: self.groups.clone(),
            ..Default::default()
        }
    }
}

/// Authenticates a request from its headers.
pub trait Authenticator: Send + Sync + 'static {
    fn authenticate<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Caller, Status>>;
}

/// The bearer token of `Authorization: Bearer <token>`, if any.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// 401 for a request without credentials.
pub fn missing_credentials() -> Status {
    Status::unauthorized("no credentials: send \"Authorization: Bearer <token>\" with a kcp token")
}

/// Bearer tokens reviewed by kcp in `cluster` (default `root`).
pub struct BearerTokenReview {
    reviewer: Arc<dyn TokenReviewer>,
    cluster: String,
}

impl BearerTokenReview {
    pub fn new(reviewer: Arc<dyn TokenReviewer>, cluster: impl Into<String>) -> Self {
        Self {
            reviewer,
            cluster: cluster.into(),
        }
    }
}

impl Authenticator for BearerTokenReview {
    fn authenticate<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Caller, Status>> {
        Box::pin(async move {
            let token = bearer_token(headers).ok_or_else(missing_credentials)?;
            match self.reviewer.review(&self.cluster, token).await {
                Ok(Some(user)) => Ok(Caller {
                    user: user.username,
                    groups: user.groups,
                }),
                Ok(None) => Err(Status::unauthorized("the bearer token is not valid")),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot authenticate: TokenReview failed");
                    Err(Status::unavailable(
                        "cannot authenticate right now: kcp did not answer the TokenReview",
                    ))
                }
            }
        })
    }
}

/// Middleware: 401 unless the request authenticates; the [`Caller`] goes into the extensions.
pub async fn require_caller(State(authn): State<Arc<dyn Authenticator>>, mut req: Request, next: Next) -> Response {
    match authn.authenticate(req.headers()).await {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(status) => status.into_response(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::tokenreview::{ReviewedUser, StaticReviewer};

    fn headers(auth: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(a) = auth {
            h.insert(http::header::AUTHORIZATION, a.parse().unwrap());
        }
        h
    }

    #[test]
    fn bearer_table() {
        for (value, want) in [
            (Some("Bearer abc"), Some("abc")),
            (Some("bearer  abc "), Some("abc")),
            (Some("Basic abc"), None),
            (Some("Bearer "), None),
            (Some("Bearer"), None),
            (None, None),
        ] {
            assert_eq!(bearer_token(&headers(value)), want, "{value:?}");
        }
    }

    #[tokio::test]
    async fn bearer_token_review_outcomes() {
        let reviewer = StaticReviewer::default().with(
            "root",
            "good",
            ReviewedUser {
                username: "alice".into(),
                groups: vec!["devs".into()],
                ..Default::default()
            },
        );
        let authn = BearerTokenReview::new(Arc::new(reviewer), "root");
        let ok = authn.authenticate(&headers(Some("Bearer good"))).await.unwrap();
        assert_eq!(
            ok,
            Caller {
                user: "alice".into(),
                groups: vec!["devs".into()]
            }
        );
        assert_eq!(authn.authenticate(&headers(None)).await.unwrap_err().code, 401);
        assert_eq!(
            authn.authenticate(&headers(Some("Bearer bad"))).await.unwrap_err().code,
            401
        );
    }
}
