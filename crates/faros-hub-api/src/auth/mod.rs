//! Who is calling: the pluggable authentication seam of every authenticated route.
//!
//! [`Authenticator`] turns request headers into a [`Caller`] or a 401/503 Status. The hub builds a
//! [`Chain`] of: [`StaticTokens`] (kcp's token file, so a user's token works against both), an
//! [`OidcAuthenticator`] (bearer ID tokens of one issuer), and [`BearerTokenReview`] (asks kcp, so
//! ServiceAccounts and everything else kcp accepts work). Tokens are never logged and never echoed
//! in a Status.

use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use faros_core::identity::Identity;
use faros_core::status::Status;
use futures::future::BoxFuture;
use http::HeaderMap;

use crate::auth::tokenreview::TokenReviewer;

pub mod chain;
pub mod oidc;
pub mod static_tokens;
pub mod tokenreview;

pub use chain::Chain;
pub use oidc::{OidcAuthenticator, OidcSettings};
pub use static_tokens::StaticTokens;

/// Every authenticated caller is in this group (kube-apiserver adds it after any authenticator).
pub const GROUP_AUTHENTICATED: &str = "system:authenticated";

/// Which kind of credential authenticated a [`Caller`]. Handlers that need the credential itself
/// (the kubeconfig download echoing a static token) re-read the bearer from their request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CredentialSource {
    /// A line of the token file.
    StaticToken,
    /// An ID token of the configured OIDC issuer.
    Oidc,
    /// Whatever kcp accepted in a TokenReview (ServiceAccounts, kcp's own users).
    #[default]
    TokenReview,
}

/// An authenticated caller. Put into request extensions by [`require_caller`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Caller {
    pub user: String,
    pub groups: Vec<String>,
    pub source: CredentialSource,
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

/// What one authenticator of a [`Chain`] says about a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not this authenticator's kind of credential: the chain asks the next one.
    NotMine,
    Accepted(Caller),
    /// This authenticator's kind of credential, but not valid (or not checkable now): final.
    Rejected(Status),
}

/// Authenticates a request from its headers.
pub trait Authenticator: Send + Sync + 'static {
    fn authenticate<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Caller, Status>>;

    /// The answer inside a [`Chain`]. The default makes every answer final, which suits a fallback
    /// such as [`BearerTokenReview`]; authenticators that recognize their own credentials override it.
    fn verdict<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Verdict> {
        Box::pin(async move {
            match self.authenticate(headers).await {
                Ok(caller) => Verdict::Accepted(caller),
                Err(status) => Verdict::Rejected(status),
            }
        })
    }
}

/// Errors building an authenticator from configuration.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("token file {path}: {source}")]
    TokenFileRead {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("token file {path}: {source}")]
    TokenFile {
        path: PathBuf,
        #[source]
        source: faros_core::token_file::TokenFileError,
    },
    #[error("OIDC: {0}")]
    Oidc(String),
}

/// The bearer token of `Authorization: Bearer <token>`, if any.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    faros_core::bearer::token(headers.get(http::header::AUTHORIZATION)?.to_str().ok()?)
}

/// 401 for a request without credentials.
pub fn missing_credentials() -> Status {
    Status::unauthorized("no credentials: send \"Authorization: Bearer <token>\" with a kcp token")
}

/// 401 for a bearer token no authenticator accepts. Fixed text: a Status never echoes the token.
pub fn invalid_token() -> Status {
    Status::unauthorized("the bearer token is not valid")
}

/// `authenticate` in terms of `verdict`, for authenticators that can say [`Verdict::NotMine`].
pub(crate) fn settle(verdict: Verdict) -> Result<Caller, Status> {
    match verdict {
        Verdict::Accepted(caller) => Ok(caller),
        Verdict::Rejected(status) => Err(status),
        Verdict::NotMine => Err(invalid_token()),
    }
}

/// Adds `system:authenticated` unless present.
pub(crate) fn with_authenticated(mut groups: Vec<String>) -> Vec<String> {
    if !groups.iter().any(|g| g == GROUP_AUTHENTICATED) {
        groups.push(GROUP_AUTHENTICATED.to_string());
    }
    groups
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
                    source: CredentialSource::TokenReview,
                }),
                Ok(None) => Err(invalid_token()),
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
pub(crate) mod test_support {
    #![allow(clippy::unwrap_used)]
    use http::HeaderMap;

    pub fn headers(auth: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(a) = auth {
            h.insert(http::header::AUTHORIZATION, a.parse().unwrap());
        }
        h
    }

    pub fn bearer(token: &str) -> HeaderMap {
        headers(Some(&format!("Bearer {token}")))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::test_support::headers;
    use super::*;
    use crate::auth::tokenreview::{ReviewedUser, StaticReviewer};

    #[test]
    fn bearer_table() {
        for (value, want) in [
            (Some("Bearer abc"), Some("abc")),
            (Some("bearer abc "), Some("abc")),
            // kube-apiserver's rule (faros_core::bearer): two spaces carry the empty token.
            (Some("bearer  abc"), None),
            (Some("Basic abc"), None),
            (Some("Bearer "), None),
            (Some("Bearer"), None),
            (None, None),
        ] {
            assert_eq!(bearer_token(&headers(value)), want, "{value:?}");
        }
    }

    #[test]
    fn authenticated_group_is_added_once() {
        for (groups, want) in [
            (vec![], vec![GROUP_AUTHENTICATED]),
            (vec!["dev"], vec!["dev", GROUP_AUTHENTICATED]),
            (vec![GROUP_AUTHENTICATED, "dev"], vec![GROUP_AUTHENTICATED, "dev"]),
        ] {
            let groups: Vec<String> = groups.into_iter().map(String::from).collect();
            assert_eq!(with_authenticated(groups.clone()), want, "{groups:?}");
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
                groups: vec!["devs".into()],
                source: CredentialSource::TokenReview,
            }
        );
        assert_eq!(authn.authenticate(&headers(None)).await.unwrap_err().code, 401);
        assert_eq!(
            authn.authenticate(&headers(Some("Bearer bad"))).await.unwrap_err().code,
            401
        );
        assert_eq!(
            authn.verdict(&headers(Some("Bearer bad"))).await,
            Verdict::Rejected(invalid_token()),
            "a fallback's answers are final"
        );
    }
}
