//! Bearer tokens from kcp's token file (`--token-auth-file`), so a user's token works against both
//! kcp and the hub.
//!
//! Tokens are kept only as SHA-256 digests: a lookup hashes the presented token and finds the digest
//! in a map, so no secret is ever compared byte by byte (timing reveals at most something about a
//! digest, which says nothing about a token), and a heap dump holds no token.
//!
//! The file is re-read when its modification time or length changes. The check runs on the request
//! path, at most once per [`StaticTokens::check_every`] and by one request at a time (others go on
//! with the current tokens): authentication is async here, so the `stat` never blocks a worker, and
//! no background task has to be tied to the hub's lifetime (a router built for a test reloads too).
//! A token not in the table is checked against the file at once, whatever the interval: behind a
//! balancer a user's first request may reach a replica that has just reloaded and the next one a
//! replica that checked a moment before the token was added, which would refuse it for up to the
//! interval. Such a miss costs one `stat` (the file is read only when it changed). The same token
//! missing again within the interval waits for the periodic check instead: a caller whose token
//! only kcp knows (a ServiceAccount, a kcp or OIDC token) would otherwise send every request of
//! its through that `stat`, one blocking-pool round trip at a time under one lock (a third of the
//! throughput of the hub's backend proxy).
//! A bad edit is logged (file and line) and the previous tokens stay in force.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use faros_core::status::Status;
pub use faros_core::token_file::ReloadCounts;
use faros_core::token_file::{
    FileStamp, ReloadCounter, ReloadRefused, StaticToken, file_stamp, parse_reloaded, parse_token_file,
};
use futures::future::BoxFuture;
use http::HeaderMap;
use sha2::{Digest, Sha256};

use super::{AuthError, Authenticator, Bearer, Caller, CredentialSource, Verdict, bearer_token, settle};
use faros_core::user::UserInfo;

/// Default interval between checks of the token file.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Callers by token digest, shared: a hit hands out the caller, not a copy of it. A seeded
/// foldhash, not SipHash: the lookup runs on every request with a bearer.
type Table = HashMap<[u8; 32], Arc<Caller>, foldhash::fast::RandomState>;

struct Check {
    at: Instant,
    stamp: FileStamp,
}

/// Why a changed file was not applied.
#[derive(Debug, thiserror::Error)]
enum ReloadError {
    #[error("cannot read it: {0}")]
    Read(#[from] std::io::Error),
    #[error(transparent)]
    Refused(#[from] ReloadRefused),
}

/// Authenticates bearer tokens listed in a token file, reloading it when it changes.
pub struct StaticTokens {
    path: PathBuf,
    check_every: Duration,
    table: RwLock<Arc<Table>>,
    check: tokio::sync::Mutex<Check>,
    /// When the next periodic check is due, in nanoseconds since `epoch`: read without a lock, so
    /// the requests between two checks touch neither the check's lock nor the clock twice.
    due: AtomicU64,
    epoch: Instant,
    /// Digests of tokens the file was just checked for and did not hold, and when.
    misses: Mutex<HashMap<[u8; 32], Instant, foldhash::fast::RandomState>>,
    reloads: ReloadCounter,
}

/// Remembered misses at most; a flood of distinct unknown tokens clears the memo.
const MISSES_MAX: usize = 10_000;

impl std::fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticTokens")
            .field("path", &self.path)
            .field("tokens", &self.current().len())
            .finish()
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn table(tokens: Vec<StaticToken>) -> Table {
    tokens
        .into_iter()
        .map(|t| {
            let user = UserInfo {
                username: t.user,
                uid: t.uid,
                groups: t.groups,
                extra: Default::default(),
            };
            let caller = Caller::new(user, CredentialSource::StaticToken);
            (digest(&t.token), Arc::new(caller))
        })
        .collect()
}

impl StaticTokens {
    /// Reads and parses `path`; a missing or invalid file is an error (fail at start, loudly).
    pub fn load(path: impl Into<PathBuf>) -> Result<Self, AuthError> {
        let path = path.into();
        let read_err = |source| AuthError::TokenFileRead {
            path: path.clone(),
            source,
        };
        // Stamp before reading: an edit landing in between is then seen by the first check.
        std::fs::metadata(&path).map_err(read_err)?;
        let stamp = file_stamp(&path);
        let text = std::fs::read_to_string(&path).map_err(read_err)?;
        let tokens = parse_token_file(&text).map_err(|source| AuthError::TokenFile {
            path: path.clone(),
            source,
        })?;
        let epoch = Instant::now();
        let loaded = Self {
            table: RwLock::new(Arc::new(table(tokens))),
            check: tokio::sync::Mutex::new(Check { at: epoch, stamp }),
            due: AtomicU64::new(0),
            epoch,
            misses: Mutex::default(),
            path,
            check_every: CHECK_EVERY,
            reloads: ReloadCounter::default(),
        };
        loaded.set_due(epoch + CHECK_EVERY);
        Ok(loaded)
    }

    /// Checks the file for changes at most once per `every` (default [`CHECK_EVERY`]).
    pub fn check_every(mut self, every: Duration) -> Self {
        self.check_every = every;
        self.set_due(Instant::now() + every);
        self
    }

    fn nanos_since_epoch(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }

    fn set_due(&self, at: Instant) {
        self.due.store(self.nanos_since_epoch(at), Ordering::Relaxed);
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn reload_counts(&self) -> ReloadCounts {
        self.reloads.counts()
    }

    fn current(&self) -> Arc<Table> {
        self.table.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Re-reads the file if it changed since the last check and a check is due (`now`: whatever
    /// the interval).
    async fn refresh(&self, now: bool) {
        let mut check = if now {
            // A concurrent check may be reading the change this request needs: wait for it.
            self.check.lock().await
        } else {
            if self.nanos_since_epoch(Instant::now()) < self.due.load(Ordering::Relaxed) {
                return;
            }
            // One request checks; concurrent ones carry on with the tokens they have.
            let Ok(check) = self.check.try_lock() else {
                return;
            };
            if check.at.elapsed() < self.check_every {
                return;
            }
            check
        };
        check.at = Instant::now();
        self.set_due(check.at + self.check_every);
        let path = self.path.clone();
        let stamp = tokio::task::spawn_blocking(move || file_stamp(&path))
            .await
            .unwrap_or(None);
        if stamp == check.stamp {
            return;
        }
        check.stamp = stamp;
        match self.read().await {
            Ok(tokens) => {
                let users = tokens.len();
                *self.table.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(table(tokens));
                self.reloads.applied();
                tracing::info!(path = %self.path.display(), users, "token file reloaded");
            }
            Err(e) => {
                self.reloads.rejected();
                tracing::error!(path = %self.path.display(), error = %e, "token file not reloaded; keeping the previous tokens");
            }
        }
    }

    async fn read(&self) -> Result<Vec<StaticToken>, ReloadError> {
        let text = tokio::fs::read_to_string(&self.path).await?;
        Ok(parse_reloaded(&text)?)
    }

    /// The caller `token` authenticates as, if it is in the file.
    pub async fn lookup(&self, token: &str) -> Option<Caller> {
        self.lookup_digest(&digest(token)).await.map(Arc::unwrap_or_clone)
    }

    /// [`Self::lookup`] by the token's SHA-256 ([`Bearer::digest`]), the caller shared.
    pub async fn lookup_digest(&self, digest: &[u8; 32]) -> Option<Arc<Caller>> {
        self.refresh(false).await;
        let digest = *digest;
        if let Some(caller) = self.table.read().unwrap_or_else(|p| p.into_inner()).get(&digest) {
            return Some(caller.clone());
        }
        // Perhaps added since the last check (see the module doc): look at the file now, unless
        // this token missed within the interval (the periodic check then sees an addition).
        if self.missed_recently(&digest) {
            return None;
        }
        self.refresh(true).await;
        let found = self.current().get(&digest).cloned();
        if found.is_none() {
            let mut misses = self.misses.lock().unwrap_or_else(|p| p.into_inner());
            if misses.len() >= MISSES_MAX {
                misses.clear();
            }
            misses.insert(digest, Instant::now());
        }
        found
    }

    /// [`Self::lookup_digest`] when no check of the file is due: `Some(found)` for a listed token
    /// or one that missed within the interval, `None` when the file must be looked at first.
    fn lookup_now(&self, digest: &[u8; 32]) -> Option<Option<Arc<Caller>>> {
        if self.nanos_since_epoch(Instant::now()) >= self.due.load(Ordering::Relaxed) {
            return None;
        }
        if let Some(caller) = self.table.read().unwrap_or_else(|p| p.into_inner()).get(digest) {
            return Some(Some(caller.clone()));
        }
        self.missed_recently(digest).then_some(None)
    }

    fn missed_recently(&self, digest: &[u8; 32]) -> bool {
        let misses = self.misses.lock().unwrap_or_else(|p| p.into_inner());
        misses.get(digest).is_some_and(|at| at.elapsed() < self.check_every)
    }
}

impl Authenticator for StaticTokens {
    fn authenticate<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Caller, Status>> {
        Box::pin(async move {
            if bearer_token(headers).is_none() {
                return Err(super::missing_credentials());
            }
            settle(self.verdict(headers).await)
        })
    }

    /// A token not in the file is [`Verdict::NotMine`]: kcp may still know it (ServiceAccounts).
    fn verdict<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Verdict> {
        Box::pin(async move {
            let Some(bearer) = Bearer::from_headers(headers) else {
                return Verdict::NotMine;
            };
            self.verdict_on(headers, &bearer).await
        })
    }

    fn verdict_on<'a>(&'a self, _: &'a HeaderMap, bearer: &'a Bearer<'a>) -> BoxFuture<'a, Verdict> {
        Box::pin(async move {
            match self.lookup_digest(bearer.digest()).await {
                Some(caller) => Verdict::Accepted(caller),
                None => Verdict::NotMine,
            }
        })
    }

    fn verdict_now(&self, bearer: &Bearer<'_>) -> Option<Verdict> {
        Some(match self.lookup_now(bearer.digest())? {
            Some(caller) => Verdict::Accepted(caller),
            None => Verdict::NotMine,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::auth::test_support::{bearer, headers};
    use pretty_assertions::assert_eq;

    fn caller(user: &str, uid: &str, groups: &[&str]) -> Caller {
        Caller {
            user: user.into(),
            uid: uid.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            source: CredentialSource::StaticToken,
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn authenticates_listed_tokens_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.csv");
        std::fs::write(&path, "alice-token,alice,1,\"dev,ops\"\nbob-token,bob,2\n").unwrap();
        let tokens = StaticTokens::load(&path).unwrap();
        let cases = [
            (
                "alice-token",
                Some(caller("alice", "1", &["dev", "ops", "system:authenticated"])),
            ),
            ("bob-token", Some(caller("bob", "2", &["system:authenticated"]))),
            ("alice-token2", None),
            ("alice-toke", None),
            ("ALICE-TOKEN", None),
        ];
        for (token, want) in cases {
            assert_eq!(tokens.lookup(token).await, want, "{token}");
        }
        assert_eq!(tokens.authenticate(&bearer("alice-token")).await.unwrap().user, "alice");
        let unknown = tokens.authenticate(&bearer("nobody-token")).await.unwrap_err();
        assert_eq!((unknown.code, unknown.message.contains("nobody")), (401, false));
        assert_eq!(tokens.authenticate(&headers(None)).await.unwrap_err().code, 401);
        assert_eq!(tokens.verdict(&bearer("nobody-token")).await, Verdict::NotMine);
        assert!(!format!("{tokens:?}").contains("alice-token"));
    }

    /// Behind a balancer the replica a user's next request reaches may have checked the file just
    /// before the user was added: a token missing from the table is looked for in the file at once.
    #[tokio::test]
    async fn a_token_added_to_the_file_is_accepted_at_its_first_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.csv");
        std::fs::write(&path, "alice-token,alice,1\n").unwrap();
        let tokens = StaticTokens::load(&path)
            .unwrap()
            .check_every(Duration::from_secs(3600));
        assert_eq!(tokens.lookup("nobody-token").await, None);
        std::fs::write(&path, "alice-token,alice,1\ncarol-token,carol,3\n").unwrap();
        assert_eq!(tokens.lookup("carol-token").await.map(|c| c.user), Some("carol".into()));
        assert_eq!(tokens.reload_counts().applied, 1);
        // A miss against an unchanged file reads nothing.
        assert_eq!(tokens.lookup("stranger-token").await, None);
        assert_eq!(tokens.lookup("alice-token").await.map(|c| c.user), Some("alice".into()));
        assert_eq!(tokens.reload_counts().applied, 1);
    }

    /// A token only kcp knows misses the file on every request: after one miss it waits for the
    /// periodic check instead of costing a `stat` each time, while a token not seen before is
    /// still looked for at once.
    #[tokio::test]
    async fn a_repeated_miss_waits_for_the_periodic_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.csv");
        std::fs::write(&path, "alice-token,alice,1\n").unwrap();
        let tokens = StaticTokens::load(&path)
            .unwrap()
            .check_every(Duration::from_secs(3600));
        assert_eq!(tokens.lookup("kcp-token").await, None);
        std::fs::write(&path, "alice-token,alice,1\nkcp-token,kim,2\ncarol-token,carol,3\n").unwrap();
        assert_eq!(
            tokens.lookup("kcp-token").await,
            None,
            "a repeated miss within the interval"
        );
        assert_eq!(tokens.reload_counts().applied, 0);
        // A first use is looked for at once; the reload brings the other addition along.
        assert_eq!(tokens.lookup("carol-token").await.map(|c| c.user), Some("carol".into()));
        assert_eq!(tokens.lookup("kcp-token").await.map(|c| c.user), Some("kim".into()));
        assert_eq!(tokens.reload_counts().applied, 1);
        // With no interval, every miss looks at the file.
        let eager = StaticTokens::load(&path).unwrap().check_every(Duration::ZERO);
        assert_eq!(eager.lookup("dave-token").await, None);
        std::fs::write(&path, "dave-token,dave,4\n").unwrap();
        assert_eq!(eager.lookup("dave-token").await.map(|c| c.user), Some("dave".into()));
    }

    #[test]
    fn load_fails_loudly() {
        let dir = tempfile::tempdir().unwrap();
        let missing = StaticTokens::load(dir.path().join("absent.csv")).unwrap_err();
        assert!(matches!(missing, AuthError::TokenFileRead { .. }), "{missing}");
        let path = dir.path().join("bad.csv");
        std::fs::write(&path, "t1,alice,1\nt2,bob\n").unwrap();
        let bad = StaticTokens::load(&path).unwrap_err();
        assert_eq!(
            bad.to_string(),
            format!(
                "token file {}: token file line 2: must have at least 3 columns (token, user name, user uid), found 2",
                path.display()
            )
        );
    }
}
