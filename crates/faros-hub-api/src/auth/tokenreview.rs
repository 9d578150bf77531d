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
use tokio::time::Instant;

use super::{Bearer, Caller, CredentialSource};

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

    /// The [`Caller`] `bearer` authenticates as in `cluster`, shared: a cache hands out the caller
    /// it keeps, and looks it up by the digest the request's [`Bearer`] already carries. The
    /// default reviews and builds a new caller.
    fn review_caller<'a>(
        &'a self,
        cluster: &'a str,
        bearer: &'a Bearer<'a>,
    ) -> BoxFuture<'a, Result<Option<Arc<Caller>>, ReviewError>> {
        Box::pin(async move {
            let user = self.review(cluster, bearer.token()).await?;
            Ok(user.map(|u| Arc::new(Caller::new(u, CredentialSource::TokenReview))))
        })
    }

    /// [`Self::review_caller`]'s answer when a cache holds it unexpired (`Some(None)`: a cached
    /// rejection), else `None`. The default has no cache.
    fn cached_caller(&self, cluster: &str, bearer: &Bearer<'_>) -> Option<Option<Arc<Caller>>> {
        let _ = (cluster, bearer);
        None
    }
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

/// A cached answer: the user as kcp reported it (heartbeats read that) and the caller made of it
/// (the authenticated routes read that), both shared, or `None` for a rejected token.
#[derive(Clone)]
struct Answer {
    expires: Instant,
    reviewed: Option<(Arc<ReviewedUser>, Arc<Caller>)>,
}

/// A caching wrapper around any reviewer. Errors are never cached.
///
/// Entries are keyed by the token's SHA-256 (the same digest as [`Bearer::digest`], so an
/// authentication hashes the token once) and then by cluster: the same token is a separate
/// question in each cluster. Clusters per digest are few (usually one), hence a list.
pub struct CachedReviewer<R> {
    inner: R,
    settings: CacheSettings,
    entries: Mutex<Entries>,
}

/// One token's answers, by cluster.
type ByCluster = Vec<(Box<str>, Answer)>;

#[derive(Default)]
struct Entries {
    by_digest: HashMap<[u8; 32], ByCluster, foldhash::fast::RandomState>,
    /// Answers held, over all digests and clusters.
    len: usize,
}

impl Entries {
    fn get(&self, digest: &[u8; 32], cluster: &str, now: Instant) -> Option<&Answer> {
        let answers = self.by_digest.get(digest)?;
        let (_, answer) = answers.iter().find(|(c, _)| &**c == cluster)?;
        (answer.expires > now).then_some(answer)
    }

    fn insert(&mut self, digest: [u8; 32], cluster: &str, answer: Answer, max: usize, now: Instant) {
        if self.len >= max {
            self.by_digest.retain(|_, answers| {
                answers.retain(|(_, a)| a.expires > now);
                !answers.is_empty()
            });
            self.len = self.by_digest.values().map(Vec::len).sum();
            if self.len >= max {
                // Still full of live entries: start over rather than grow without bound.
                self.by_digest.clear();
                self.len = 0;
            }
        }
        let answers = self.by_digest.entry(digest).or_default();
        match answers.iter_mut().find(|(c, _)| &**c == cluster) {
            Some((_, old)) => *old = answer,
            None => {
                answers.push((cluster.into(), answer));
                self.len += 1;
            }
        }
    }
}

impl<R> CachedReviewer<R> {
    pub fn new(inner: R, settings: CacheSettings) -> Self {
        Self {
            inner,
            settings,
            entries: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<R: TokenReviewer> CachedReviewer<R> {
    /// The cached answer for `bearer` in `cluster`, asking `inner` on a miss or an expired entry.
    async fn answer(&self, cluster: &str, bearer: &Bearer<'_>) -> Result<Answer, ReviewError> {
        let now = Instant::now();
        if let Some(answer) = self.lock().get(bearer.digest(), cluster, now) {
            return Ok(answer.clone());
        }
        let user = self.inner.review(cluster, bearer.token()).await?;
        let (ttl, reviewed) = match user {
            Some(user) => {
                let caller = Arc::new(Caller::new(user.clone(), CredentialSource::TokenReview));
                (self.settings.authenticated_ttl, Some((Arc::new(user), caller)))
            }
            None => (self.settings.rejected_ttl, None),
        };
        let answer = Answer {
            expires: now + ttl,
            reviewed,
        };
        self.lock().insert(
            *bearer.digest(),
            cluster,
            answer.clone(),
            self.settings.max_entries,
            now,
        );
        Ok(answer)
    }
}

impl<R: TokenReviewer> TokenReviewer for CachedReviewer<R> {
    fn review<'a>(
        &'a self,
        cluster: &'a str,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<ReviewedUser>, ReviewError>> {
        Box::pin(async move {
            let answer = self.answer(cluster, &Bearer::new(token)).await?;
            Ok(answer.reviewed.map(|(user, _)| Arc::unwrap_or_clone(user)))
        })
    }

    fn review_caller<'a>(
        &'a self,
        cluster: &'a str,
        bearer: &'a Bearer<'a>,
    ) -> BoxFuture<'a, Result<Option<Arc<Caller>>, ReviewError>> {
        Box::pin(async move {
            let answer = self.answer(cluster, bearer).await?;
            Ok(answer.reviewed.map(|(_, caller)| caller))
        })
    }

    fn cached_caller(&self, cluster: &str, bearer: &Bearer<'_>) -> Option<Option<Arc<Caller>>> {
        let lock = self.lock();
        let answer = lock.get(bearer.digest(), cluster, Instant::now())?;
        Some(answer.reviewed.as_ref().map(|(_, caller)| caller.clone()))
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

    #[tokio::test(start_paused = true)]
    async fn answers_at_hand_are_the_cached_ones_only() {
        let alice = ReviewedUser {
            username: "alice".into(),
            ..Default::default()
        };
        let cached = CachedReviewer::new(
            StaticReviewer::default().with("c1", "t", alice),
            CacheSettings::default(),
        );
        let (good, bad) = (Bearer::new("t"), Bearer::new("nope"));
        // Nothing reviewed yet: nothing at hand, in either cluster.
        assert!(cached.cached_caller("c1", &good).is_none());
        assert!(cached.cached_caller("c1", &bad).is_none());
        let reviewed = cached.review_caller("c1", &good).await.unwrap().unwrap();
        cached.review_caller("c1", &bad).await.unwrap();
        // The same shared caller, and the cached rejection, without a review.
        let at_hand = cached.cached_caller("c1", &good).unwrap().unwrap();
        assert!(Arc::ptr_eq(&reviewed, &at_hand));
        assert_eq!(cached.cached_caller("c1", &bad).map(|c| c.is_none()), Some(true));
        assert!(cached.cached_caller("c2", &good).is_none());
        // Expired answers are not at hand: the next question reviews again.
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert!(cached.cached_caller("c1", &good).is_none());
        assert!(cached.cached_caller("c1", &bad).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn cached_callers_are_shared_with_the_reviews() {
        let alice = ReviewedUser {
            username: "alice".into(),
            groups: vec!["dev".into()],
            ..Default::default()
        };
        let backing = StaticReviewer::default().with("c1", "t", alice);
        let calls = backing.calls.clone();
        let cached = CachedReviewer::new(backing, CacheSettings::default());
        let bearer = Bearer::new("t");
        let first = cached.review_caller("c1", &bearer).await.unwrap().unwrap();
        let again = cached.review_caller("c1", &bearer).await.unwrap().unwrap();
        assert!(Arc::ptr_eq(&first, &again), "a hit hands out the cached caller");
        assert_eq!(
            (first.user.as_str(), first.groups.clone(), first.source),
            (
                "alice",
                vec!["dev".to_string(), crate::auth::GROUP_AUTHENTICATED.to_string()],
                CredentialSource::TokenReview
            )
        );
        // Reviews (heartbeats) and callers (authenticated routes) read the same entries.
        let user = cached.review("c1", "t").await.unwrap().unwrap();
        assert_eq!(user.username, "alice");
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        assert_eq!(cached.review_caller("c2", &bearer).await.unwrap(), None);
        assert_eq!(cached.review_caller("c1", &Bearer::new("u")).await.unwrap(), None);
        assert_eq!(calls.load(Ordering::Relaxed), 3);
        tokio::time::advance(Duration::from_secs(11)).await;
        let renewed = cached.review_caller("c1", &bearer).await.unwrap().unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), 4);
        assert!(!Arc::ptr_eq(&first, &renewed), "an expired entry is asked again");
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_cache_drops_expired_entries_then_starts_over() {
        let backing = StaticReviewer::default();
        let calls = backing.calls.clone();
        let settings = CacheSettings {
            max_entries: 2,
            ..Default::default()
        };
        let cached = CachedReviewer::new(backing, settings);
        for token in ["a", "b"] {
            cached.review("c", token).await.unwrap();
        }
        // Both live: a third entry clears the cache, so "a" is asked again.
        cached.review("c", "x").await.unwrap();
        cached.review("c", "a").await.unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), 4);
        assert_eq!(cached.lock().len, 2);
        // Expired ones are dropped first: the live "x" stays.
        tokio::time::advance(Duration::from_secs(1)).await;
        cached.review("c", "x").await.unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), 4);
        tokio::time::advance(Duration::from_millis(1500)).await;
        cached.review("c", "y").await.unwrap();
        assert_eq!(cached.lock().len, 1);
    }
}
