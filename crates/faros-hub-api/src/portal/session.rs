//! Browser sessions: an HttpOnly, Secure, SameSite=Strict cookie that stands for a credential the
//! user proved once (a token pasted on the sign-in page, or an OIDC ID token from the PKCE flow).
//!
//! The front door ([`crate::edge`]) turns a valid session cookie into `Authorization: Bearer
//! <credential>` before dispatch, so the REST API, the backend proxy and the kcp pass-through accept
//! a session exactly like a bearer, and the credential is re-authenticated on every request (a token
//! removed from the token file ends its sessions at once). The cookie itself is a random 256-bit
//! handle the hub signed ([`super::signed`]): a value it did not make is refused before any store
//! is asked, so a forged or stale cookie costs an anonymous caller's request no kcp read. The
//! session is a [`crate::records`] record named by a digest of the handle and sealed under another
//! digest of it: every replica honours it, it survives restarts, a sign-out on one replica ends it
//! on all of them, and what kcp stores is neither the cookie nor the credential. One user holds at
//! most [`crate::records::Kind::cap_per_owner`] sessions per replica: signing in again and again
//! ends the oldest.
//!
//! An OIDC session also keeps the identity provider's refresh token in its sealed record (never in
//! the cookie, never sent to the browser), and renews its ID token before it expires
//! ([`super::renew`]): such a session lasts its own lifetime, not the ID token's.
//!
//! Cookie-authenticated requests that change state must pass [`csrf_check`]: an `Origin` equal to
//! the hub's own origin plus the [`CSRF_HEADER`], which a cross-site HTML form cannot send. Requests
//! with their own `Authorization` header never look at cookies (the CLI and API path is unchanged),
//! except that sign-out ends the session of a cookie it is sent with whatever else the request
//! carries ([`SessionCookie`]).

use std::sync::Arc;
use std::time::Duration;

use faros_core::status::Status;
use http::{HeaderMap, HeaderValue, Method, header};
use jiff::Timestamp;

pub use super::grant::OidcGrant;
use super::grant::{Stored, unavailable};
use super::renew::{self, Refresher};
use super::signed::{Purpose, Signer};
use crate::records::{Kind, Records};

/// The session cookie. `__Host-`: the browser accepts it only with `Secure`, `Path=/` and no
/// `Domain`, so no sibling host can set or shadow it.
pub const COOKIE: &str = "__Host-faros-session";

/// The header a cookie-authenticated state change must carry (any non-empty value). Browsers let
/// only same-origin scripts set it; a cross-site form or image cannot.
pub const CSRF_HEADER: &str = "x-faros-csrf";

/// The longest cookie value looked at: [`Sessions::create`] makes 87 characters (a 256-bit handle
/// and its 256-bit tag, base64url).
const COOKIE_MAX: usize = 128;

/// How long sessions live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionSettings {
    /// Lifetime of a session from sign-in (the cookie's `Max-Age`). An OIDC session's ID token is
    /// re-verified on every request and renewed with its refresh token before it expires; a
    /// session without a refresh token (the IdP granted none) ends when its ID token does.
    pub ttl: Duration,
}

impl Default for SessionSettings {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(8 * 3600),
        }
    }
}

/// One signed-in browser.
#[derive(Clone)]
pub struct Session {
    /// The credential the user proved; sent on as the bearer. Never logged.
    pub credential: String,
    pub user: String,
    pub expires: Timestamp,
    /// For an OIDC sign-in: the refresh token and the ID token's lifetime.
    pub oidc: Option<OidcGrant>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("user", &self.user)
            .field("expires", &self.expires)
            .field("oidc", &self.oidc)
            .finish_non_exhaustive()
    }
}

/// The hub's sessions, kept as [`Kind::Session`] records.
pub struct Sessions {
    records: Records,
    settings: SessionSettings,
    /// The origin of the hub's configured public URL, also accepted by the CSRF check.
    pub public_origin: Option<String>,
    /// Renews OIDC sessions' ID tokens (the hub has an OIDC issuer).
    refresher: Option<Arc<dyn Refresher>>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("settings", &self.settings)
            .field("public_origin", &self.public_origin)
            .field("renews", &self.refresher.is_some())
            .finish()
    }
}

/// The session cookie a request came with, live or not, with or without its own `Authorization`
/// (request extension, set by [`apply`]): what sign-out ends.
#[derive(Clone)]
pub struct SessionCookie(pub String);

impl std::fmt::Debug for SessionCookie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionCookie(<redacted>)")
    }
}

/// A request that came with a valid session cookie (request extension, set by [`apply`]).
#[derive(Clone, Debug)]
pub struct SessionAuth {
    /// The session's record name (a digest of the cookie, not the cookie).
    pub name: String,
    pub expires: Timestamp,
    /// When the session's credential expires, for an OIDC session (it is renewed before then).
    pub credential_expires: Option<Timestamp>,
}

impl Sessions {
    pub fn new(records: Records, settings: SessionSettings) -> Self {
        Self {
            records,
            settings,
            public_origin: None,
            refresher: None,
        }
    }

    /// Renews OIDC sessions through `refresher` ([`renew`]).
    pub fn with_refresher(mut self, refresher: Option<Arc<dyn Refresher>>) -> Self {
        self.refresher = refresher;
        self
    }

    /// Also accepts `public_url`'s origin as the hub's own (the hub behind a proxy or ingress).
    pub fn with_public_url(mut self, public_url: Option<&str>) -> Self {
        self.public_origin = public_url.and_then(origin_of);
        self
    }

    pub fn settings(&self) -> SessionSettings {
        self.settings
    }

    /// Starts a session; returns the cookie value (random, 256 bits) and the session.
    pub async fn create(&self, credential: String, user: String) -> Result<(String, Session), Status> {
        self.create_with(credential, user, None).await
    }

    /// The signer of session cookies (the replicas' shared key, read once).
    async fn signer(&self) -> Result<Signer, Status> {
        let key = self.records.shared_key().await.map_err(|e| {
            tracing::warn!(error = %e, "cannot read the hub's cookie key");
            Status::unavailable("the session store is unavailable; try again")
        })?;
        Ok(Signer::new(&key))
    }

    /// Whether `value` is a session cookie this hub made (no store is asked).
    async fn signed(&self, value: &str) -> Result<bool, Status> {
        if value.len() > COOKIE_MAX {
            return Ok(false);
        }
        Ok(self.signer().await?.open(Purpose::Session, value).is_some())
    }

    /// Starts a session that may carry an OIDC grant (its refresh token).
    pub async fn create_with(
        &self,
        credential: String,
        user: String,
        oidc: Option<OidcGrant>,
    ) -> Result<(String, Session), Status> {
        let mut raw = [0u8; 32];
        aws_lc_rs::rand::fill(&mut raw).map_err(|_| Status::internal("no randomness for a session"))?;
        let value = self.signer().await?.sign(Purpose::Session, &raw);
        let span = jiff::SignedDuration::try_from(self.settings.ttl).unwrap_or(jiff::SignedDuration::MAX);
        let expires = self.records.now().checked_add(span).unwrap_or(Timestamp::MAX);
        let stored = Stored {
            credential,
            user: user.clone(),
            oidc,
        };
        self.records
            .put_owned(Kind::Session, &value, &user, &stored, expires)
            .await
            .map_err(unavailable)?;
        let session = Session {
            credential: stored.credential,
            user: stored.user,
            expires,
            oidc: stored.oidc,
        };
        Ok((value, session))
    }

    fn found(value: &str, s: Stored, expires: Timestamp) -> (SessionAuth, Session) {
        (
            SessionAuth {
                name: crate::records::seal::name(Kind::Session, value),
                expires,
                credential_expires: s.oidc.as_ref().map(|g| g.expires),
            },
            Session {
                credential: s.credential,
                user: s.user,
                expires,
                oidc: s.oidc,
            },
        )
    }

    /// The live session behind a cookie value. `Err` only when the store cannot answer.
    pub async fn lookup(&self, value: &str) -> Result<Option<(SessionAuth, Session)>, Status> {
        if !self.signed(value).await? {
            return Ok(None);
        }
        let found = self
            .records
            .get::<Stored>(Kind::Session, value)
            .await
            .map_err(unavailable)?;
        Ok(found.map(|(s, expires)| Self::found(value, s, expires)))
    }

    /// [`Sessions::lookup`], with the ID token of an OIDC session renewed first when it is due
    /// ([`renew`]); `None` also when the renewal was refused (the session has ended).
    pub async fn lookup_renewed(&self, value: &str) -> Result<Option<(SessionAuth, Session)>, Status> {
        let Some((auth, session)) = self.lookup(value).await? else {
            return Ok(None);
        };
        let (Some(refresher), Some(grant)) = (&self.refresher, &session.oidc) else {
            return Ok(Some((auth, session)));
        };
        if renew::decide(self.records.now(), grant) == renew::Step::Keep {
            return Ok(Some((auth, session)));
        }
        // In a task of its own: a request the client abandons must not abandon a claimed renewal
        // halfway (the refresh token spent at the IdP, the new one never written).
        let (records, handle, refresher) = (self.records.clone(), value.to_string(), refresher.clone());
        let renewed = tokio::spawn(async move { renew::renew(&records, &handle, refresher.as_ref()).await })
            .await
            .map_err(|e| Status::internal(format!("renewing the session: {e}")))??;
        Ok(renewed.map(|v| Self::found(value, v.value, v.expires)))
    }

    /// Ends a session (sign-out) on every replica.
    pub async fn remove(&self, auth: &SessionAuth) -> Result<(), Status> {
        self.records.delete_named(&auth.name).await.map_err(unavailable)
    }

    /// Ends the session behind a cookie value, if the hub made it (sign-out).
    pub async fn end(&self, value: &str) -> Result<(), Status> {
        if !self.signed(value).await? {
            return Ok(());
        }
        self.records.delete(Kind::Session, value).await.map_err(unavailable)
    }
}

/// The session cookie's value among the request's cookies.
pub fn cookie_value(headers: &HeaderMap) -> Option<&str> {
    cookie(headers, COOKIE)
}

/// The non-empty value of cookie `name` among the request's `Cookie` headers (the one reader of
/// cookies: the session here, the OIDC state in `login`).
pub fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value.trim())
        .filter(|v| !v.is_empty())
}

/// The request's cookies without the session cookie (it never reaches kcp or a provider).
pub fn without_session_cookie(headers: &mut HeaderMap) {
    let rest: Vec<String> = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .map(str::trim)
        .filter(|pair| !pair.is_empty() && pair.split_once('=').is_none_or(|(n, _)| n != COOKIE))
        .map(str::to_string)
        .collect();
    headers.remove(header::COOKIE);
    if !rest.is_empty()
        && let Ok(v) = HeaderValue::from_str(&rest.join("; "))
    {
        headers.insert(header::COOKIE, v);
    }
}

/// `Set-Cookie` starting a session of `max_age`.
pub fn set_cookie(value: &str, max_age: Duration) -> HeaderValue {
    let text = format!(
        "{COOKIE}={value}; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age={}",
        max_age.as_secs()
    );
    HeaderValue::from_str(&text).unwrap_or(HeaderValue::from_static("__Host-faros-session=; Path=/; Max-Age=0"))
}

/// `Set-Cookie` ending the session in the browser.
pub fn clear_cookie() -> HeaderValue {
    HeaderValue::from_static("__Host-faros-session=; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=0")
}

/// Why a cookie-authenticated request was refused as a possible cross-site request forgery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CsrfError {
    #[error("cross-site request refused: no Origin header")]
    NoOrigin,
    #[error("cross-site request refused: Origin is not this hub")]
    ForeignOrigin,
    #[error("cross-site request refused: the X-Faros-CSRF header is missing")]
    NoHeader,
}

/// Safe methods change nothing and need no CSRF proof.
pub fn is_safe(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The CSRF decision for a cookie-authenticated (or sign-in) request, IO-free: `origin` is the
/// `Origin` header, `own` the origins this hub is reached at ([`own_origins`]).
pub fn csrf_check(
    method: &Method,
    origin: Option<&str>,
    own: &[String],
    header_present: bool,
) -> Result<(), CsrfError> {
    if is_safe(method) {
        return Ok(());
    }
    let origin = origin
        .filter(|o| !o.is_empty() && *o != "null")
        .ok_or(CsrfError::NoOrigin)?;
    if !own.iter().any(|o| origin.eq_ignore_ascii_case(o)) {
        return Err(CsrfError::ForeignOrigin);
    }
    if !header_present {
        return Err(CsrfError::NoHeader);
    }
    Ok(())
}

/// The host a request was sent to.
pub fn request_authority<B>(req: &http::Request<B>) -> Option<String> {
    req.uri()
        .authority()
        .map(|a| a.as_str().to_string())
        .or_else(|| req.headers().get(header::HOST)?.to_str().ok().map(str::to_string))
}

/// `scheme://host[:port]` of a URL (the configured public URL).
pub fn origin_of(url: &str) -> Option<String> {
    let uri: http::Uri = url.parse().ok()?;
    Some(format!("{}://{}", uri.scheme_str()?, uri.authority()?.as_str()))
}

/// The origins a request may come from: as the hub serves it (`scheme` + the request's host), the
/// same host under the scheme a TLS-terminating proxy in front of it names (`X-Forwarded-Proto`),
/// and the configured public URL. `X-Forwarded-Host` is not one: any client can send it, and an
/// origin made of it would be whatever the client claims. A proxy that changes the host the hub
/// sees needs `--public-url`.
pub fn own_origins<B>(req: &http::Request<B>, scheme: &str, public_origin: Option<&str>) -> Vec<String> {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .map(|v| v.trim().to_string())
    };
    let mut own = Vec::with_capacity(3);
    let authority = request_authority(req);
    if let Some(a) = &authority {
        own.push(format!("{scheme}://{a}"));
    }
    if let (Some(proto), Some(host)) = (header("x-forwarded-proto"), authority) {
        own.push(format!("{proto}://{host}"));
    }
    if let Some(o) = public_origin {
        own.push(o.to_string());
    }
    own
}

/// [`csrf_check`] on a request.
pub fn check_request<B>(req: &http::Request<B>, scheme: &str, public_origin: Option<&str>) -> Result<(), Status> {
    let origin = req.headers().get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let present = req.headers().get(CSRF_HEADER).is_some_and(|v| !v.as_bytes().is_empty());
    csrf_check(req.method(), origin, &own_origins(req, scheme, public_origin), present)
        .map_err(|e| Status::forbidden(e.to_string()))
}

/// The front door's session step: a request without `Authorization` but with a live session
/// cookie gets the session's credential as its bearer (after the CSRF check for state changes).
/// The session cookie is removed from every request. `Err` is the response to send instead.
pub async fn apply<B>(sessions: &Sessions, scheme: &str, req: &mut http::Request<B>) -> Result<(), Status> {
    let Some(value) = cookie_value(req.headers()).map(str::to_string) else {
        return Ok(());
    };
    without_session_cookie(req.headers_mut());
    req.extensions_mut().insert(SessionCookie(value.clone()));
    if req.headers().contains_key(header::AUTHORIZATION) {
        return Ok(());
    }
    let Some((auth, session)) = sessions.lookup_renewed(&value).await? else {
        // Unknown or expired: the request goes on without credentials and authenticated routes
        // answer 401, which sends the portal back to sign-in.
        return Ok(());
    };
    check_request(req, scheme, sessions.public_origin.as_deref())?;
    let bearer = HeaderValue::from_str(&format!("Bearer {}", session.credential))
        .map_err(|_| Status::unauthorized("the session's credential is not a valid header"))?;
    req.headers_mut().insert(header::AUTHORIZATION, bearer);
    req.extensions_mut().insert(auth);
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use super::*;
    use crate::catalog::clock::ManualClock;

    #[test]
    fn csrf_decisions() {
        let own = vec!["https://hub.example:8443".to_string()];
        for (method, origin, header, want) in [
            (Method::GET, None, false, Ok(())),
            (Method::HEAD, Some("https://evil.example"), false, Ok(())),
            (Method::POST, Some("https://hub.example:8443"), true, Ok(())),
            (Method::DELETE, Some("https://HUB.example:8443"), true, Ok(())),
            (Method::POST, None, true, Err(CsrfError::NoOrigin)),
            (Method::POST, Some("null"), true, Err(CsrfError::NoOrigin)),
            (
                Method::PUT,
                Some("https://evil.example"),
                true,
                Err(CsrfError::ForeignOrigin),
            ),
            (
                Method::POST,
                Some("http://hub.example:8443"),
                true,
                Err(CsrfError::ForeignOrigin),
            ),
            (
                Method::POST,
                Some("https://hub.example"),
                true,
                Err(CsrfError::ForeignOrigin),
            ),
            (
                Method::PATCH,
                Some("https://hub.example:8443"),
                false,
                Err(CsrfError::NoHeader),
            ),
        ] {
            assert_eq!(csrf_check(&method, origin, &own, header), want, "{method} {origin:?}");
        }
        assert_eq!(
            csrf_check(&Method::POST, Some("https://hub.example:8443"), &[], true),
            Err(CsrfError::ForeignOrigin),
            "no known origin"
        );
    }

    #[test]
    fn own_origins_of_a_request() {
        let req = |headers: &[(&str, &str)]| {
            let mut b = http::Request::builder()
                .uri("/api/orgs")
                .header(header::HOST, "hub:8080");
            for (k, v) in headers {
                b = b.header(*k, *v);
            }
            b.body(()).unwrap()
        };
        assert_eq!(own_origins(&req(&[]), "http", None), vec!["http://hub:8080"]);
        assert_eq!(
            own_origins(
                &req(&[
                    ("x-forwarded-proto", "https"),
                    ("x-forwarded-host", "portal.example, inner")
                ]),
                "http",
                Some("https://hub.example")
            ),
            // A client's X-Forwarded-Host names no origin of the hub's.
            vec!["http://hub:8080", "https://hub:8080", "https://hub.example"]
        );
        assert_eq!(
            own_origins(&req(&[("x-forwarded-proto", "https")]), "http", None),
            vec!["http://hub:8080", "https://hub:8080"]
        );
        let h2 = http::Request::builder()
            .uri("https://hub.example:8443/api/orgs")
            .body(())
            .unwrap();
        assert_eq!(own_origins(&h2, "https", None), vec!["https://hub.example:8443"]);
        assert_eq!(
            origin_of("https://hub.example/base/"),
            Some("https://hub.example".to_string())
        );
        assert_eq!(origin_of("not a url"), None);
    }

    #[test]
    fn cookies_are_found_and_stripped() {
        let mut h = HeaderMap::new();
        h.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; __Host-faros-session=abc ; b=2"),
        );
        h.append(header::COOKIE, HeaderValue::from_static("c=3"));
        assert_eq!(cookie_value(&h), Some("abc"));
        without_session_cookie(&mut h);
        assert_eq!(h.get(header::COOKIE).unwrap(), "a=1; b=2; c=3");
        assert_eq!(cookie_value(&h), None);
        let mut only = HeaderMap::new();
        only.insert(header::COOKIE, HeaderValue::from_static("__Host-faros-session=x"));
        without_session_cookie(&mut only);
        assert!(only.get(header::COOKIE).is_none());
    }

    fn sessions(clock: Arc<ManualClock>, ttl: Duration) -> Sessions {
        Sessions::new(Records::in_process(clock), SessionSettings { ttl })
    }

    #[tokio::test]
    async fn sessions_expire_and_end() {
        let clock = Arc::new(ManualClock::new("2026-01-01T00:00:00Z".parse().unwrap()));
        let sessions = sessions(clock.clone(), Duration::from_secs(60));
        let (value, s) = sessions.create("tok".into(), "alice".into()).await.unwrap();
        assert!(value.len() <= COOKIE_MAX, "{value}");
        assert_eq!(s.user, "alice");
        let (auth, found) = sessions.lookup(&value).await.unwrap().unwrap();
        assert_eq!(found.credential, "tok");
        assert!(!auth.name.contains(&value), "the record name is not the cookie");
        assert!(sessions.lookup("other").await.unwrap().is_none());
        assert!(sessions.lookup(&"x".repeat(43)).await.unwrap().is_none());
        // A well-formed value the hub did not sign is not looked up: a signed one with another
        // handle, made under another key, is refused too.
        let foreign = Signer::new(&[1; 32]).sign(Purpose::Session, &[0; 32]);
        assert!(sessions.lookup(&foreign).await.unwrap().is_none());
        clock.advance(Duration::from_secs(61));
        assert!(sessions.lookup(&value).await.unwrap().is_none(), "expired");
        let (value, _) = sessions.create("tok".into(), "alice".into()).await.unwrap();
        sessions.remove(&auth).await.unwrap();
        assert!(
            sessions.lookup(&value).await.unwrap().is_some(),
            "removing another session keeps this one"
        );
        let (auth, _) = sessions.lookup(&value).await.unwrap().unwrap();
        sessions.remove(&auth).await.unwrap();
        assert!(sessions.lookup(&value).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn apply_turns_a_session_into_a_bearer() {
        let clock = Arc::new(ManualClock::new("2026-01-01T00:00:00Z".parse().unwrap()));
        let sessions = sessions(clock, SessionSettings::default().ttl);
        let (value, _) = sessions.create("tok".into(), "alice".into()).await.unwrap();
        let cookie = format!("{COOKIE}={value}; theme=dark");
        let get = |method: Method, extra: &[(&str, &str)]| {
            let mut b = http::Request::builder()
                .method(method)
                .uri("/api/me")
                .header(header::HOST, "hub:1")
                .header(header::COOKIE, &cookie);
            for (k, v) in extra {
                b = b.header(*k, *v);
            }
            b.body(()).unwrap()
        };
        let mut req = get(Method::GET, &[]);
        apply(&sessions, "https", &mut req).await.unwrap();
        assert_eq!(req.headers()[header::AUTHORIZATION], "Bearer tok");
        assert_eq!(req.headers()[header::COOKIE], "theme=dark");
        assert!(req.extensions().get::<SessionAuth>().is_some());

        let mut req = get(Method::POST, &[("origin", "https://evil")]);
        assert_eq!(apply(&sessions, "https", &mut req).await.unwrap_err().code, 403);
        let mut req = get(Method::POST, &[("origin", "https://hub:1"), (CSRF_HEADER, "1")]);
        apply(&sessions, "https", &mut req).await.unwrap();
        assert_eq!(req.headers()[header::AUTHORIZATION], "Bearer tok");

        // An explicit bearer wins and is not CSRF-checked (no cookie authority involved).
        let mut req = get(Method::POST, &[("authorization", "Bearer other")]);
        apply(&sessions, "https", &mut req).await.unwrap();
        assert_eq!(req.headers()[header::AUTHORIZATION], "Bearer other");
        assert_eq!(req.headers()[header::COOKIE], "theme=dark");

        // An unknown session: no credentials, no CSRF refusal (authenticated routes answer 401).
        let mut req = http::Request::builder()
            .method(Method::POST)
            .uri("/api/orgs")
            .header(header::COOKIE, format!("{COOKIE}=stale"))
            .body(())
            .unwrap();
        apply(&sessions, "https", &mut req).await.unwrap();
        assert!(req.headers().get(header::AUTHORIZATION).is_none());
    }
}
