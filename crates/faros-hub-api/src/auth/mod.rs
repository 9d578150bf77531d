//! Who is calling: the pluggable authentication seam of every authenticated route.
//!
//! [`Authenticator`] turns request headers into a [`Caller`] or a 401/503 Status. The hub builds a
//! [`Chain`] of: [`StaticTokens`] (kcp's token file, so a user's token works against both), an
//! [`OidcAuthenticator`] (bearer ID tokens of one issuer), and [`BearerTokenReview`] (asks kcp, so
//! ServiceAccounts and everything else kcp accepts work), wrapped in [`Admitting`] so that no door
//! serves a faros component's identity ([`admission`]). Tokens are never logged and never echoed
//! in a Status.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use faros_core::identity::Identity;
use faros_core::status::Status;
use faros_core::user::{UserInfo, split_service_account_username};
use futures::future::BoxFuture;
use http::HeaderMap;
use sha2::{Digest, Sha256};

use crate::auth::tokenreview::TokenReviewer;

pub mod admission;
pub mod chain;
pub mod oidc;
pub mod static_tokens;
pub mod tokenreview;

pub use admission::{Admitting, admits};
pub use chain::Chain;
pub use oidc::{OidcAuthenticator, OidcSettings};
pub use static_tokens::StaticTokens;

pub use faros_core::user::GROUP_AUTHENTICATED;

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
///
/// `uid` and `extra` are part of who the caller is, not decoration: a ServiceAccount's user name
/// repeats in every workspace and only kcp's cluster-name extra says which one it is
/// ([`faros_core::user`]). Every question the hub asks kcp about a caller carries all four.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Caller {
    pub user: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
    pub source: CredentialSource,
}

impl Caller {
    /// A caller as an authenticator reported it (`system:authenticated` added).
    pub fn new(user: UserInfo, source: CredentialSource) -> Self {
        Self {
            user: user.username,
            uid: user.uid,
            groups: with_authenticated(user.groups),
            extra: user.extra,
            source,
        }
    }

    /// The identity asserted to providers. Tenancy (org, workspace, cluster) comes with part 2.
    pub fn identity(&self) -> Identity {
        Identity {
            user: self.user.clone(),
            groups: self.groups.clone(),
            ..Default::default()
        }
    }

    /// The caller as `authentication.k8s.io/v1` `UserInfo`: what a SubjectAccessReview must carry.
    pub fn user_info(&self) -> UserInfo {
        UserInfo {
            username: self.user.clone(),
            uid: self.uid.clone(),
            groups: self.groups.clone(),
            extra: self.extra.clone(),
        }
    }

    /// What kind of principal this is, which decides the hub routes it may use ([`Principal`]).
    pub fn principal(&self) -> Principal {
        let Some((namespace, name)) = split_service_account_username(&self.user) else {
            return Principal::User;
        };
        let cluster = faros_core::user::cluster_name(&self.extra).map(str::to_string);
        Principal::ServiceAccount {
            cluster,
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }
}

/// The two kinds of principal the hub tells apart (see docs/hub-api.md, "Who may call what").
///
/// Users (static tokens, OIDC, kcp users) may use every authenticated route; kcp decides their
/// standing in each workspace. A ServiceAccount is a workload of one workspace: it may read the
/// catalog and act in workspaces where kcp itself lets it in (always asked with its cluster), but it
/// never owns organizations or manages memberships, and a ServiceAccount without a cluster (a user
/// name that only looks like one) is no one's member anywhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Principal {
    User,
    ServiceAccount {
        cluster: Option<String>,
        namespace: String,
        name: String,
    },
}

impl Principal {
    /// `Ok` for users; a 403 naming `what` for ServiceAccounts, which may never do it.
    pub fn require_user(&self, what: &str) -> Result<(), Status> {
        match self {
            Principal::User => Ok(()),
            Principal::ServiceAccount { namespace, name, .. } => Err(Status::forbidden(format!(
                "ServiceAccount {namespace}/{name} cannot {what}: only users can (see docs/hub-api.md, \
                 \"Who may call what\")"
            ))),
        }
    }
}

/// What one authenticator of a [`Chain`] says about a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not this authenticator's kind of credential: the chain asks the next one.
    NotMine,
    /// Shared: authenticators that cache callers hand out the cached one, not a copy.
    Accepted(Arc<Caller>),
    /// This authenticator's kind of credential, but not valid (or not checkable now): final.
    Rejected(Status),
}

/// A request's bearer token and its SHA-256, taken once per request: every authenticator of a
/// [`Chain`] that looks tokens up by digest (the token file's table, the TokenReview cache) is
/// handed this one instead of hashing the token again. Never printed: `Debug` shows neither.
#[derive(Clone, Copy)]
pub struct Bearer<'a> {
    token: &'a str,
    digest: [u8; 32],
}

impl<'a> Bearer<'a> {
    pub fn new(token: &'a str) -> Self {
        Self {
            token,
            digest: Sha256::digest(token.as_bytes()).into(),
        }
    }

    /// The bearer of `Authorization: Bearer <token>`, if any.
    pub fn from_headers(headers: &'a HeaderMap) -> Option<Self> {
        bearer_token(headers).map(Self::new)
    }

    pub fn token(&self) -> &'a str {
        self.token
    }

    /// SHA-256 of the token.
    pub fn digest(&self) -> &[u8; 32] {
        &self.digest
    }
}

impl std::fmt::Debug for Bearer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bearer(<redacted>)")
    }
}

/// Authenticates a request from its headers.
pub trait Authenticator: Send + Sync + 'static {
    fn authenticate<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Caller, Status>>;

    /// [`Self::authenticate`] with the caller shared: the proxies' hot path, where a copy of a
    /// cached caller per request is measurable. The default wraps `authenticate`.
    fn authenticate_shared<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Arc<Caller>, Status>> {
        Box::pin(async move { self.authenticate(headers).await.map(Arc::new) })
    }

    /// The answer inside a [`Chain`]. The default makes every answer final, which suits a fallback
    /// such as [`BearerTokenReview`]; authenticators that recognize their own credentials override it.
    fn verdict<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Verdict> {
        Box::pin(async move {
            match self.authenticate(headers).await {
                Ok(caller) => Verdict::Accepted(Arc::new(caller)),
                Err(status) => Verdict::Rejected(status),
            }
        })
    }

    /// [`Self::verdict`] on the request's `bearer`, already taken from `headers` and hashed by the
    /// [`Chain`]. Authenticators that look tokens up by digest override it; the default asks
    /// `verdict`.
    fn verdict_on<'a>(&'a self, headers: &'a HeaderMap, bearer: &'a Bearer<'a>) -> BoxFuture<'a, Verdict> {
        let _ = bearer;
        self.verdict(headers)
    }

    /// The verdict on `bearer` when it is at hand without waiting (a cache that holds it, with
    /// nothing due), else `None`: then the [`Chain`] asks [`Self::verdict_on`]. A cached caller
    /// then costs no future, which the proxies' hot path measures. Must agree with `verdict_on`.
    fn verdict_now(&self, bearer: &Bearer<'_>) -> Option<Verdict> {
        let _ = bearer;
        None
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
    settle_shared(verdict).map(Arc::unwrap_or_clone)
}

/// [`settle`], the caller shared.
pub(crate) fn settle_shared(verdict: Verdict) -> Result<Arc<Caller>, Status> {
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

impl BearerTokenReview {
    async fn review(&self, bearer: &Bearer<'_>) -> Result<Arc<Caller>, Status> {
        match self.reviewer.review_caller(&self.cluster, bearer).await {
            Ok(Some(caller)) => Ok(caller),
            Ok(None) => Err(invalid_token()),
            Err(e) => {
                tracing::warn!(error = %e, "cannot authenticate: TokenReview failed");
                Err(Status::unavailable(
                    "cannot authenticate right now: kcp did not answer the TokenReview",
                ))
            }
        }
    }
}

impl Authenticator for BearerTokenReview {
    fn authenticate<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Caller, Status>> {
        Box::pin(async move { self.authenticate_shared(headers).await.map(Arc::unwrap_or_clone) })
    }

    fn authenticate_shared<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Arc<Caller>, Status>> {
        Box::pin(async move {
            let bearer = Bearer::from_headers(headers).ok_or_else(missing_credentials)?;
            self.review(&bearer).await
        })
    }

    fn verdict_on<'a>(&'a self, _: &'a HeaderMap, bearer: &'a Bearer<'a>) -> BoxFuture<'a, Verdict> {
        Box::pin(async move {
            match self.review(bearer).await {
                Ok(caller) => Verdict::Accepted(caller),
                Err(status) => Verdict::Rejected(status),
            }
        })
    }

    fn verdict_now(&self, bearer: &Bearer<'_>) -> Option<Verdict> {
        Some(match self.reviewer.cached_caller(&self.cluster, bearer)? {
            Some(caller) => Verdict::Accepted(caller),
            None => Verdict::Rejected(invalid_token()),
        })
    }
}

/// Middleware: 401 unless the request authenticates (through the hub's [`Admitting`]
/// authenticator, so only as a caller the hub serves); the [`Caller`] goes into the extensions.
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
    use faros_core::user::EXTRA_CLUSTER_NAME;

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
    fn principals() {
        let caller = |user: &str, cluster: Option<&str>| Caller {
            user: user.into(),
            extra: cluster
                .map(|c| BTreeMap::from([(EXTRA_CLUSTER_NAME.to_string(), vec![c.to_string()])]))
                .unwrap_or_default(),
            ..Default::default()
        };
        let sa = |cluster: Option<&str>, ns: &str, name: &str| Principal::ServiceAccount {
            cluster: cluster.map(str::to_string),
            namespace: ns.into(),
            name: name.into(),
        };
        for (c, want) in [
            (caller("alice", None), Principal::User),
            // kcp's global form is a user name, not a ServiceAccount token's identity.
            (caller("system:kcp:serviceaccount:c1:default:x", None), Principal::User),
            (
                caller("system:serviceaccount:default:provider", Some("c1")),
                sa(Some("c1"), "default", "provider"),
            ),
            (
                caller("system:serviceaccount:default:provider", None),
                sa(None, "default", "provider"),
            ),
        ] {
            assert_eq!(c.principal(), want, "{c:?}");
        }
        assert!(Principal::User.require_user("create organizations").is_ok());
        let denied = sa(Some("c1"), "default", "provider")
            .require_user("create organizations")
            .unwrap_err();
        assert_eq!(denied.code, 403);
        assert!(
            denied
                .message
                .contains("ServiceAccount default/provider cannot create organizations")
        );
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
                username: "system:serviceaccount:default:deployer".into(),
                uid: "u-1".into(),
                groups: vec!["system:serviceaccounts".into(), GROUP_AUTHENTICATED.into()],
                extra: BTreeMap::from([(EXTRA_CLUSTER_NAME.into(), vec!["c1".into()])]),
            },
        );
        let authn = BearerTokenReview::new(Arc::new(reviewer), "root");
        let ok = authn.authenticate(&headers(Some("Bearer good"))).await.unwrap();
        // uid and extra survive: without the cluster-name extra the SA is a different principal.
        assert_eq!(
            ok,
            Caller {
                user: "system:serviceaccount:default:deployer".into(),
                uid: "u-1".into(),
                groups: vec!["system:serviceaccounts".into(), GROUP_AUTHENTICATED.into()],
                extra: BTreeMap::from([(EXTRA_CLUSTER_NAME.into(), vec!["c1".into()])]),
                source: CredentialSource::TokenReview,
            }
        );
        assert_eq!(
            ok.principal(),
            Principal::ServiceAccount {
                cluster: Some("c1".into()),
                namespace: "default".into(),
                name: "deployer".into()
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
