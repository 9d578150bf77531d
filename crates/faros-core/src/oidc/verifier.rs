//! Verifying bearer ID tokens of one issuer: the key cache and the verdict.
//!
//! Keys come from the issuer's discovery document (whose `issuer` must equal the configured one)
//! and its `jwks_uri`; they are cached, refetched when a token names an unknown key ID (so rotation
//! works) or when the cached set is older than [`OidcSettings::jwks_refresh`] (so retired keys stop
//! verifying), and never fetched more often than [`OidcSettings::jwks_min_interval`] (so junk key
//! IDs cannot make a server hammer the issuer). The fetching itself is the server's
//! ([`FetchJson`]): its TLS client, its CA, its connection pool.

use std::sync::{Arc, RwLock};
use std::time::Instant;

use futures::future::BoxFuture;
use serde_json::Value;

use super::jwt::{Alg, Jwt, Key, parse_jwks, parse_jwt};
use super::{OidcSettings, SettingsError, allowed_url, user_from_claims};
use crate::user::UserInfo;

/// GETs a JSON document from the issuer; the server's IO. Errors name the URL or status, never a
/// token.
pub trait FetchJson: Send + Sync {
    fn get_json<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Value, String>>;
}

/// The verdict on one bearer token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Not a JWT, or a JWT of another issuer: another authenticator may take it.
    NotMine,
    /// This issuer's token, failing a check; the reason names no claim value.
    Rejected(String),
    /// The issuer's keys could not be fetched (and none are cached).
    Unavailable,
    /// A valid token of this issuer, mapped with the settings' claims and prefixes.
    Accepted(UserInfo),
}

struct KeySet {
    keys: Vec<Key>,
    fetched: Option<Instant>,
}

impl KeySet {
    fn candidates(&self, alg: Alg, kid: Option<&str>) -> impl Iterator<Item = &Key> {
        self.keys
            .iter()
            .filter(move |k| k.alg == alg && kid.is_none_or(|kid| k.kid.as_deref() == Some(kid)))
    }
}

struct FetchState {
    /// From the discovery document; forgotten when a key-set fetch fails, so discovery runs again.
    jwks_uri: Option<String>,
    last_attempt: Option<Instant>,
}

/// Verifies bearer ID tokens of one issuer.
pub struct Verifier {
    settings: OidcSettings,
    fetcher: Box<dyn FetchJson>,
    now: Arc<dyn Fn() -> i64 + Send + Sync>,
    keys: RwLock<Arc<KeySet>>,
    fetch: tokio::sync::Mutex<FetchState>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("issuer", &self.settings.issuer_url)
            .field("keys", &self.current().keys.len())
            .finish()
    }
}

fn unix_now() -> i64 {
    jiff::Timestamp::now().as_second()
}

impl Verifier {
    /// Checks the settings; fetches nothing until the first token of the issuer arrives.
    pub fn new(settings: OidcSettings, fetcher: Box<dyn FetchJson>) -> Result<Self, SettingsError> {
        settings.validate()?;
        Ok(Self {
            settings,
            fetcher,
            now: Arc::new(unix_now),
            keys: RwLock::new(Arc::new(KeySet {
                keys: Vec::new(),
                fetched: None,
            })),
            fetch: tokio::sync::Mutex::new(FetchState {
                jwks_uri: None,
                last_attempt: None,
            }),
        })
    }

    /// Judges `exp`/`nbf` by `now` (Unix seconds) instead of the system clock.
    pub fn with_clock(mut self, now: Arc<dyn Fn() -> i64 + Send + Sync>) -> Self {
        self.now = now;
        self
    }

    pub fn settings(&self) -> &OidcSettings {
        &self.settings
    }

    fn current(&self) -> Arc<KeySet> {
        self.keys.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The verdict on one bearer token.
    pub async fn check(&self, token: &str) -> Outcome {
        let Some(jwt) = parse_jwt(token) else {
            return Outcome::NotMine;
        };
        if jwt.issuer() != Some(self.settings.issuer_url.as_str()) {
            return Outcome::NotMine;
        }
        let reject = |reason: &str| Outcome::Rejected(reason.to_string());
        let Some(alg) = Alg::from_name(&jwt.alg) else {
            return reject("the signing algorithm is not RS256 or ES256");
        };
        let kid = jwt.kid.as_deref();
        let set = self.current();
        let stale = set.fetched.is_none_or(|t| t.elapsed() >= self.settings.jwks_refresh);
        let set = if stale || set.candidates(alg, kid).next().is_none() {
            self.refresh().await;
            self.current()
        } else {
            set
        };
        if set.fetched.is_none() {
            return Outcome::Unavailable;
        }
        self.judge(&set, &jwt, alg)
    }

    fn judge(&self, set: &KeySet, jwt: &Jwt<'_>, alg: Alg) -> Outcome {
        let mut candidates = set.candidates(alg, jwt.kid.as_deref()).peekable();
        if candidates.peek().is_none() {
            return Outcome::Rejected("the signing key is not in the issuer's key set".into());
        }
        if !candidates.any(|k| k.verifies(jwt)) {
            return Outcome::Rejected("the signature does not verify".into());
        }
        match user_from_claims(&self.settings, &jwt.claims, (self.now)()) {
            Ok(user) => Outcome::Accepted(user),
            Err(reason) => Outcome::Rejected(reason),
        }
    }

    /// Refetches the key set unless a fetch was attempted within `jwks_min_interval`. Callers
    /// arriving during a fetch wait for it and then use its result.
    async fn refresh(&self) {
        let mut fetch = self.fetch.lock().await;
        if fetch
            .last_attempt
            .is_some_and(|t| t.elapsed() < self.settings.jwks_min_interval)
        {
            return;
        }
        fetch.last_attempt = Some(Instant::now());
        match self.fetch_keys(&mut fetch.jwks_uri).await {
            Ok(keys) => {
                tracing::debug!(issuer = %self.settings.issuer_url, keys = keys.len(), "OIDC keys fetched");
                *self.keys.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(KeySet {
                    keys,
                    fetched: Some(Instant::now()),
                });
            }
            Err(e) => {
                fetch.jwks_uri = None;
                tracing::warn!(issuer = %self.settings.issuer_url, error = %e, "cannot fetch the OIDC issuer's keys; keeping the previous ones");
            }
        }
    }

    async fn fetch_keys(&self, jwks_uri: &mut Option<String>) -> Result<Vec<Key>, String> {
        let uri = match jwks_uri.clone() {
            Some(uri) => uri,
            None => {
                let url = format!(
                    "{}/.well-known/openid-configuration",
                    self.settings.issuer_url.trim_end_matches('/')
                );
                let uri = jwks_uri_of(&self.get_json(&url).await?, &self.settings.issuer_url)
                    .map_err(|e| format!("{url}: {e}"))?;
                jwks_uri.insert(uri).clone()
            }
        };
        let keys = parse_jwks(&self.get_json(&uri).await?);
        if keys.is_empty() {
            return Err(format!("{uri}: no usable RS256 or ES256 signing key"));
        }
        Ok(keys)
    }

    async fn get_json(&self, url: &str) -> Result<Value, String> {
        allowed_url(url).map_err(|e| format!("{url}: {e}"))?;
        match tokio::time::timeout(self.settings.fetch_timeout, self.fetcher.get_json(url)).await {
            Ok(result) => result.map_err(|e| format!("{url}: {e}")),
            Err(_) => Err(format!("{url}: no answer within {:?}", self.settings.fetch_timeout)),
        }
    }
}

/// The key-set URL a discovery document names, if the document is the configured issuer's.
pub fn jwks_uri_of(doc: &Value, issuer: &str) -> Result<String, String> {
    if doc.get("issuer").and_then(Value::as_str) != Some(issuer) {
        return Err("the document's issuer is not the configured issuer".into());
    }
    let uri = doc.get("jwks_uri").and_then(Value::as_str).ok_or("no jwks_uri")?;
    allowed_url(uri).map_err(|e| format!("jwks_uri {uri:?}: {e}"))?;
    Ok(uri.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn discovery_table() {
        let issuer = "https://issuer.example";
        let cases = [
            (
                json!({"issuer": issuer, "jwks_uri": "https://issuer.example/jwks"}),
                Ok("https://issuer.example/jwks".to_string()),
            ),
            (
                json!({"issuer": "https://other.example", "jwks_uri": "https://issuer.example/jwks"}),
                Err("the document's issuer is not the configured issuer".to_string()),
            ),
            (json!({"issuer": issuer}), Err("no jwks_uri".to_string())),
            (
                json!({"issuer": issuer, "jwks_uri": "http://issuer.example/jwks"}),
                Err(
                    "jwks_uri \"http://issuer.example/jwks\": plain http is allowed only on 127.0.0.1 or localhost"
                        .to_string(),
                ),
            ),
        ];
        for (doc, want) in cases {
            assert_eq!(jwks_uri_of(&doc, issuer), want, "{doc}");
        }
    }
}
