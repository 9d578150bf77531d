//! `/api/session`: sign-in with a token, the session's user, sign-out; and the OIDC
//! authorization-code flow with PKCE (`/api/session/oidc`, `/api/session/oidc/callback`), which
//! ends in the same session.
//!
//! A sign-in proves the credential once through the hub's [`crate::auth::Authenticator`] (the same
//! chain bearer clients pass, with the same admission), then [`super::session`] keeps it. The OIDC
//! flow is a public client (no secret): the `state`, the PKCE verifier, the nonce and where to
//! return wait in the browser, in a short-lived `SameSite=Lax` cookie the hub signed
//! ([`super::signed`]; a `Strict` cookie is not sent on the identity provider's redirect back). So
//! starting a sign-in, which anyone may do, makes the hub store nothing, and the callback may land
//! on any replica (and after a restart). The code it carries is spent at the identity provider
//! once; the cookie is cleared with it. The provider's discovery document is cached
//! ([`DISCOVERY_FRESH`]), so anonymous sign-in starts do not each cost the provider a request.
//!
//! The flow asks for `offline_access` (with `prompt=consent`, which OpenID Connect requires for
//! it) and `groups` when the provider's discovery lists them: the refresh token stays in the
//! sealed session record and renews the ID token ([`super::renew`], through [`OidcLogin`]'s
//! [`Refresher`]). Sign-out ends the hub session and, when the provider has an
//! `end_session_endpoint`, sends the browser through the provider's logout (RP-initiated logout
//! with `client_id` and `post_logout_redirect_uri`), so signing in again asks for credentials. The
//! ID token is not sent as `id_token_hint`: it would sit in the browser's history and the
//! provider's logs while it is still valid, and a bearer of it is the user until it expires.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Json};
use base64::Engine;
use faros_core::status::Status;
use futures::future::BoxFuture;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::renew::{Refresher, RenewError, Renewed};
use super::session::{self, OidcGrant, SessionAuth, SessionCookie, Sessions};
use super::signed::{Purpose, Signer};
use crate::auth::{Authenticator, Caller, CredentialSource, OidcSettings};
use crate::proxy::UpstreamPool;
use crate::records::Records;
use crate::serving::HttpSettings;

/// Largest sign-in request body.
const MAX_LOGIN_BODY: usize = 16 * 1024;
/// Largest discovery or token response.
const MAX_IDP_BODY: usize = 256 * 1024;
/// How long a started OIDC sign-in may take.
const PENDING_TTL: Duration = Duration::from_secs(600);
/// How long a fetched discovery document is used before it is fetched again.
pub const DISCOVERY_FRESH: Duration = Duration::from_secs(300);
/// How long a discovery document is still used when the provider does not answer a refetch.
const DISCOVERY_STALE: Duration = Duration::from_secs(3600);
/// The OIDC flow's state cookie; scoped to the flow's path.
const STATE_COOKIE: &str = "__Secure-faros-oidc";
pub const CALLBACK: &str = "/api/session/oidc/callback";
/// Where the provider sends the browser after RP-initiated logout.
const SIGNED_OUT: &str = "/portal/signin?signedOut=1";
/// The redirect to the provider's logout.
pub const LOGOUT: &str = "/api/session/oidc/logout";

/// What the session API's handlers read: an axum sub-state of the hub's state, so this module needs
/// nothing above the portal.
#[derive(Clone)]
pub struct SessionApi {
    pub authn: Arc<dyn Authenticator>,
    pub sessions: Arc<Sessions>,
    pub oidc_login: Option<Arc<OidcLogin>>,
    pub settings: HttpSettings,
}

fn session_body(caller: &Caller, expires: Option<jiff::Timestamp>, token_expires: Option<jiff::Timestamp>) -> Value {
    json!({
        "user": caller.user,
        "groups": caller.groups,
        "expiresAt": expires.map(|t| t.to_string()),
        // An OIDC session's current ID token; renewed before then.
        "tokenExpiresAt": token_expires.map(|t| t.to_string()),
    })
}

/// Starts a session for a proven credential: 201 with the user and a `Set-Cookie`.
async fn start_session(
    st: &SessionApi,
    credential: String,
    caller: &Caller,
    oidc: Option<OidcGrant>,
) -> Result<(HeaderValue, Value), Status> {
    let token_expires = oidc.as_ref().map(|g| g.expires);
    let (value, s) = st.sessions.create_with(credential, caller.user.clone(), oidc).await?;
    let cookie = session::set_cookie(&value, st.sessions.settings().ttl);
    tracing::info!(user = %caller.user, source = ?caller.source, "portal session started");
    Ok((cookie, session_body(caller, Some(s.expires), token_expires)))
}

fn bearer_headers(token: &str) -> Result<HeaderMap, Status> {
    let mut h = HeaderMap::new();
    let v = HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| Status::bad_request("the token contains characters a header cannot carry"))?;
    h.insert(header::AUTHORIZATION, v);
    Ok(h)
}

/// `POST /api/session {"token"}`: the same CSRF proof as any cookie-authenticated change (a
/// forged sign-in would put the victim into the attacker's account).
pub async fn sign_in(State(st): State<SessionApi>, req: Request) -> Response {
    match sign_in_inner(&st, req).await {
        Ok(resp) => resp,
        Err(status) => status.into_response(),
    }
}

async fn sign_in_inner(st: &SessionApi, req: Request) -> Result<Response, Status> {
    session::check_request(&req, st.settings.public_proto, st.sessions.public_origin.as_deref())?;
    let body = Limited::new(req.into_body(), MAX_LOGIN_BODY)
        .collect()
        .await
        .map_err(|_| Status::too_large(format!("a sign-in request is at most {MAX_LOGIN_BODY} bytes")))?
        .to_bytes();
    let parsed: Value =
        serde_json::from_slice(&body).map_err(|_| Status::bad_request("expected JSON {\"token\": \"…\"}"))?;
    let token = parsed
        .get("token")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| Status::bad_request("expected JSON {\"token\": \"…\"}"))?
        .to_string();
    let caller = st.authn.authenticate(&bearer_headers(&token)?).await?;
    let (cookie, body) = start_session(st, token, &caller, None).await?;
    let mut resp = (StatusCode::CREATED, Json(body)).into_response();
    resp.headers_mut().insert(header::SET_COOKIE, cookie);
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(resp)
}

/// `GET /api/session`: who is signed in, and until when (`null` for bearer clients).
pub async fn whoami(Extension(caller): Extension<Caller>, auth: Option<Extension<SessionAuth>>) -> Response {
    let (expires, token_expires) = match auth {
        Some(Extension(a)) => (Some(a.expires), a.credential_expires),
        None => (None, None),
    };
    let mut resp = Json(session_body(&caller, expires, token_expires)).into_response();
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// `DELETE /api/session`: ends the session of the cookie it is sent with (its CSRF proof was
/// checked by the front door; with an `Authorization` header of its own too, which must not leave
/// the cookie's session alive) and clears the cookie. For an OIDC session whose provider offers
/// RP-initiated logout, 200 `{"logoutUrl": "/api/session/oidc/logout"}`: the portal navigates
/// there, the hub redirects to the provider's logout, the provider ends its own session and sends
/// the browser back to the sign-in page. Otherwise 204.
pub async fn sign_out(
    State(st): State<SessionApi>,
    auth: Option<Extension<SessionAuth>>,
    cookie: Option<Extension<SessionCookie>>,
) -> Response {
    if let Some(Extension(SessionCookie(value))) = &cookie
        && let Err(status) = st.sessions.end(value).await
    {
        // The session would live on: the browser keeps its cookie and may try again.
        return status.into_response();
    }
    let oidc_session = auth.is_some_and(|Extension(a)| a.credential_expires.is_some());
    let logout = match (&st.oidc_login, oidc_session) {
        (Some(login), true) => match login.discovery().await {
            Ok(endpoints) => endpoints.end_session.map(|_| LOGOUT),
            Err(status) => {
                // The hub session has ended; the provider's stays (signing in again may skip its form).
                tracing::warn!(reason = %status.message, "no RP-initiated logout at sign-out");
                None
            }
        },
        _ => None,
    };
    let mut resp = match logout {
        Some(url) => Json(json!({ "logoutUrl": url })).into_response(),
        None => StatusCode::NO_CONTENT.into_response(),
    };
    resp.headers_mut().insert(header::SET_COOKIE, session::clear_cookie());
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// `GET /api/session/oidc/logout`: 303 to the provider's logout (it holds no credential: the
/// client ID and where to come back), or to the signed-out page when there is none.
pub async fn oidc_logout(State(st): State<SessionApi>, uri: http::Uri, headers: HeaderMap) -> Response {
    let authority = uri
        .authority()
        .map(|a| a.as_str().to_string())
        .or_else(|| headers.get(header::HOST)?.to_str().ok().map(str::to_string));
    let found = match &st.oidc_login {
        Some(login) => login
            .logout_url(&headers, authority, st.settings.public_proto)
            .await
            .ok()
            .flatten(),
        None => None,
    };
    let mut resp = Redirect::to(found.as_deref().unwrap_or(SIGNED_OUT)).into_response();
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// `GET /api/session/options`: what the sign-in page offers.
pub async fn options(State(st): State<SessionApi>) -> Response {
    Json(json!({
        "token": true,
        "oidc": st.oidc_login.as_ref().map(|o| json!({"issuer": o.settings.issuer_url})),
    }))
    .into_response()
}

// ----- OIDC authorization code + PKCE ------------------------------------------------------------

/// A started sign-in, signed into the browser's state cookie until the callback.
#[derive(serde::Serialize, serde::Deserialize)]
struct Pending {
    state: String,
    verifier: String,
    nonce: String,
    redirect_uri: String,
    return_to: String,
    /// Unix seconds after which the callback refuses it.
    expires: i64,
}

/// The OIDC sign-in flow's configuration and the sign-ins in flight.
pub struct OidcLogin {
    pub settings: OidcSettings,
    http: UpstreamPool,
    /// The hub's public URL, if configured (else the request's own origin).
    public_url: Option<String>,
    /// The clock, and the replicas' shared key that signs sign-ins in flight.
    records: Records,
    /// The provider's discovery document, as last fetched.
    discovered: std::sync::Mutex<Discovered>,
    /// Verifies renewed ID tokens (the hub's chain: the same checks as every bearer).
    authn: Option<Arc<dyn Authenticator>>,
}

/// The cached discovery document and the last failed fetch.
#[derive(Default)]
struct Discovered {
    endpoints: Option<(Endpoints, std::time::Instant)>,
    failed: Option<std::time::Instant>,
}

/// What the cache answers for a discovery wanted now: the cached document, a fetch, or (the
/// provider failed a moment ago and nothing usable is cached) a refusal without asking it again.
#[derive(Debug, PartialEq, Eq)]
enum DiscoveryStep {
    Cached,
    Fetch,
    Refuse,
}

/// IO-free: what to do about a discovery document fetched `age` ago (if ever), when the last fetch
/// failed `failed` ago (if it did).
fn discovery_step(age: Option<Duration>, failed: Option<Duration>, min_interval: Duration) -> DiscoveryStep {
    let recently_failed = failed.is_some_and(|f| f < min_interval);
    match age {
        Some(a) if a < DISCOVERY_FRESH => DiscoveryStep::Cached,
        // Stale but usable: kept while the provider is asked again, at most every `min_interval`.
        Some(a) if a < DISCOVERY_STALE && recently_failed => DiscoveryStep::Cached,
        _ if recently_failed => DiscoveryStep::Refuse,
        _ => DiscoveryStep::Fetch,
    }
}

/// What the provider's discovery document says the flow needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoints {
    pub authorization: String,
    pub token: String,
    pub end_session: Option<String>,
    /// `scopes_supported`, if listed.
    pub scopes: Option<Vec<String>>,
}

/// The scopes a sign-in asks for, and whether it must ask for consent: `groups` and
/// `offline_access` only when the provider lists them (an unknown scope may fail the sign-in);
/// `offline_access` is granted only with `prompt=consent` (OpenID Connect Core 11).
pub fn scopes(supported: Option<&[String]>) -> (String, bool) {
    let offers = |s: &str| supported.is_some_and(|list| list.iter().any(|x| x == s));
    let mut scopes = vec!["openid", "email", "profile"];
    if offers("groups") {
        scopes.push("groups");
    }
    let offline = offers("offline_access");
    if offline {
        scopes.push("offline_access");
    }
    (scopes.join(" "), offline)
}

/// A token endpoint's answer to a refresh: refused (final) or not reachable (transient).
fn refresh_error(status: Option<StatusCode>, detail: String) -> RenewError {
    match status {
        // RFC 6749 5.2: invalid_grant and friends are 400 (401 for client authentication).
        Some(s) if s == StatusCode::BAD_REQUEST || s == StatusCode::UNAUTHORIZED => RenewError::Refused(detail),
        _ => RenewError::Unavailable(detail),
    }
}

impl std::fmt::Debug for OidcLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcLogin")
            .field("issuer", &self.settings.issuer_url)
            .finish()
    }
}

fn random_b64(bytes: usize) -> Result<String, Status> {
    let mut raw = vec![0u8; bytes];
    aws_lc_rs::rand::fill(&mut raw).map_err(|_| Status::internal("no randomness"))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw))
}

/// RFC 7636 S256: `BASE64URL(SHA256(verifier))`.
pub fn pkce_challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// `application/x-www-form-urlencoded` / query component encoding.
pub fn form_encode(pairs: &[(&str, &str)]) -> String {
    let enc = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Only portal paths are valid places to return to after sign-in (no open redirect): no `//` or
/// `\\` (another host to a browser), and no `.` or `..` segment, percent-encoded or not (which a
/// browser resolves to a path outside the portal, such as `/portal/../api/…`).
pub fn safe_return(path: Option<&str>) -> String {
    let dot_segment = |p: &str| {
        let path = p.split(['?', '#']).next().unwrap_or_default();
        path.split('/').any(|seg| {
            let seg = seg.to_ascii_lowercase().replace("%2e", ".");
            seg == "." || seg == ".."
        })
    };
    match path {
        Some(p) if p.starts_with("/portal/") && !p.contains("//") && !p.contains('\\') && !dot_segment(p) => {
            p.to_string()
        }
        _ => "/portal/".to_string(),
    }
}

/// The claims of a JWT (already verified by the authenticator).
fn jwt_claims(token: &str) -> Option<Value> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The `nonce` claim of a JWT (already verified by the authenticator).
fn jwt_nonce(token: &str) -> Option<String> {
    jwt_claims(token)?.get("nonce")?.as_str().map(str::to_string)
}

/// The `iat` and `exp` of a verified ID token (`iat` defaults to `now`).
fn jwt_lifetime(token: &str, now: jiff::Timestamp) -> Option<(jiff::Timestamp, jiff::Timestamp)> {
    let claims = jwt_claims(token)?;
    let at = |name: &str| {
        claims
            .get(name)?
            .as_i64()
            .and_then(|s| jiff::Timestamp::from_second(s).ok())
    };
    Some((at("iat").unwrap_or(now), at("exp")?))
}

impl OidcLogin {
    pub fn new(settings: OidcSettings, http: UpstreamPool, public_url: Option<String>, records: Records) -> Self {
        Self {
            settings,
            http,
            public_url,
            records,
            discovered: std::sync::Mutex::default(),
            authn: None,
        }
    }

    async fn signer(&self) -> Result<Signer, Status> {
        let key = self.records.shared_key().await.map_err(|e| {
            tracing::warn!(error = %e, "cannot read the hub's cookie key");
            Status::unavailable("the session store is unavailable; try again")
        })?;
        Ok(Signer::new(&key))
    }

    /// Verifies renewed ID tokens with `authn` (without it, sessions are not renewed).
    pub fn with_authenticator(mut self, authn: Arc<dyn Authenticator>) -> Self {
        self.authn = Some(authn);
        self
    }

    /// The provider's logout URL, if it offers RP-initiated logout: the client and where to come
    /// back (OpenID Connect RP-Initiated Logout 1.0 allows `client_id` instead of the ID token).
    async fn logout_url(
        &self,
        headers: &HeaderMap,
        authority: Option<String>,
        proto: &str,
    ) -> Result<Option<String>, Status> {
        let Some(end_session) = self.discovery().await?.end_session else {
            return Ok(None);
        };
        let back = format!("{}{SIGNED_OUT}", self.base_url(headers, authority, proto)?);
        let query = form_encode(&[
            ("client_id", &self.settings.client_id),
            ("post_logout_redirect_uri", &back),
        ]);
        let sep = if end_session.contains('?') { '&' } else { '?' };
        Ok(Some(format!("{end_session}{sep}{query}")))
    }

    /// The refresh-token grant at the token endpoint.
    async fn refresh_tokens(&self, refresh_token: &str) -> Result<Value, RenewError> {
        let unavailable = |e: String| RenewError::Unavailable(e);
        let endpoints = self.discovery().await.map_err(|s| unavailable(s.message))?;
        let form = form_encode(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", &self.settings.client_id),
        ]);
        let req = http::Request::post(&endpoints.token)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .body(Body::from(form))
            .map_err(|e| unavailable(e.to_string()))?;
        let fetch = async {
            let resp = self
                .http
                .request(req)
                .await
                .map_err(|e| refresh_error(None, e.to_string()))?;
            let status = resp.status();
            let body = Limited::new(resp.into_body(), MAX_IDP_BODY)
                .collect()
                .await
                .map_err(|e| refresh_error(None, e.to_string()))?
                .to_bytes();
            let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            if !status.is_success() {
                // The error code and description only: the body never holds the token.
                let what = ["error", "error_description"]
                    .iter()
                    .filter_map(|k| parsed.get(*k)?.as_str())
                    .collect::<Vec<_>>()
                    .join(": ");
                return Err(refresh_error(Some(status), format!("status {status}: {what}")));
            }
            Ok(parsed)
        };
        match tokio::time::timeout(self.settings.fetch_timeout, fetch).await {
            Ok(r) => r,
            Err(_) => Err(unavailable("the token endpoint timed out".into())),
        }
    }

    /// A JSON request to the provider. A 400 or 401 answer (RFC 6749 5.2: the provider refused
    /// the grant) is 401 saying `refused`; anything else that fails is 503.
    async fn send(&self, req: http::Request<Body>, refused: &'static str) -> Result<Value, Status> {
        let what = req.uri().to_string();
        let unavailable = |e: String| {
            tracing::warn!(url = %what, error = %e, "OIDC provider request failed");
            Status::unavailable("the identity provider did not answer; try again")
        };
        let fetch = async {
            let resp = self.http.request(req).await.map_err(|e| (None, e.to_string()))?;
            let status = resp.status();
            let body = Limited::new(resp.into_body(), MAX_IDP_BODY)
                .collect()
                .await
                .map_err(|e| (None, e.to_string()))?
                .to_bytes();
            if !status.is_success() {
                return Err((
                    Some(status),
                    format!("status {status}: {}", String::from_utf8_lossy(&body)),
                ));
            }
            serde_json::from_slice::<Value>(&body).map_err(|e| (None, format!("not JSON: {e}")))
        };
        match tokio::time::timeout(self.settings.fetch_timeout, fetch).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err((Some(s), e))) if s == StatusCode::BAD_REQUEST || s == StatusCode::UNAUTHORIZED => {
                tracing::info!(url = %what, error = %e, "the OIDC provider refused a request");
                Err(Status::unauthorized(refused))
            }
            Ok(Err((_, e))) => Err(unavailable(e)),
            Err(_) => Err(unavailable("timed out".into())),
        }
    }

    /// The provider's discovery document, cached ([`discovery_step`]).
    async fn discovery(&self) -> Result<Endpoints, Status> {
        let now = std::time::Instant::now();
        let (step, cached) = {
            let d = self.discovered.lock().unwrap_or_else(|p| p.into_inner());
            let age = d.endpoints.as_ref().map(|(_, at)| now.duration_since(*at));
            let failed = d.failed.map(|at| now.duration_since(at));
            (
                discovery_step(age, failed, self.settings.jwks_min_interval),
                d.endpoints.as_ref().map(|(e, _)| e.clone()),
            )
        };
        match (step, cached) {
            (DiscoveryStep::Cached, Some(endpoints)) => return Ok(endpoints),
            (DiscoveryStep::Refuse, _) => {
                return Err(Status::unavailable("the identity provider did not answer; try again"));
            }
            _ => {}
        }
        let fetched = self.fetch_discovery().await;
        let mut d = self.discovered.lock().unwrap_or_else(|p| p.into_inner());
        match fetched {
            Ok(endpoints) => {
                d.endpoints = Some((endpoints.clone(), std::time::Instant::now()));
                d.failed = None;
                Ok(endpoints)
            }
            Err(status) => {
                d.failed = Some(std::time::Instant::now());
                match &d.endpoints {
                    Some((endpoints, at)) if at.elapsed() < DISCOVERY_STALE => Ok(endpoints.clone()),
                    _ => Err(status),
                }
            }
        }
    }

    async fn fetch_discovery(&self) -> Result<Endpoints, Status> {
        let url = format!(
            "{}/.well-known/openid-configuration",
            self.settings.issuer_url.trim_end_matches('/')
        );
        let req = http::Request::get(&url)
            .header(header::ACCEPT, "application/json")
            .body(Body::empty())
            .map_err(|e| Status::internal(format!("{url}: {e}")))?;
        let doc = self
            .send(req, "the identity provider refused its discovery request")
            .await?;
        let field = |name: &str| {
            doc.get(name)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| Status::unavailable(format!("the identity provider's discovery has no {name}")))
        };
        Ok(Endpoints {
            authorization: field("authorization_endpoint")?,
            token: field("token_endpoint")?,
            end_session: doc
                .get("end_session_endpoint")
                .and_then(Value::as_str)
                .map(str::to_string),
            scopes: doc
                .get("scopes_supported")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()),
        })
    }

    /// The hub's public URL, else the origin the request reached it at.
    fn base_url(&self, req_headers: &HeaderMap, authority: Option<String>, proto: &str) -> Result<String, Status> {
        Ok(match &self.public_url {
            Some(u) => u.trim_end_matches('/').to_string(),
            None => {
                let host = authority
                    .or_else(|| req_headers.get(header::HOST)?.to_str().ok().map(str::to_string))
                    .ok_or_else(|| Status::bad_request("no Host header"))?;
                format!("{proto}://{host}")
            }
        })
    }

    fn redirect_uri(&self, req_headers: &HeaderMap, authority: Option<String>, proto: &str) -> Result<String, Status> {
        Ok(format!("{}{CALLBACK}", self.base_url(req_headers, authority, proto)?))
    }
}

#[derive(Debug, serde::Deserialize)]
pub struct StartParams {
    #[serde(rename = "return")]
    return_to: Option<String>,
}

/// `GET /api/session/oidc[?return=/portal/…]`: 302 to the identity provider.
pub async fn oidc_start(
    State(st): State<SessionApi>,
    Query(p): Query<StartParams>,
    uri: http::Uri,
    headers: HeaderMap,
) -> Response {
    let Some(login) = st.oidc_login.clone() else {
        return Status::not_found_message("this hub has no OIDC issuer configured").into_response();
    };
    let authority = uri
        .authority()
        .map(|a| a.as_str().to_string())
        .or_else(|| headers.get(header::HOST)?.to_str().ok().map(str::to_string));
    match oidc_start_inner(&st, &login, p, &headers, authority).await {
        Ok(resp) => resp,
        Err(status) => status.into_response(),
    }
}

async fn oidc_start_inner(
    st: &SessionApi,
    login: &OidcLogin,
    p: StartParams,
    headers: &HeaderMap,
    authority: Option<String>,
) -> Result<Response, Status> {
    let endpoints = login.discovery().await?;
    let authorize = endpoints.authorization;
    let (scope, consent) = scopes(endpoints.scopes.as_deref());
    let state = random_b64(32)?;
    let verifier = random_b64(32)?;
    let nonce = random_b64(16)?;
    let redirect_uri = login.redirect_uri(headers, authority, st.settings.public_proto)?;
    let challenge = pkce_challenge(&verifier);
    let mut params = vec![
        ("response_type", "code"),
        ("client_id", login.settings.client_id.as_str()),
        ("redirect_uri", redirect_uri.as_str()),
        ("scope", scope.as_str()),
        ("state", state.as_str()),
        ("nonce", nonce.as_str()),
        ("code_challenge", challenge.as_str()),
        ("code_challenge_method", "S256"),
    ];
    if consent {
        params.push(("prompt", "consent"));
    }
    let query = form_encode(&params);
    let sep = if authorize.contains('?') { '&' } else { '?' };
    let location = format!("{authorize}{sep}{query}");
    let pending = Pending {
        state,
        verifier,
        nonce,
        redirect_uri,
        return_to: safe_return(p.return_to.as_deref()),
        expires: login
            .records
            .now()
            .as_second()
            .saturating_add(PENDING_TTL.as_secs() as i64),
    };
    let json = serde_json::to_vec(&pending).map_err(|e| Status::internal(format!("the sign-in state: {e}")))?;
    let value = login.signer().await?.sign(Purpose::SignIn, &json);
    let mut resp = Redirect::to(&location).into_response();
    let cookie = format!(
        "{STATE_COOKIE}={value}; Path=/api/session/oidc; Secure; HttpOnly; SameSite=Lax; Max-Age={}",
        PENDING_TTL.as_secs()
    );
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    Ok(resp)
}

#[derive(Debug, serde::Deserialize)]
pub struct CallbackParams {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

fn state_cookie(headers: &HeaderMap) -> Option<&str> {
    super::session::cookie(headers, STATE_COOKIE)
}

/// Back to the sign-in page with a message (the page shows it).
fn to_signin(message: &str) -> Response {
    let location = format!("/portal/signin?{}", form_encode(&[("error", message)]));
    Redirect::to(&location).into_response()
}

/// `GET /api/session/oidc/callback?code&state`: exchanges the code (with the PKCE verifier),
/// verifies the ID token like any bearer, checks the nonce, starts the session, 302 to the portal.
pub async fn oidc_callback(
    State(st): State<SessionApi>,
    Query(p): Query<CallbackParams>,
    headers: HeaderMap,
) -> Response {
    let Some(login) = st.oidc_login.clone() else {
        return Status::not_found_message("this hub has no OIDC issuer configured").into_response();
    };
    if let Some(error) = p.error {
        let what = p.error_description.unwrap_or(error);
        return to_signin(&format!("The identity provider refused the sign-in: {what}"));
    }
    let (Some(code), Some(state)) = (p.code, p.state) else {
        return to_signin("The identity provider's answer had no code.");
    };
    let signer = match login.signer().await {
        Ok(signer) => signer,
        Err(status) => return to_signin(&status.message),
    };
    let pending = state_cookie(&headers)
        .and_then(|v| signer.open(Purpose::SignIn, v))
        .and_then(|json| serde_json::from_slice::<Pending>(&json).ok())
        .filter(|p| p.state == state);
    let Some(pending) = pending else {
        return to_signin("This sign-in was not started in this browser; try again.");
    };
    if pending.expires <= login.records.now().as_second() {
        return to_signin("The sign-in took too long; try again.");
    }
    let clear = format!("{STATE_COOKIE}=; Path=/api/session/oidc; Secure; HttpOnly; SameSite=Lax; Max-Age=0");
    let clear = HeaderValue::from_str(&clear).ok();
    match finish(&st, &login, code, pending).await {
        Ok((cookie, return_to)) => {
            let mut resp = Redirect::to(&return_to).into_response();
            resp.headers_mut().append(header::SET_COOKIE, cookie);
            if let Some(v) = clear {
                resp.headers_mut().append(header::SET_COOKIE, v);
            }
            resp
        }
        // The code is spent either way: the state goes with it.
        Err(status) => {
            let mut resp = to_signin(&status.message);
            if let Some(v) = clear {
                resp.headers_mut().append(header::SET_COOKIE, v);
            }
            resp
        }
    }
}

async fn finish(
    st: &SessionApi,
    login: &OidcLogin,
    code: String,
    pending: Pending,
) -> Result<(HeaderValue, String), Status> {
    let token_endpoint = login.discovery().await?.token;
    let form = form_encode(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("redirect_uri", &pending.redirect_uri),
        ("client_id", &login.settings.client_id),
        ("code_verifier", &pending.verifier),
    ]);
    let req = http::Request::post(&token_endpoint)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::ACCEPT, "application/json")
        .body(Body::from(form))
        .map_err(|e| Status::internal(format!("{token_endpoint}: {e}")))?;
    let tokens = login
        .send(
            req,
            "The identity provider refused the sign-in's code: it was already used or has expired; try again.",
        )
        .await?;
    let id_token = tokens
        .get("id_token")
        .and_then(Value::as_str)
        .ok_or_else(|| Status::unauthorized("the identity provider returned no ID token"))?
        .to_string();
    let caller = st.authn.authenticate(&bearer_headers(&id_token)?).await?;
    if caller.source != CredentialSource::Oidc {
        return Err(Status::unauthorized("the ID token is not from the configured issuer"));
    }
    if jwt_nonce(&id_token).as_deref() != Some(pending.nonce.as_str()) {
        return Err(Status::unauthorized("the ID token's nonce does not match this sign-in"));
    }
    let grant = jwt_lifetime(&id_token, login.records.now()).map(|(issued, expires)| OidcGrant {
        refresh_token: tokens.get("refresh_token").and_then(Value::as_str).map(str::to_string),
        issued,
        expires,
        renewing_until: None,
    });
    let (cookie, _) = start_session(st, id_token, &caller, grant).await?;
    Ok((cookie, pending.return_to))
}

impl Refresher for OidcLogin {
    fn refresh<'a>(&'a self, refresh_token: &'a str, user: &'a str) -> BoxFuture<'a, Result<Renewed, RenewError>> {
        Box::pin(async move {
            let Some(authn) = &self.authn else {
                return Err(RenewError::Unavailable("no authenticator for renewed tokens".into()));
            };
            let tokens = self.refresh_tokens(refresh_token).await?;
            let id_token = tokens
                .get("id_token")
                .and_then(Value::as_str)
                .ok_or_else(|| RenewError::Refused("the refresh answer holds no ID token".into()))?
                .to_string();
            let headers = bearer_headers(&id_token).map_err(|s| RenewError::Refused(s.message))?;
            let caller = match authn.authenticate(&headers).await {
                Ok(caller) => caller,
                Err(status) if status.code == 401 => return Err(RenewError::Refused(status.message)),
                Err(status) => return Err(RenewError::Unavailable(status.message)),
            };
            // The same person, by the same issuer: a token for someone else never continues a session.
            if caller.source != CredentialSource::Oidc || caller.user != user {
                return Err(RenewError::Refused("the renewed ID token names another user".into()));
            }
            let (issued, expires) = jwt_lifetime(&id_token, self.records.now())
                .ok_or_else(|| RenewError::Refused("the renewed ID token has no exp".into()))?;
            Ok(Renewed {
                id_token,
                refresh_token: tokens.get("refresh_token").and_then(Value::as_str).map(str::to_string),
                issued,
                expires,
            })
        })
    }

    fn lease(&self) -> Duration {
        // Longer than a discovery fetch plus the token request plus the key fetch verifying the
        // new token, each bounded by the fetch timeout.
        self.settings.fetch_timeout * 3 + Duration::from_secs(5)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_and_encoding() {
        // RFC 7636 appendix B.
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        assert_eq!(
            form_encode(&[("a b", "x/y?z=1&"), ("k", "~._-")]),
            "a%20b=x%2Fy%3Fz%3D1%26&k=~._-"
        );
    }

    #[test]
    fn only_portal_paths_are_returned_to() {
        for (input, want) in [
            (None, "/portal/"),
            (
                Some("/portal/orgs/a/workspaces/b/catalog"),
                "/portal/orgs/a/workspaces/b/catalog",
            ),
            (Some("https://evil.example/portal/"), "/portal/"),
            (Some("//evil.example/portal/"), "/portal/"),
            (Some("/portal//evil.example"), "/portal/"),
            (Some("/portal/\\evil"), "/portal/"),
            (Some("/api/orgs"), "/portal/"),
            (Some("/portal/../api/orgs"), "/portal/"),
            (Some("/portal/a/.."), "/portal/"),
            (Some("/portal/./x"), "/portal/"),
            (Some("/portal/%2e%2e/api/orgs"), "/portal/"),
            (Some("/portal/%2E./api/orgs"), "/portal/"),
            (Some("/portal/a?next=../x"), "/portal/a?next=../x"),
            (Some("/portal/a..b/c"), "/portal/a..b/c"),
        ] {
            assert_eq!(safe_return(input), want, "{input:?}");
        }
    }

    #[test]
    fn discovery_is_cached_and_a_failing_provider_asked_at_most_every_interval() {
        let s = Duration::from_secs;
        let min = s(10);
        for (age, failed, want) in [
            (None, None, DiscoveryStep::Fetch),
            (Some(s(1)), None, DiscoveryStep::Cached),
            (Some(s(299)), Some(s(1)), DiscoveryStep::Cached),
            (Some(s(300)), None, DiscoveryStep::Fetch),
            // Stale, the provider failed a moment ago: the stale document, no new request.
            (Some(s(400)), Some(s(5)), DiscoveryStep::Cached),
            (Some(s(400)), Some(s(11)), DiscoveryStep::Fetch),
            // Nothing usable and the provider failed a moment ago: refused without asking.
            (None, Some(s(5)), DiscoveryStep::Refuse),
            (Some(s(4000)), Some(s(5)), DiscoveryStep::Refuse),
            (None, Some(s(11)), DiscoveryStep::Fetch),
        ] {
            assert_eq!(discovery_step(age, failed, min), want, "{age:?} {failed:?}");
        }
    }

    #[test]
    fn scopes_follow_discovery() {
        let list = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        for (supported, want) in [
            (None, ("openid email profile", false)),
            (Some(list(&["openid", "email"])), ("openid email profile", false)),
            (
                Some(list(&["openid", "offline_access", "groups"])),
                ("openid email profile groups offline_access", true),
            ),
            (Some(list(&["groups"])), ("openid email profile groups", false)),
        ] {
            let (scope, consent) = scopes(supported.as_deref());
            assert_eq!((scope.as_str(), consent), want, "{supported:?}");
        }
    }

    #[test]
    fn refresh_errors_are_final_only_when_the_provider_refused() {
        for (status, refused) in [
            (Some(StatusCode::BAD_REQUEST), true),
            (Some(StatusCode::UNAUTHORIZED), true),
            (Some(StatusCode::INTERNAL_SERVER_ERROR), false),
            (Some(StatusCode::SERVICE_UNAVAILABLE), false),
            (None, false),
        ] {
            let e = refresh_error(status, "x".into());
            assert_eq!(matches!(e, RenewError::Refused(_)), refused, "{status:?}");
        }
    }

    #[test]
    fn lifetimes_are_read_from_the_payload() {
        let now = jiff::Timestamp::from_second(100).unwrap();
        let token = |claims: &str| {
            format!(
                "h.{}.s",
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.as_bytes())
            )
        };
        let at = |s| jiff::Timestamp::from_second(s).unwrap();
        assert_eq!(
            jwt_lifetime(&token(r#"{"iat":10,"exp":70}"#), now),
            Some((at(10), at(70)))
        );
        assert_eq!(jwt_lifetime(&token(r#"{"exp":70}"#), now), Some((now, at(70))));
        assert_eq!(jwt_lifetime(&token(r#"{"iat":10}"#), now), None);
    }

    #[test]
    fn nonce_is_read_from_the_payload() {
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"nonce":"n1","sub":"a"}"#);
        assert_eq!(jwt_nonce(&format!("h.{payload}.s")).as_deref(), Some("n1"));
        assert_eq!(jwt_nonce("garbage"), None);
    }
}
