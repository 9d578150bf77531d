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

use std::time::Duration;

use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Extension, Json, Router, middleware};
use base64::Engine;
use faros_core::status::Status;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::session::{self, SessionAuth};
use crate::auth::{Caller, CredentialSource, OidcSettings, require_caller};
use crate::proxy::UpstreamPool;
use crate::records::{Kind, Records};
use crate::state::AppState;

/// Largest sign-in request body.
const MAX_LOGIN_BODY: usize = 16 * 1024;
/// Largest discovery or token response.
const MAX_IDP_BODY: usize = 256 * 1024;
/// How long a started OIDC sign-in may take.
const PENDING_TTL: Duration = Duration::from_secs(600);
/// The OIDC flow's state cookie; scoped to the flow's path.
const STATE_COOKIE: &str = "__Secure-faros-oidc";
const CALLBACK: &str = "/api/session/oidc/callback";

/// The session API routes.
pub fn routes(st: AppState) -> Router<AppState> {
    let authed = Router::new()
        .route("/api/session", get(whoami))
        .route_layer(middleware::from_fn_with_state(st.authn.clone(), require_caller));
    Router::new()
        .route("/api/session", axum::routing::post(sign_in).delete(sign_out))
        .route("/api/session/options", get(options))
        .route("/api/session/oidc", get(oidc_start))
        .route(CALLBACK, get(oidc_callback))
        .merge(authed)
}

fn session_body(caller: &Caller, expires: Option<jiff::Timestamp>) -> Value {
    json!({
        "user": caller.user,
        "groups": caller.groups,
        "expiresAt": expires.map(|t| t.to_string()),
    })
}

/// Starts a session for a proven credential: 201 with the user and a `Set-Cookie`.
async fn start_session(st: &AppState, credential: String, caller: &Caller) -> Result<(HeaderValue, Value), Status> {
    let (value, s) = st.sessions.create(credential, caller.user.clone()).await?;
    let cookie = session::set_cookie(&value, st.sessions.settings().ttl);
    tracing::info!(user = %caller.user, source = ?caller.source, "portal session started");
    Ok((cookie, session_body(caller, Some(s.expires))))
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
async fn sign_in(State(st): State<AppState>, req: Request) -> Response {
    match sign_in_inner(&st, req).await {
        Ok(resp) => resp,
        Err(status) => status.into_response(),
    }
}

async fn sign_in_inner(st: &AppState, req: Request) -> Result<Response, Status> {
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
    let (cookie, body) = start_session(st, token, &caller).await?;
    let mut resp = (StatusCode::CREATED, Json(body)).into_response();
    resp.headers_mut().insert(header::SET_COOKIE, cookie);
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(resp)
}

/// `GET /api/session`: who is signed in, and until when (`null` for bearer clients).
async fn whoami(Extension(caller): Extension<Caller>, auth: Option<Extension<SessionAuth>>) -> Response {
    let mut resp = Json(session_body(&caller, auth.map(|a| a.expires))).into_response();
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// `DELETE /api/session`: ends the session (its CSRF proof was checked by the front door) and
/// clears the cookie; without a live session only the cookie is cleared.
async fn sign_out(State(st): State<AppState>, auth: Option<Extension<SessionAuth>>) -> Response {
    if let Some(Extension(auth)) = auth
        && let Err(status) = st.sessions.remove(&auth).await
    {
        // The session would live on: the browser keeps its cookie and may try again.
        return status.into_response();
    }
    let mut resp = StatusCode::NO_CONTENT.into_response();
    resp.headers_mut().insert(header::SET_COOKIE, session::clear_cookie());
    resp
}

/// `GET /api/session/options`: what the sign-in page offers.
async fn options(State(st): State<AppState>) -> Response {
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

/// The `nonce` claim of a JWT (already verified by the authenticator).
fn jwt_nonce(token: &str) -> Option<String> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("nonce")?.as_str().map(str::to_string)
}

impl OidcLogin {
    pub fn new(settings: OidcSettings, http: UpstreamPool, public_url: Option<String>, records: Records) -> Self {
        Self {
            settings,
            http,
            public_url,
            records,
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

    async fn discovery(&self) -> Result<(String, String), Status> {
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
        Ok((field("authorization_endpoint")?, field("token_endpoint")?))
    }

    fn redirect_uri(&self, req_headers: &HeaderMap, authority: Option<String>, proto: &str) -> Result<String, Status> {
        let base = match &self.public_url {
            Some(u) => u.trim_end_matches('/').to_string(),
            None => {
                let host = authority
                    .or_else(|| req_headers.get(header::HOST)?.to_str().ok().map(str::to_string))
                    .ok_or_else(|| Status::bad_request("no Host header"))?;
                format!("{proto}://{host}")
            }
        };
        Ok(format!("{base}{CALLBACK}"))
    }
}

#[derive(Debug, serde::Deserialize)]
struct StartParams {
    #[serde(rename = "return")]
    return_to: Option<String>,
}

/// `GET /api/session/oidc[?return=/portal/…]`: 302 to the identity provider.
async fn oidc_start(
    State(st): State<AppState>,
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
    st: &AppState,
    login: &OidcLogin,
    p: StartParams,
    headers: &HeaderMap,
    authority: Option<String>,
) -> Result<Response, Status> {
    let (authorize, _) = login.discovery().await?;
    let state = random_b64(32)?;
    let verifier = random_b64(32)?;
    let nonce = random_b64(16)?;
    let redirect_uri = login.redirect_uri(headers, authority, st.settings.public_proto)?;
    let query = form_encode(&[
        ("response_type", "code"),
        ("client_id", &login.settings.client_id),
        ("redirect_uri", &redirect_uri),
        ("scope", "openid email profile"),
        ("state", &state),
        ("nonce", &nonce),
        ("code_challenge", &pkce_challenge(&verifier)),
        ("code_challenge_method", "S256"),
    ]);
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
struct CallbackParams {
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
async fn oidc_callback(State(st): State<AppState>, Query(p): Query<CallbackParams>, headers: HeaderMap) -> Response {
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
    st: &AppState,
    login: &OidcLogin,
    code: String,
    pending: Pending,
) -> Result<(HeaderValue, String), Status> {
    let (_, token_endpoint) = login.discovery().await?;
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
    let (cookie, _) = start_session(st, id_token, &caller).await?;
    Ok((cookie, pending.return_to))
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
    fn nonce_is_read_from_the_payload() {
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"nonce":"n1","sub":"a"}"#);
        assert_eq!(jwt_nonce(&format!("h.{payload}.s")).as_deref(), Some("n1"));
        assert_eq!(jwt_nonce("garbage"), None);
    }
}
