//! Bearer token → identity: the admin token, static tokens and ServiceAccount JWTs.
//!
//! Static and admin tokens are kept only as SHA-256 digests, so a lookup never compares secrets
//! byte by byte and a heap dump does not reveal them. Nothing here logs a token. The static tokens
//! can be replaced while serving ([`Authenticator::reload_static_tokens`]) when the token file
//! changes; the server watches the file.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use faros_core::token_file::{ReloadCounter, ReloadRefused, parse_reloaded};
pub use faros_core::token_file::{ReloadCounts, generate_token};
use sha2::{Digest, Sha256};

use super::service_account::{SaClaims, ServiceAccountTokens};
use super::token_file::{StaticToken, TokenFileError, user_info};
use super::{GROUP_AUTHENTICATED, GROUP_MASTERS, UserInfo};

/// The user the admin token authenticates as.
pub const ADMIN_USER: &str = "admin";

/// Which kind of credential authenticated the request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CredentialSource {
    Admin,
    StaticToken,
    /// The server must still check that `claims.secret_name` exists in `claims.cluster_name` and
    /// belongs to this ServiceAccount (uid included) before trusting the identity.
    ServiceAccount(SaClaims),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authenticated {
    pub user: UserInfo,
    pub source: CredentialSource,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthnError {
    #[error("the admin token is empty")]
    EmptyAdmin,
    #[error("static token for user {user:?} is the same as the admin token")]
    StaticIsAdmin { user: String },
    #[error("static token for user {user:?} is defined twice")]
    DuplicateStatic { user: String },
}

struct Entry {
    user: Arc<UserInfo>,
    source: CredentialSource,
}

/// Why a re-read token file was not applied; the previous tokens stay in force.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReloadError {
    #[error(transparent)]
    Parse(#[from] TokenFileError),
    #[error(transparent)]
    Conflict(#[from] AuthnError),
    /// An editor truncates before it writes; an empty file is a write in progress, not "no users".
    #[error("the token file is empty (a write in progress?)")]
    Empty,
}

/// Combines the configured authenticators; build once, share behind an `Arc`.
pub struct Authenticator {
    admin_digest: Option<[u8; 32]>,
    /// Admin and static tokens by digest; replaced whole when the token file changes.
    by_digest: RwLock<Arc<HashMap<[u8; 32], Entry>>>,
    service_accounts: Option<ServiceAccountTokens>,
    reloads: ReloadCounter,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("tokens", &self.tokens().len())
            .field("service_accounts", &self.service_accounts.is_some())
            .finish()
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn admin_entry() -> Entry {
    Entry {
        user: Arc::new(UserInfo {
            username: ADMIN_USER.to_string(),
            uid: ADMIN_USER.to_string(),
            groups: vec![GROUP_MASTERS.to_string(), GROUP_AUTHENTICATED.to_string()],
            extra: Default::default(),
        }),
        source: CredentialSource::Admin,
    }
}

/// The digest table of the admin token plus `static_tokens`.
fn build_table(
    admin_digest: Option<[u8; 32]>,
    static_tokens: &[StaticToken],
) -> Result<HashMap<[u8; 32], Entry>, AuthnError> {
    let mut by_digest = HashMap::new();
    if let Some(admin) = admin_digest {
        by_digest.insert(admin, admin_entry());
    }
    for token in static_tokens {
        let entry = Entry {
            user: Arc::new(user_info(token)),
            source: CredentialSource::StaticToken,
        };
        if let Some(previous) = by_digest.insert(digest(&token.token), entry) {
            return Err(match previous.source {
                CredentialSource::Admin => AuthnError::StaticIsAdmin {
                    user: token.user.clone(),
                },
                _ => AuthnError::DuplicateStatic {
                    user: token.user.clone(),
                },
            });
        }
    }
    Ok(by_digest)
}

impl Authenticator {
    pub fn new(
        admin_token: Option<&str>,
        static_tokens: &[StaticToken],
        service_accounts: Option<ServiceAccountTokens>,
    ) -> Result<Self, AuthnError> {
        let admin_digest = match admin_token {
            Some("") => return Err(AuthnError::EmptyAdmin),
            Some(token) => Some(digest(token)),
            None => None,
        };
        Ok(Self {
            admin_digest,
            by_digest: RwLock::new(Arc::new(build_table(admin_digest, static_tokens)?)),
            service_accounts,
            reloads: ReloadCounter::default(),
        })
    }

    fn tokens(&self) -> Arc<HashMap<[u8; 32], Entry>> {
        self.by_digest.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Replaces the static tokens with those of `text` (a re-read token file). On any error the
    /// previous tokens stay in force, so a bad edit never locks every user out.
    #[cfg(test)]
    pub fn reload_static_tokens(&self, text: &str) -> Result<usize, ReloadError> {
        self.reload_static_token_files(&[text])
    }

    /// Replaces the static tokens with those of `texts` (the server's token files, re-read
    /// together): all of them apply, or none; on any error the previous tokens stay in force, so a
    /// bad edit never locks every user out.
    pub fn reload_static_token_files(&self, texts: &[&str]) -> Result<usize, ReloadError> {
        let table = (|| {
            let mut tokens = Vec::new();
            for text in texts {
                tokens.extend(parse_reloaded(text).map_err(|e| match e {
                    ReloadRefused::Empty => ReloadError::Empty,
                    ReloadRefused::Parse(e) => ReloadError::Parse(e),
                })?);
            }
            Ok((tokens.len(), build_table(self.admin_digest, &tokens)?))
        })();
        match table {
            Ok((count, table)) => {
                *self.by_digest.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(table);
                self.reloads.applied();
                Ok(count)
            }
            Err(e) => {
                self.reloads.rejected();
                Err(e)
            }
        }
    }

    pub fn reload_counts(&self) -> ReloadCounts {
        self.reloads.counts()
    }

    /// `None` means "not authenticated" (401); the reason is deliberately not exposed.
    pub fn authenticate(&self, bearer: &str) -> Option<Authenticated> {
        if bearer.is_empty() {
            return None;
        }
        if let Some(entry) = self.tokens().get(&digest(bearer)) {
            return Some(Authenticated {
                user: UserInfo::clone(&entry.user),
                source: entry.source.clone(),
            });
        }
        let claims = self.service_accounts.as_ref()?.verify(bearer).ok()?;
        Some(Authenticated {
            user: claims.user_info(),
            source: CredentialSource::ServiceAccount(claims),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::auth::token_file::parse_token_file;
    use pretty_assertions::assert_eq;

    fn authenticator() -> (Authenticator, ServiceAccountTokens) {
        let tokens = parse_token_file("alice-token,alice,1001,\"dev,ops\"\nbob-token,bob,1002").unwrap();
        let sa = ServiceAccountTokens::new([3; 32]);
        (
            Authenticator::new(Some("admin-token"), &tokens, Some(sa.clone())).unwrap(),
            sa,
        )
    }

    #[test]
    fn authenticates_each_kind_of_token() {
        let (authn, sa) = authenticator();

        let admin = authn.authenticate("admin-token").unwrap();
        assert_eq!(admin.source, CredentialSource::Admin);
        assert_eq!(admin.user.username, "admin");
        assert_eq!(admin.user.groups, vec!["system:masters", "system:authenticated"]);

        let alice = authn.authenticate("alice-token").unwrap();
        assert_eq!(alice.source, CredentialSource::StaticToken);
        assert_eq!(
            alice.user,
            UserInfo {
                username: "alice".into(),
                uid: "1001".into(),
                groups: vec!["dev".into(), "ops".into(), "system:authenticated".into()],
                extra: Default::default(),
            }
        );

        let claims = SaClaims::new("c1", "default", "provider", "sa-uid", "provider-token");
        let got = authn.authenticate(&sa.issue(&claims)).unwrap();
        assert_eq!(got.user, claims.user_info());
        assert_eq!(got.source, CredentialSource::ServiceAccount(claims.clone()));

        let foreign = ServiceAccountTokens::new([4; 32]).issue(&claims);
        for bad in ["", "admin-token ", "nobody", "alice-tokenx", foreign.as_str()] {
            assert_eq!(authn.authenticate(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn without_sa_key_jwts_are_rejected() {
        let authn = Authenticator::new(None, &[], None).unwrap();
        let token = ServiceAccountTokens::new([3; 32]).issue(&SaClaims::new("c", "ns", "n", "u", "s"));
        assert_eq!(authn.authenticate(&token), None);
    }

    #[test]
    fn configuration_conflicts_are_errors() {
        let dup = parse_token_file("t,alice,1").unwrap();
        assert_eq!(
            Authenticator::new(Some("t"), &dup, None).unwrap_err(),
            AuthnError::StaticIsAdmin { user: "alice".into() }
        );
        assert_eq!(
            Authenticator::new(Some(""), &[], None).unwrap_err(),
            AuthnError::EmptyAdmin
        );
        let twice = [
            dup[0].clone(),
            StaticToken {
                user: "bob".into(),
                ..dup[0].clone()
            },
        ];
        assert_eq!(
            Authenticator::new(None, &twice, None).unwrap_err(),
            AuthnError::DuplicateStatic { user: "bob".into() }
        );
    }

    #[test]
    fn debug_does_not_reveal_tokens() {
        let (authn, _) = authenticator();
        let printed = format!("{authn:?}");
        assert_eq!(printed, "Authenticator { tokens: 3, service_accounts: true }");
    }

    #[test]
    fn reload_replaces_static_tokens_and_keeps_them_on_errors() {
        let (authn, _) = authenticator();
        let user = |token: &str| authn.authenticate(token).map(|a| a.user.username);

        assert_eq!(
            authn.reload_static_tokens("carol-token,carol,3\nbob-token,bob,2"),
            Ok(2)
        );
        assert_eq!(user("carol-token").as_deref(), Some("carol"));
        assert_eq!(user("alice-token"), None, "alice was removed from the file");
        assert_eq!(
            user("admin-token").as_deref(),
            Some("admin"),
            "the admin token is not in the file"
        );

        let refused = [
            (
                "carol-token,carol",
                ReloadError::Parse(TokenFileError::TooFewColumns { line: 1, found: 2 }),
            ),
            ("", ReloadError::Empty),
            (
                "admin-token,mallory,9",
                ReloadError::Conflict(AuthnError::StaticIsAdmin { user: "mallory".into() }),
            ),
        ];
        for (text, want) in refused {
            assert_eq!(authn.reload_static_tokens(text), Err(want), "{text:?}");
            assert_eq!(user("carol-token").as_deref(), Some("carol"), "after {text:?}");
            assert_eq!(user("bob-token").as_deref(), Some("bob"), "after {text:?}");
        }
        assert_eq!(
            authn.reload_counts(),
            ReloadCounts {
                applied: 1,
                rejected: 3
            }
        );

        // A file of comments only is a deliberate "no static users".
        assert_eq!(authn.reload_static_tokens("# nobody\n"), Ok(0));
        assert_eq!(user("carol-token"), None);
        assert_eq!(user("admin-token").as_deref(), Some("admin"));
    }

    #[test]
    fn several_token_files_apply_together_or_not_at_all() {
        let (authn, _) = authenticator();
        let user = |token: &str| authn.authenticate(token).map(|a| a.user.username);
        assert_eq!(
            authn.reload_static_token_files(&["carol-token,carol,3", "hub-token,faros-hub,h\n# more later"]),
            Ok(2)
        );
        assert_eq!(user("carol-token").as_deref(), Some("carol"));
        assert_eq!(user("hub-token").as_deref(), Some("faros-hub"));
        // A token in two files is one token for two users; an empty file is a write in progress.
        let refused = [
            (
                ["carol-token,carol,3", "carol-token,faros-hub,h"],
                ReloadError::Conflict(AuthnError::DuplicateStatic {
                    user: "faros-hub".into(),
                }),
            ),
            (["carol-token,carol,3", ""], ReloadError::Empty),
        ];
        for (texts, want) in refused {
            assert_eq!(authn.reload_static_token_files(&texts), Err(want), "{texts:?}");
            assert_eq!(user("hub-token").as_deref(), Some("faros-hub"), "after {texts:?}");
        }
    }
}
