//! `/api/session`: sign-in with a token, the session's user, sign-out; and the OIDC
//! authorization-code flow with PKCE (`/api/session/oidc`, `/api/session/oidc/callback`), which
//! ends in the same session.
//!
//! A sign-in proves the credential once through the hub's [`crate::auth::Authenticator`] (the same
//! chain bearer clients pass), then [`super::session`] keeps it. The OIDC flow is a public client
//! (no secret): the verifier and a nonce wait server-side under the random `state`, bound to the
//! browser by a short-lived `SameSite=Lax` cookie (a `Strict` cookie is not sent on the identity
//! provider's redirect back). They wait as a [`crate::records`] record sealed under the `state`, so
//! the callback may land on any replica (and after a restart); it is taken once, on whichever
//! replica the callback reaches first.
//!
//! The flow asks for `offline_access` (with `prompt=consent`, which OpenID Connect requires for
//! it) and `groups` when the provider's discovery lists them: the refresh token stays in the
//! sealed session record and renews the ID token ([`super::renew`], through [`OidcLogin`]'s
//! [`Refresher`]). Sign-out ends the hub session and, when the provider has an
//! `end_session_endpoint`, sends the browser through the provider's logout (RP-initiated logout
//! with `id_token_hint` and `post_logout_redirect_uri`), so signing in again asks for credentials.
//! The logout URL carries the ID token, which page scripts must never see: the portal gets a
//! one-time hub path ([`LOGOUT`]) whose record holds the URL, and the hub redirects the top-level
//! navigation there.

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
use super::session::{self, OidcGrant, SessionAuth, Sessions};
use crate::auth::{Authenticator, Caller, CredentialSource, OidcSettings, bearer_token};
use crate::proxy::UpstreamPool;
use crate::records::{Kind, Records};
use crate::serving::HttpSettings;

/// Largest sign-in request body.
const MAX_LOGIN_BODY: usize = 16 * 1024;
/// Largest discovery or token response.
const MAX_IDP_BODY: usize = 256 * 1024;
/// How long a started OIDC sign-in may take.
const PENDING_TTL: Duration = Duration::from_secs(600);
/// The OIDC flow's state cookie; scoped to the flow's path.
const STATE_COOKIE: &str = "__Secure-faros-oidc";
pub const CALLBACK: &str = "/api/session/oidc/callback";
/// Where the provider sends the browser after RP-initiated logout.
const SIGNED_OUT: &str = "/portal/signin?signedOut=1";
/// The one-time redirect to the provider's logout, `?h=<handle>`.
pub const LOGOUT: &str = "/api/session/oidc/logout";
/// How long a sign-out's redirect to the provider waits to be followed.
const LOGOUT_TTL: Duration = Duration::from_secs(60);

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

/// `DELETE /api/session`: ends the session (its CSRF proof was checked by the front door) and
/// clears the cookie; without a live session only the cookie is cleared. For an OIDC session whose
/// provider offers RP-initiated logout, 200 `{"logoutUrl": "/api/session/oidc/logout?h=…"}`: the
/// portal navigates there, the hub redirects to the provider's logout, the provider ends its own
/// session and sends the browser back to the sign-in page. Otherwise 204.
pub async fn sign_out(
    State(st): State<SessionApi>,
    auth: Option<Extension<SessionAuth>>,
    uri: http::Uri,
    headers: HeaderMap,
) -> Response {
    let mut logout = None;
    if let Some(Extension(auth)) = auth {
        if let Err(status) = st.sessions.remove(&auth).await {
            // The session would live on: the browser keeps its cookie and may try again.
            return status.into_response();
        }
        // The front door put the session's ID token into the request as its bearer.
        if let (Some(login), Some(_), Some(id_token)) =
            (&st.oidc_login, auth.credential_expires, bearer_token(&headers))
        {
            let authority = uri
                .authority()
                .map(|a| a.as_str().to_string())
                .or_else(|| headers.get(header::HOST)?.to_str().ok().map(str::to_string));
            let parked = match login
                .logout_url(id_token, &headers, authority, st.settings.public_proto)
                .await
            {
                Ok(Some(url)) => login.park_logout(url).await.map(Some),
                Ok(None) => Ok(None),
                Err(status) => Err(status),
            };
            match parked {
                Ok(path) => logout = path,
                // The hub session has ended; the provider's stays (signing in again may skip its form).
                Err(status) => tracing::warn!(reason = %status.message, "no RP-initiated logout at sign-out"),
            }
        }
    }
    let mut resp = match logout {
        Some(url) => Json(json!({ "logoutUrl": url })).into_response(),
        None => StatusCode::NO_CONTENT.into_response(),
    };
    resp.headers_mut().insert(header::SET_COOKIE, session::clear_cookie());
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// A sign-out's redirect to the provider's logout, until the browser follows it.
#[derive(serde::Serialize, serde::Deserialize)]
struct LogoutRedirect {
    url: String,
}

#[derive(Debug, serde::Deserialize)]
pub struct LogoutParams {
    h: Option<String>,
}

/// `GET /api/session/oidc/logout?h=…`: 302 to the provider's logout parked by the sign-out (once);
/// an unknown or used handle goes to the signed-out page.
pub async fn oidc_logout(State(st): State<SessionApi>, Query(p): Query<LogoutParams>) -> Response {
    let found = match (&st.oidc_login, p.h.filter(|h| h.len() == 43)) {
        (Some(login), Some(h)) => login
            .records
            .take::<LogoutRedirect>(Kind::Oidc, &format!("logout:{h}"))
            .await
            .ok()
            .flatten()
            .map(|(r, _)| r.url),
        _ => None,
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

/// A started sign-in, sealed under its `state` until the callback takes it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Pending {
    verifier: String,
    nonce: String,
    redirect_uri: String,
    return_to: String,
}

/// The OIDC sign-in flow's configuration and the sign-ins in flight.
pub struct OidcLogin {
    pub settings: OidcSettings,
    http: UpstreamPool,
    /// The hub's public URL, if configured (else the request's own origin).
    public_url: Option<String>,
    /// Sign-ins in flight ([`Kind::Oidc`]).
    records: Records,
    /// Verifies renewed ID tokens (the hub's chain: the same checks as every bearer).
    authn: Option<Arc<dyn Authenticator>>,
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

/// Only portal paths are valid places to return to after sign-in (no open redirect).
pub fn safe_return(path: Option<&str>) -> String {
    match path {
        Some(p) if p.starts_with("/portal/") && !p.contains("//") && !p.contains('\\') => p.to_string(),
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
            authn: None,
        }
    }

    /// Verifies renewed ID tokens with `authn` (without it, sessions are not renewed).
    pub fn with_authenticator(mut self, authn: Arc<dyn Authenticator>) -> Self {
        self.authn = Some(authn);
        self
    }

    /// The provider's logout URL for a session holding `id_token`, if it offers RP-initiated logout.
    async fn logout_url(
        &self,
        id_token: &str,
        headers: &HeaderMap,
        authority: Option<String>,
        proto: &str,
    ) -> Result<Option<String>, Status> {
        let Some(end_session) = self.discovery().await?.end_session else {
            return Ok(None);
        };
        let back = format!("{}{SIGNED_OUT}", self.base_url(headers, authority, proto)?);
        let query = form_encode(&[
            ("id_token_hint", id_token),
            ("post_logout_redirect_uri", &back),
            ("client_id", &self.settings.client_id),
        ]);
        let sep = if end_session.contains('?') { '&' } else { '?' };
        Ok(Some(format!("{end_session}{sep}{query}")))
    }

    /// Keeps `url` (it holds the ID token) for the browser's next navigation: the hub path that
    /// redirects there once.
    async fn park_logout(&self, url: String) -> Result<String, Status> {
        let handle = random_b64(32)?;
        let expires = self.records.now() + jiff::SignedDuration::try_from(LOGOUT_TTL).unwrap_or_default();
        self.records
            .put(
                Kind::Oidc,
                &format!("logout:{handle}"),
                &LogoutRedirect { url },
                expires,
            )
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "cannot keep the sign-out's logout redirect");
                Status::unavailable("the session store is unavailable")
            })?;
        Ok(format!("{LOGOUT}?h={handle}"))
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

    async fn send(&self, req: http::Request<Body>) -> Result<Value, Status> {
        let what = req.uri().to_string();
        let unavailable = |e: String| {
            tracing::warn!(url = %what, error = %e, "OIDC provider request failed");
            Status::unavailable("the identity provider did not answer; try again")
        };
        let fetch = async {
            let resp = self.http.request(req).await.map_err(|e| e.to_string())?;
            let status = resp.status();
            let body = Limited::new(resp.into_body(), MAX_IDP_BODY)
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            if !status.is_success() {
                return Err(format!("status {status}: {}", String::from_utf8_lossy(&body)));
            }
            serde_json::from_slice::<Value>(&body).map_err(|e| format!("not JSON: {e}"))
        };
        match tokio::time::timeout(self.settings.fetch_timeout, fetch).await {
            Ok(r) => r.map_err(unavailable),
            Err(_) => Err(unavailable("timed out".into())),
        }
    }

    async fn discovery(&self) -> Result<Endpoints, Status> {
        let url = format!(
            "{}/.well-known/openid-configuration",
            self.settings.issuer_url.trim_end_matches('/')
        );
        let req = http::Request::get(&url)
            .header(header::ACCEPT, "application/json")
            .body(Body::empty())
            .map_err(|e| Status::internal(format!("{url}: {e}")))?;
        let doc = self.send(req).await?;
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
        verifier,
        nonce,
        redirect_uri,
        return_to: safe_return(p.return_to.as_deref()),
    };
    let expires = login.records.now() + jiff::SignedDuration::try_from(PENDING_TTL).unwrap_or_default();
    login
        .records
        .put(Kind::Oidc, &state, &pending, expires)
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "cannot keep the OIDC sign-in state");
            Status::unavailable("the session store is unavailable; try again")
        })?;
    let mut resp = Redirect::to(&location).into_response();
    let cookie = format!(
        "{STATE_COOKIE}={state}; Path=/api/session/oidc; Secure; HttpOnly; SameSite=Lax; Max-Age={}",
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
    if state_cookie(&headers) != Some(state.as_str()) {
        return to_signin("This sign-in was not started in this browser; try again.");
    }
    let pending = match login.records.take::<Pending>(Kind::Oidc, &state).await {
        Ok(Some((pending, _))) => pending,
        Ok(None) => return to_signin("The sign-in took too long or was already used; try again."),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the OIDC sign-in state");
            return to_signin("The session store is unavailable; try again.");
        }
    };
    match finish(&st, &login, code, pending).await {
        Ok((cookie, return_to)) => {
            let mut resp = Redirect::to(&return_to).into_response();
            resp.headers_mut().append(header::SET_COOKIE, cookie);
            let clear = format!("{STATE_COOKIE}=; Path=/api/session/oidc; Secure; HttpOnly; SameSite=Lax; Max-Age=0");
            if let Ok(v) = HeaderValue::from_str(&clear) {
                resp.headers_mut().append(header::SET_COOKIE, v);
            }
            resp
        }
        Err(status) => to_signin(&status.message),
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
    let tokens = login.send(req).await?;
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
        ] {
            assert_eq!(safe_return(input), want, "{input:?}");
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
