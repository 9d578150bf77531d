//! Bearer token → identity: the admin token, static tokens and ServiceAccount JWTs.
//!
//! Static and admin tokens are kept only as SHA-256 digests, so a lookup never compares secrets
//! byte by byte and a heap dump does not reveal them. Nothing here logs a token.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};

use super::service_account::{SaClaims, ServiceAccountTokens};
use super::token_file::StaticToken;
use super::{GROUP_AUTHENTICATED, GROUP_MASTERS, UserInfo};

/// The user the admin token authenticates as.
pub const ADMIN_USER: &str = "admin";

/// A new random token: 256 bits, URL-safe base64 without padding (43 characters).
pub fn generate_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The token of an `Authorization` header value, as kube-apiserver reads it: scheme `Bearer`
/// (any case), one space-separated non-empty token.
pub fn bearer_token(header: &str) -> Option<&str> {
    let mut parts = header.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return None;
    }
    Some(token)
}

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
    EmptyAdminToken,
    #[error("static token for user {user:?} is the same as the admin token")]
    StaticTokenIsAdminToken { user: String },
    #[error("static token for user {user:?} is defined twice")]
    DuplicateStaticToken { user: String },
}

struct Entry {
    user: Arc<UserInfo>,
    source: CredentialSource,
}

/// Combines the configured authenticators; build once, share behind an `Arc`.
pub struct Authenticator {
    by_digest: HashMap<[u8; 32], Entry>,
    service_accounts: Option<ServiceAccountTokens>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("tokens", &self.by_digest.len())
            .field("service_accounts", &self.service_accounts.is_some())
            .finish()
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Authenticator {
    pub fn new(
        admin_token: Option<&str>,
        static_tokens: &[StaticToken],
        service_accounts: Option<ServiceAccountTokens>,
    ) -> Result<Self, AuthnError> {
        let mut by_digest = HashMap::new();
        if let Some(token) = admin_token {
            if token.is_empty() {
                return Err(AuthnError::EmptyAdminToken);
            }
            let user = UserInfo {
                username: ADMIN_USER.to_string(),
                uid: ADMIN_USER.to_string(),
                groups: vec![GROUP_MASTERS.to_string(), GROUP_AUTHENTICATED.to_string()],
                extra: Default::default(),
            };
            by_digest.insert(
                digest(token),
                Entry {
                    user: Arc::new(user),
                    source: CredentialSource::Admin,
                },
            );
        }
        for token in static_tokens {
            let entry = Entry {
                user: Arc::new(token.user_info()),
                source: CredentialSource::StaticToken,
            };
            if let Some(previous) = by_digest.insert(digest(&token.token), entry) {
                return Err(match previous.source {
                    CredentialSource::Admin => AuthnError::StaticTokenIsAdminToken {
                        user: token.user.clone(),
                    },
                    _ => AuthnError::DuplicateStaticToken {
                        user: token.user.clone(),
                    },
                });
            }
        }
        Ok(Self {
            by_digest,
            service_accounts,
        })
    }

    /// `None` means "not authenticated" (401); the reason is deliberately not exposed.
    pub fn authenticate(&self, bearer: &str) -> Option<Authenticated> {
        if bearer.is_empty() {
            return None;
        }
        if let Some(entry) = self.by_digest.get(&digest(bearer)) {
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
    fn generated_tokens_are_256_bit_url_safe_and_distinct() {
        let a = generate_token();
        assert_eq!(a.len(), 43);
        assert_eq!(URL_SAFE_NO_PAD.decode(&a).unwrap().len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert_ne!(a, generate_token());
    }

    #[test]
    fn bearer_header_parsing() {
        let cases = [
            ("Bearer abc", Some("abc")),
            ("bearer abc", Some("abc")),
            ("  Bearer abc  ", Some("abc")),
            ("Bearer abc def", Some("abc")),
            ("Bearer ", None),
            ("Bearer", None),
            ("Basic abc", None),
            ("", None),
        ];
        for (header, want) in cases {
            assert_eq!(bearer_token(header), want, "{header:?}");
        }
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
            AuthnError::StaticTokenIsAdminToken { user: "alice".into() }
        );
        assert_eq!(
            Authenticator::new(Some(""), &[], None).unwrap_err(),
            AuthnError::EmptyAdminToken
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
            AuthnError::DuplicateStaticToken { user: "bob".into() }
        );
    }

    #[test]
    fn debug_does_not_reveal_tokens() {
        let (authn, _) = authenticator();
        let printed = format!("{authn:?}");
        assert_eq!(printed, "Authenticator { tokens: 3, service_accounts: true }");
    }
}
