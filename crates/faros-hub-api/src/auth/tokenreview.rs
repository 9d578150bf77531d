//! Asking kcp who a bearer token belongs to (TokenReview), with a short cache.
//!
//! Heartbeats and user requests both authenticate this way, so a static-token user, a
//! ServiceAccount and (later) an OIDC user are whatever kcp says they are. The cache keeps a hot
//! heartbeat or proxy path from costing a kcp round trip per request; it keys on a SHA-256 of the
//! token so tokens never sit in memory longer than the request that brought them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use faros_core::client::ClientFactory;
use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use kube::Api;
use kube::api::PostParams;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

pub use faros_core::user::EXTRA_CLUSTER_NAME;

/// An authenticated user, as kcp reported it (uid and extra included: see [`faros_core::user`]).
pub type ReviewedUser = faros_core::user::UserInfo;

/// Why a review could not be done (not: why a token was rejected).
#[derive(Debug, Clone, thiserror::Error)]
#[error("TokenReview in {cluster} failed: {message}")]
pub struct ReviewError {
    pub cluster: String,
    pub message: String,
}

/// Reviews tokens; `Ok(None)` means "not authenticated".
pub trait TokenReviewer: Send + Sync + 'static {
    fn review<'a>(
        &'a self,
        cluster: &'a str,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<ReviewedUser>, ReviewError>>;
}

/// Posts `TokenReview`s to kcp at `/clusters/<cluster>`.
#[derive(Clone, Debug)]
pub struct KubeTokenReviewer {
    factory: ClientFactory,
}

impl KubeTokenReviewer {
    pub fn new(factory: ClientFactory) -> Self {
        Self { factory }
    }
}

impl TokenReviewer for KubeTokenReviewer {
    fn review<'a>(
        &'a self,
        cluster: &'a str,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<ReviewedUser>, ReviewError>> {
        Box::pin(async move {
            let err = |message: String| ReviewError {
                cluster: cluster.to_string(),
                message,
            };
            let client = self.factory.cluster(cluster).map_err(|e| err(e.to_string()))?;
            let api: Api<TokenReview> = Api::all(client);
            let review = TokenReview {
                spec: TokenReviewSpec {
                    token: token.to_string(),
                    audiences: None,
                },
                ..Default::default()
            };
            let reviewed = api
                .create(&PostParams::default(), &review)
                .await
                .map_err(|e| err(e.to_string()))?;
            let Some(status) = reviewed.status.filter(|s| s.authenticated == Some(true)) else {
                return Ok(None);
            };
            let user = status.user.unwrap_or_default();
            Ok(Some(ReviewedUser {
                username: user.username.unwrap_or_default(),
                uid: user.uid.unwrap_or_default(),
                groups: user.groups.unwrap_or_default(),
                extra: user.extra.unwrap_or_default(),
            }))
        })
    }
}

/// Cache lifetimes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSettings {
    pub authenticated_ttl: Duration,
    /// Short, so a token that just became valid (a fresh ServiceAccount) is not locked out long.
    pub rejected_ttl: Duration,
    pub max_entries: usize,
}

impl Default for CacheSettings {
    fn default() -> Self {
        Self {
            authenticated_ttl: Duration::from_secs(10),
            rejected_ttl: Duration::from_secs(2),
            max_entries: 10_000,
        }
    }
}

/// SHA-256 of (cluster, NUL, token): a cluster name has no NUL, so distinct pairs never share an
/// input, and a lookup needs no allocation.
type CacheKey = [u8; 32];

fn cache_key(cluster: &str, token: &str) -> CacheKey {
    let mut h = Sha256::new();
    h.update(cluster.as_bytes());
    h.update([0u8]);
    h.update(token.as_bytes());
    h.finalize().into()
}

/// A caching wrapper around any reviewer. Errors are never cached.
pub struct CachedReviewer<R> {
    inner: R,
    settings: CacheSettings,
    entries: Mutex<HashMap<CacheKey, (Instant, Option<ReviewedUser>)>>,
}

impl<R> CachedReviewer<R> {
    pub fn new(inner: R, settings: CacheSettings) -> Self {
        Self {
            inner,
            settings,
            entries: Mutex::default(),
        }
    }
}

impl<R: TokenReviewer> TokenReviewer for CachedReviewer<R> {
    fn review<'a>(
        &'a self,
        cluster: &'a str,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<ReviewedUser>, ReviewError>> {
        Box::pin(async move {
            let key = cache_key(cluster, token);
            let now = Instant::now();
            if let Some((expires, user)) = self.entries.lock().unwrap_or_else(|p| p.into_inner()).get(&key)
                && *expires > now
            {
                return Ok(user.clone());
            }
            let user = self.inner.review(cluster, token).await?;
            let ttl = if user.is_some() {
                self.settings.authenticated_ttl
            } else {
                self.settings.rejected_ttl
            };
            let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            if entries.len() >= self.settings.max_entries {
                entries.retain(|_, (expires, _)| *expires > now);
                if entries.len() >= self.settings.max_entries {
                    // Still full of live entries: start over rather than grow without bound.
                    entries.clear();
                }
            }
            entries.insert(key, (now + ttl, user.clone()));
            Ok(user)
        })
    }
}

/// A reviewer with a fixed table, for tests and for wiring without kcp.
#[derive(Clone, Debug, Default)]
pub struct StaticReviewer {
    /// (cluster or `*`, token) → user.
    pub tokens: Arc<Mutex<Vec<(String, String, ReviewedUser)>>>,
    pub calls: Arc<std::sync::atomic::AtomicUsize>,
}

impl StaticReviewer {
    pub fn with(self, cluster: &str, token: &str, user: ReviewedUser) -> Self {
        self.tokens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((cluster.into(), token.into(), user));
        self
    }
}

impl TokenReviewer for StaticReviewer {
    fn review<'a>(
        &'a self,
        cluster: &'a str,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<ReviewedUser>, ReviewError>> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let found = self
            .tokens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(c, t, _)| (c == cluster || c == "*") && t == token)
            .map(|(_, _, u)| u.clone());
        Box::pin(async move { Ok(found) })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[tokio::test(start_paused = true)]
    async fn cache_hits_expire_and_separate_clusters() {
        let alice = ReviewedUser {
            username: "alice".into(),
            ..Default::default()
        };
        let backing = StaticReviewer::default().with("c1", "t", alice.clone());
        let calls = backing.calls.clone();
        let cached = CachedReviewer::new(backing, CacheSettings::default());
        assert_eq!(cached.review("c1", "t").await.unwrap(), Some(alice.clone()));
        assert_eq!(cached.review("c1", "t").await.unwrap(), Some(alice.clone()));
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        // Same token, other cluster: a separate question.
        assert_eq!(cached.review("c2", "t").await.unwrap(), None);
        assert_eq!(calls.load(Ordering::Relaxed), 2);
        // Rejections expire sooner than acceptances.
        tokio::time::advance(Duration::from_secs(3)).await;
        cached.review("c2", "t").await.unwrap();
        cached.review("c1", "t").await.unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), 3);
        tokio::time::advance(Duration::from_secs(8)).await;
        cached.review("c1", "t").await.unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), 4);
    }
}
