//! Bearer ID tokens of one OpenID Connect issuer, mapped to users and groups the way
//! kube-apiserver's `--oidc-*` flags do.
//!
//! Keys come from the issuer's discovery document (`<issuer>/.well-known/openid-configuration`,
//! whose `issuer` must equal the configured one) and its `jwks_uri`; they are cached, refetched when
//! a token names an unknown key ID (so rotation works) or when the cached set is older than
//! [`OidcSettings::jwks_refresh`] (so retired keys stop verifying), and never fetched more often than
//! [`OidcSettings::jwks_min_interval`] (so junk key IDs cannot make the hub hammer the issuer).
//! RS256 and ES256 are verified with aws-lc-rs; nothing else is accepted, `none` included.
//!
//! In a [`Chain`](super::Chain) a token that is not a JWT, or whose (unverified) `iss` is another
//! issuer, is [`Verdict::NotMine`]; a token of this issuer that fails any check is
//! [`Verdict::Rejected`] with a 401 saying why. Neither tokens nor claims values are logged.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED, ParsedPublicKey, RSA_PKCS1_2048_8192_SHA256, RsaPublicKeyComponents,
};
use axum::body::Body;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use faros_core::status::Status;
use futures::future::BoxFuture;
use http::HeaderMap;
use http_body_util::{BodyExt, Limited};
use kube::client::ConfigExt;
use serde_json::{Map, Value};

use super::{AuthError, Authenticator, Caller, CredentialSource, Verdict, bearer_token, settle};
use crate::catalog::clock::{Clock, SystemClock};
use crate::proxy::{UpstreamPool, pool};
use faros_core::user::UserInfo;

/// The claim naming the user unless configured otherwise.
pub const DEFAULT_USERNAME_CLAIM: &str = "sub";
/// Tolerated clock skew for `exp` and `nbf`.
pub const LEEWAY_SECONDS: i64 = 30;
/// Largest discovery document or key set read.
const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;

/// One issuer and how its claims become a [`Caller`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OidcSettings {
    /// Exactly as tokens carry it in `iss`. `https://`, or `http://` on loopback only (tests).
    pub issuer_url: String,
    /// The audience tokens must carry in `aud`.
    pub client_id: String,
    /// Default `sub`. With `email`, a present `email_verified` must be `true`.
    pub username_claim: String,
    /// kube semantics: `None` means `<issuer>#` unless the claim is `email`; `-` means no prefix.
    pub username_prefix: Option<String>,
    /// A string or array-of-strings claim; `None`: no groups from the token.
    pub groups_claim: Option<String>,
    pub groups_prefix: Option<String>,
    /// PEM CA bundle trusted for the issuer's TLS instead of the platform roots.
    pub ca_pem: Option<String>,
    /// Longest a fetched key set is used before it is refetched.
    pub jwks_refresh: Duration,
    /// Shortest interval between two fetches of the issuer's documents.
    pub jwks_min_interval: Duration,
    /// Bound on each fetch (connect, response and body).
    pub fetch_timeout: Duration,
}

impl OidcSettings {
    pub fn new(issuer_url: impl Into<String>, client_id: impl Into<String>) -> Self {
        Self {
            issuer_url: issuer_url.into(),
            client_id: client_id.into(),
            username_claim: DEFAULT_USERNAME_CLAIM.to_string(),
            username_prefix: None,
            groups_claim: None,
            groups_prefix: None,
            ca_pem: None,
            jwks_refresh: Duration::from_secs(300),
            jwks_min_interval: Duration::from_secs(10),
            fetch_timeout: Duration::from_secs(10),
        }
    }

    /// The prefix put before every user name (kube-apiserver's `--oidc-username-prefix`).
    pub fn effective_username_prefix(&self) -> String {
        match self.username_prefix.as_deref() {
            Some("-") => String::new(),
            Some(prefix) => prefix.to_string(),
            None if self.username_claim == "email" => String::new(),
            None => format!("{}#", self.issuer_url),
        }
    }

    fn validate(&self) -> Result<(), AuthError> {
        let fail = |reason: String| Err(AuthError::Oidc(format!("issuer {:?}: {reason}", self.issuer_url)));
        if let Err(reason) = allowed_url(&self.issuer_url) {
            return fail(reason);
        }
        if self.client_id.is_empty() {
            return fail("the client ID (audience) is empty".into());
        }
        if self.username_claim.is_empty() {
            return fail("the username claim is empty".into());
        }
        Ok(())
    }
}

/// An issuer or key-set URL the hub may fetch: HTTPS, or plain HTTP to a loopback host.
fn allowed_url(url: &str) -> Result<http::Uri, String> {
    let uri: http::Uri = url.parse().map_err(|e| format!("not a URL: {e}"))?;
    let host = uri.host().unwrap_or_default();
    match uri.scheme_str() {
        Some("https") if !host.is_empty() => Ok(uri),
        Some("http") if matches!(host, "127.0.0.1" | "localhost" | "[::1]") => Ok(uri),
        Some("http") => Err("plain http is allowed only on 127.0.0.1 or localhost".into()),
        _ => Err("must be an https URL".into()),
    }
}

/// A client for the issuer: trusts `settings.ca_pem` if given, else the platform roots.
pub fn http_client(settings: &OidcSettings, connect_timeout: Duration) -> Result<UpstreamPool, AuthError> {
    let mut tls = kube::Config::new(http::Uri::from_static("https://localhost"));
    if let Some(pem) = &settings.ca_pem {
        let certs = rustls_pemfile::certs(&mut pem.as_bytes())
            .map(|c| c.map(|c| c.to_vec()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| AuthError::Oidc(format!("the issuer CA is not valid PEM: {e}")))?;
        if certs.is_empty() {
            return Err(AuthError::Oidc("the issuer CA holds no certificate".into()));
        }
        tls.root_cert = Some(certs);
    }
    let connector = tls
        .rustls_https_connector_with_connector(crate::proxy::http_connector(
            connect_timeout,
            std::sync::Arc::new(crate::proxy::UpstreamPolicy::unrestricted()),
        ))
        .map_err(|e| AuthError::Oidc(format!("building the TLS client for the issuer: {e}")))?;
    Ok(UpstreamPool::new(connector, pool::IDLE_TIMEOUT))
}

/// Signature algorithms accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Alg {
    Rs256,
    Es256,
}

impl Alg {
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "RS256" => Some(Self::Rs256),
            "ES256" => Some(Self::Es256),
            _ => None,
        }
    }
}

/// A compact JWS split into its parts; claims are not trusted until the signature verifies.
struct Jwt<'a> {
    alg: String,
    kid: Option<String>,
    claims: Map<String, Value>,
    signing_input: &'a str,
    signature: Vec<u8>,
}

fn b64(part: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(part.trim_end_matches('=')).ok()
}

/// `None` when `token` is not a JWS with JSON header and claims.
fn parse_jwt(token: &str) -> Option<Jwt<'_>> {
    let mut parts = token.split('.');
    let (header, payload, signature) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let header: Map<String, Value> = serde_json::from_slice(&b64(header)?).ok()?;
    let claims: Map<String, Value> = serde_json::from_slice(&b64(payload)?).ok()?;
    Some(Jwt {
        alg: header.get("alg")?.as_str()?.to_string(),
        kid: header.get("kid").and_then(Value::as_str).map(str::to_string),
        claims,
        signing_input: &token[..token.rfind('.')?],
        signature: b64(signature)?,
    })
}

/// A verification key of the issuer.
struct Key {
    kid: Option<String>,
    alg: Alg,
    key: ParsedPublicKey,
}

fn strip_leading_zeros(bytes: &[u8]) -> &[u8] {
    let first = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    &bytes[first..]
}

/// One JWK as a verification key; `None` for keys this hub cannot or must not use.
fn parse_jwk(jwk: &Value) -> Option<Key> {
    let field = |name: &str| jwk.get(name).and_then(Value::as_str);
    if field("use").is_some_and(|u| u != "sig") {
        return None;
    }
    let (alg, key) = match field("kty")? {
        "RSA" => {
            let n = b64(field("n")?)?;
            let e = b64(field("e")?)?;
            let components = RsaPublicKeyComponents {
                n: strip_leading_zeros(&n),
                e: strip_leading_zeros(&e),
            };
            // Parsing does not check the size; verification would reject such keys later, token by token.
            if !(256..=1024).contains(&components.n.len()) {
                return None;
            }
            (
                Alg::Rs256,
                components.to_parsed_public_key(&RSA_PKCS1_2048_8192_SHA256).ok()?,
            )
        }
        "EC" if field("crv")? == "P-256" => {
            let (x, y) = (b64(field("x")?)?, b64(field("y")?)?);
            if x.len() != 32 || y.len() != 32 {
                return None;
            }
            let point = [&[0x04][..], &x, &y].concat();
            (Alg::Es256, ParsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point).ok()?)
        }
        _ => return None,
    };
    if field("alg").is_some_and(|a| Alg::from_name(a) != Some(alg)) {
        return None;
    }
    Some(Key {
        kid: field("kid").map(str::to_string),
        alg,
        key,
    })
}

fn parse_jwks(doc: &Value) -> Vec<Key> {
    doc.get("keys")
        .and_then(Value::as_array)
        .map(|keys| keys.iter().filter_map(parse_jwk).collect())
        .unwrap_or_default()
}

/// The user a verified token's claims stand for, or why they are not acceptable. `now` in Unix
/// seconds. Reasons name claims, never their values.
pub fn caller_from_claims(settings: &OidcSettings, claims: &Map<String, Value>, now: i64) -> Result<Caller, String> {
    if claims.get("iss").and_then(Value::as_str) != Some(settings.issuer_url.as_str()) {
        return Err("the token's issuer is not the configured issuer".into());
    }
    let audience_ok = match claims.get("aud") {
        Some(Value::String(aud)) => *aud == settings.client_id,
        Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(settings.client_id.as_str())),
        _ => false,
    };
    if !audience_ok {
        return Err("the token's audience does not include this hub's client ID".into());
    }
    let exp = claims
        .get("exp")
        .and_then(Value::as_i64)
        .ok_or("the token has no numeric exp claim")?;
    if now > exp.saturating_add(LEEWAY_SECONDS) {
        return Err("the token has expired".into());
    }
    if let Some(nbf) = claims.get("nbf") {
        let nbf = nbf.as_i64().ok_or("the token's nbf claim is not a number")?;
        if now.saturating_add(LEEWAY_SECONDS) < nbf {
            return Err("the token is not valid yet (nbf)".into());
        }
    }
    let claim = settings.username_claim.as_str();
    let username = claims
        .get(claim)
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
        .ok_or_else(|| format!("the token has no string claim {claim:?}"))?;
    if claim == "email" {
        match claims.get("email_verified") {
            None | Some(Value::Bool(true)) => {}
            Some(_) => return Err("the token's email is not verified".into()),
        }
    }
    let groups = match settings.groups_claim.as_deref() {
        None => Vec::new(),
        Some(name) => match claims.get(name) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(group)) => vec![group.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .map(|g| g.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| format!("the token's {name:?} claim is not a list of strings"))?,
            Some(_) => {
                return Err(format!(
                    "the token's {name:?} claim is not a string or a list of strings"
                ));
            }
        },
    };
    let group_prefix = settings.groups_prefix.as_deref().unwrap_or_default();
    let user = UserInfo {
        username: format!("{}{username}", settings.effective_username_prefix()),
        groups: groups.into_iter().map(|g| format!("{group_prefix}{g}")).collect(),
        ..Default::default()
    };
    Ok(Caller::new(user, CredentialSource::Oidc))
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
pub struct OidcAuthenticator {
    settings: OidcSettings,
    http: UpstreamPool,
    clock: Arc<dyn Clock>,
    keys: RwLock<Arc<KeySet>>,
    fetch: tokio::sync::Mutex<FetchState>,
}

impl std::fmt::Debug for OidcAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcAuthenticator")
            .field("issuer", &self.settings.issuer_url)
            .field("keys", &self.current().keys.len())
            .finish()
    }
}

impl OidcAuthenticator {
    /// Checks the settings; fetches nothing until the first token of the issuer arrives.
    pub fn new(settings: OidcSettings, http: UpstreamPool) -> Result<Self, AuthError> {
        settings.validate()?;
        Ok(Self {
            settings,
            http,
            clock: Arc::new(SystemClock),
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

    /// Judges `exp`/`nbf` by `clock` instead of the system clock.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    pub fn settings(&self) -> &OidcSettings {
        &self.settings
    }

    fn current(&self) -> Arc<KeySet> {
        self.keys.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The verdict on one bearer token.
    pub async fn check(&self, token: &str) -> Verdict {
        let Some(jwt) = parse_jwt(token) else {
            return Verdict::NotMine;
        };
        if jwt.claims.get("iss").and_then(Value::as_str) != Some(self.settings.issuer_url.as_str()) {
            return Verdict::NotMine;
        }
        let reject = |reason: &str| Verdict::Rejected(Status::unauthorized(format!("invalid OIDC token: {reason}")));
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
            return Verdict::Rejected(Status::unavailable(
                "cannot authenticate right now: the OIDC issuer's keys could not be fetched",
            ));
        }
        let mut candidates = set.candidates(alg, kid).peekable();
        if candidates.peek().is_none() {
            return reject("the signing key is not in the issuer's key set");
        }
        if !candidates.any(|k| k.key.verify_sig(jwt.signing_input.as_bytes(), &jwt.signature).is_ok()) {
            return reject("the signature does not verify");
        }
        match caller_from_claims(&self.settings, &jwt.claims, self.clock.now().as_second()) {
            Ok(caller) => Verdict::Accepted(caller),
            Err(reason) => reject(&reason),
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
                let doc = self.get_json(&url).await?;
                if doc.get("issuer").and_then(Value::as_str) != Some(self.settings.issuer_url.as_str()) {
                    return Err(format!("{url}: the document's issuer is not the configured issuer"));
                }
                let uri = doc
                    .get("jwks_uri")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("{url}: no jwks_uri"))?;
                allowed_url(uri).map_err(|e| format!("{url}: jwks_uri {uri:?}: {e}"))?;
                jwks_uri.insert(uri.to_string()).clone()
            }
        };
        let keys = parse_jwks(&self.get_json(&uri).await?);
        if keys.is_empty() {
            return Err(format!("{uri}: no usable RS256 or ES256 signing key"));
        }
        Ok(keys)
    }

    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let uri = allowed_url(url).map_err(|e| format!("{url}: {e}"))?;
        let req = http::Request::get(uri)
            .header(http::header::ACCEPT, "application/json")
            .body(Body::empty())
            .map_err(|e| format!("{url}: {e}"))?;
        let fetch = async {
            let resp = self.http.request(req).await.map_err(|e| e.to_string())?;
            if !resp.status().is_success() {
                return Err(format!("status {}", resp.status()));
            }
            let body = Limited::new(resp.into_body(), MAX_DOCUMENT_BYTES)
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            serde_json::from_slice(&body).map_err(|e| format!("not JSON: {e}"))
        };
        match tokio::time::timeout(self.settings.fetch_timeout, fetch).await {
            Ok(result) => result.map_err(|e| format!("{url}: {e}")),
            Err(_) => Err(format!("{url}: no answer within {:?}", self.settings.fetch_timeout)),
        }
    }
}

impl Authenticator for OidcAuthenticator {
    fn authenticate<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Caller, Status>> {
        Box::pin(async move {
            let token = bearer_token(headers).ok_or_else(super::missing_credentials)?;
            settle(self.check(token).await)
        })
    }

    fn verdict<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Verdict> {
        Box::pin(async move {
            match bearer_token(headers) {
                Some(token) => self.check(token).await,
                None => Verdict::NotMine,
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    const ISSUER: &str = "https://issuer.example";
    const NOW: i64 = 1_800_000_000;

    fn settings() -> OidcSettings {
        OidcSettings::new(ISSUER, "faros")
    }

    fn claims(extra: Value) -> Map<String, Value> {
        let mut base = json!({"iss": ISSUER, "aud": "faros", "sub": "u-1", "exp": NOW + 60});
        let (Value::Object(base_map), Value::Object(extra)) = (&mut base, extra) else {
            unreachable!("both are objects")
        };
        for (k, v) in extra {
            if v.is_null() {
                base_map.remove(&k);
            } else {
                base_map.insert(k, v);
            }
        }
        base.as_object().unwrap().clone()
    }

    type Mapped = Result<(String, Vec<String>), String>;

    fn user(settings: &OidcSettings, extra: Value) -> Mapped {
        caller_from_claims(settings, &claims(extra), NOW).map(|c| (c.user, c.groups))
    }

    fn groups(gs: &[&str]) -> Vec<String> {
        gs.iter()
            .map(|g| g.to_string())
            .chain(["system:authenticated".to_string()])
            .collect()
    }

    #[test]
    fn username_prefix_follows_kube() {
        let cases = [
            ("sub", None, "https://issuer.example#"),
            ("sub", Some("-"), ""),
            ("sub", Some("oidc:"), "oidc:"),
            ("email", None, ""),
            ("email", Some("corp:"), "corp:"),
            ("preferred_username", None, "https://issuer.example#"),
        ];
        for (claim, prefix, want) in cases {
            let s = OidcSettings {
                username_claim: claim.into(),
                username_prefix: prefix.map(String::from),
                ..settings()
            };
            assert_eq!(s.effective_username_prefix(), want, "{claim} {prefix:?}");
        }
    }

    #[test]
    fn claim_mapping_table() {
        let email = OidcSettings {
            username_claim: "email".into(),
            groups_claim: Some("groups".into()),
            groups_prefix: Some("oidc:".into()),
            ..settings()
        };
        let sub = settings();
        let cases: Vec<(&str, &OidcSettings, Value, Mapped)> = vec![
            (
                "sub with the default prefix, no groups claim configured",
                &sub,
                json!({"groups": ["ignored"]}),
                Ok(("https://issuer.example#u-1".into(), groups(&[]))),
            ),
            (
                "email, verified, prefixed groups",
                &email,
                json!({"email": "a@example.com", "email_verified": true, "groups": ["dev", "ops"]}),
                Ok(("a@example.com".into(), groups(&["oidc:dev", "oidc:ops"]))),
            ),
            (
                "email without email_verified, a single group string",
                &email,
                json!({"email": "a@example.com", "groups": "dev"}),
                Ok(("a@example.com".into(), groups(&["oidc:dev"]))),
            ),
            (
                "email not verified",
                &email,
                json!({"email": "a@example.com", "email_verified": false}),
                Err("the token's email is not verified".into()),
            ),
            (
                "email_verified as a string",
                &email,
                json!({"email": "a@example.com", "email_verified": "true"}),
                Err("the token's email is not verified".into()),
            ),
            (
                "no email claim",
                &email,
                json!({}),
                Err("the token has no string claim \"email\"".into()),
            ),
            (
                "groups of the wrong type",
                &email,
                json!({"email": "a@example.com", "groups": [1, 2]}),
                Err("the token's \"groups\" claim is not a list of strings".into()),
            ),
            (
                "groups an object",
                &email,
                json!({"email": "a@example.com", "groups": {"a": 1}}),
                Err("the token's \"groups\" claim is not a string or a list of strings".into()),
            ),
            (
                "empty sub",
                &sub,
                json!({"sub": ""}),
                Err("the token has no string claim \"sub\"".into()),
            ),
        ];
        for (what, s, extra, want) in cases {
            assert_eq!(user(s, extra), want, "{what}");
        }
    }

    #[test]
    fn issuer_audience_and_time_table() {
        let expired = "the token has expired".to_string();
        let audience = "the token's audience does not include this hub's client ID".to_string();
        let cases: Vec<(&str, Value, Option<String>)> = vec![
            ("aud string", json!({}), None),
            (
                "aud array containing the client",
                json!({"aud": ["other", "faros"]}),
                None,
            ),
            ("aud other", json!({"aud": "other"}), Some(audience.clone())),
            (
                "aud array without the client",
                json!({"aud": ["other"]}),
                Some(audience.clone()),
            ),
            ("no aud", json!({"aud": null}), Some(audience)),
            (
                "other issuer",
                json!({"iss": "https://evil.example"}),
                Some("the token's issuer is not the configured issuer".into()),
            ),
            ("exp within the leeway", json!({"exp": NOW - LEEWAY_SECONDS}), None),
            (
                "exp past the leeway",
                json!({"exp": NOW - LEEWAY_SECONDS - 1}),
                Some(expired),
            ),
            (
                "no exp",
                json!({"exp": null}),
                Some("the token has no numeric exp claim".into()),
            ),
            ("nbf within the leeway", json!({"nbf": NOW + LEEWAY_SECONDS}), None),
            (
                "nbf in the future",
                json!({"nbf": NOW + LEEWAY_SECONDS + 1}),
                Some("the token is not valid yet (nbf)".into()),
            ),
        ];
        for (what, extra, want) in cases {
            assert_eq!(user(&settings(), extra).err(), want, "{what}");
        }
    }

    #[test]
    fn only_https_or_loopback_http_issuers() {
        let cases = [
            ("https://issuer.example", true),
            ("https://issuer.example/realms/faros", true),
            ("http://127.0.0.1:5556/dex", true),
            ("http://localhost:8080", true),
            ("http://issuer.example", false),
            ("ftp://issuer.example", false),
            ("issuer.example", false),
            ("", false),
        ];
        for (url, ok) in cases {
            assert_eq!(OidcSettings::new(url, "faros").validate().is_ok(), ok, "{url}");
        }
        assert!(OidcSettings::new("https://issuer.example", "").validate().is_err());
    }

    #[test]
    fn jwt_shapes() {
        let enc = |v: Value| URL_SAFE_NO_PAD.encode(v.to_string());
        let header = enc(json!({"alg": "ES256", "kid": "k1"}));
        let payload = enc(json!({"iss": ISSUER}));
        let good = format!("{header}.{payload}.c2ln");
        let jwt = parse_jwt(&good).unwrap();
        assert_eq!(
            (
                jwt.alg.as_str(),
                jwt.kid.as_deref(),
                jwt.signing_input,
                jwt.signature.as_slice()
            ),
            (
                "ES256",
                Some("k1"),
                format!("{header}.{payload}").as_str(),
                b"sig".as_slice()
            )
        );
        for bad in [
            "opaque-static-token".to_string(),
            format!("{header}.{payload}"),
            format!("{header}.{payload}.c2ln.extra"),
            format!("{header}.bm90IGpzb24.c2ln"),
            format!("{}.{payload}.c2ln", enc(json!({"kid": "no alg"}))),
        ] {
            assert!(parse_jwt(&bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn unusable_jwks_entries_are_skipped() {
        let pair = aws_lc_rs::signature::EcdsaKeyPair::generate(&aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED_SIGNING)
            .unwrap();
        use aws_lc_rs::signature::KeyPair;
        let point = pair.public_key().as_ref();
        let (x, y) = (
            URL_SAFE_NO_PAD.encode(&point[1..33]),
            URL_SAFE_NO_PAD.encode(&point[33..]),
        );
        let doc = json!({"keys": [
            {"kty": "EC", "crv": "P-256", "kid": "ok", "x": x, "y": y, "alg": "ES256", "use": "sig"},
            {"kty": "EC", "crv": "P-256", "kid": "enc", "x": x, "y": y, "use": "enc"},
            {"kty": "EC", "crv": "P-384", "kid": "p384", "x": x, "y": y},
            {"kty": "EC", "crv": "P-256", "kid": "alg-mismatch", "x": x, "y": y, "alg": "RS256"},
            {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
            {"kty": "RSA", "kid": "broken", "n": "AQAB", "e": "AQAB"},
        ]});
        let kids: Vec<Option<String>> = parse_jwks(&doc).into_iter().map(|k| k.kid).collect();
        assert_eq!(kids, vec![Some("ok".to_string())]);
    }
}
