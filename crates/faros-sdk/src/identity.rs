//! Verifying who a backend request is for.
//!
//! The hub's backend proxy strips the caller's credentials and every inbound `X-Faros-*` header,
//! then adds `X-Faros-Assertion`, a short-lived ES256 JWT over the caller's identity with
//! `aud` = this provider (format: [`faros_core::identity`]). [`IdentityVerifier`] checks it against
//! the hub's JWKS (fetched from the hub and cached; refetched when a token names an unknown key, so
//! hub key rotation needs no provider restart). The axum pieces:
//!
//! - [`require_identity`]: middleware answering 401 (a Kubernetes `Status`) when the assertion is
//!   absent or invalid, and putting the [`VerifiedIdentity`] into the request extensions.
//! - [`VerifiedIdentity`]: extractor for handlers behind that middleware (or with the verifier
//!   installed as an `Extension`).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{FromRequestParts, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use faros_core::identity::{self, Claims, Identity, IdentityError, Jwks};
use faros_core::names;
use faros_core::status::Status;
use http::request::Parts;
use tokio::sync::RwLock;
use tokio::time::Instant;

/// How long a fetched JWKS is used before it is fetched again.
pub const JWKS_TTL: Duration = Duration::from_secs(300);
/// Minimum time between refetches triggered by unknown key ids (a forged `kid` must not turn the
/// provider into a request amplifier against the hub).
pub const JWKS_MIN_REFRESH: Duration = Duration::from_secs(10);

/// Why a request has no verified identity.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(
        "missing {} header: requests must come through the faros hub",
        names::HEADER_ASSERTION
    )]
    Missing,
    #[error("invalid identity assertion: {0}")]
    Invalid(#[from] IdentityError),
    #[error("fetching the hub's keys from {url}: {message}")]
    Jwks { url: String, message: String },
}

impl IntoResponse for VerifyError {
    fn into_response(self) -> Response {
        match self {
            // The hub being unreachable is not the caller's fault.
            VerifyError::Jwks { .. } => Status::unavailable(self.to_string()).into_response(),
            _ => Status::unauthorized(self.to_string()).into_response(),
        }
    }
}

enum Keys {
    Static(Jwks),
    Remote {
        url: String,
        http: reqwest::Client,
        cache: RwLock<Option<(Jwks, Instant)>>,
    },
}

/// Verifies identity assertions for one provider (the audience).
pub struct IdentityVerifier {
    audience: String,
    keys: Keys,
}

impl std::fmt::Debug for IdentityVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityVerifier")
            .field("audience", &self.audience)
            .finish()
    }
}

impl IdentityVerifier {
    /// A verifier with fixed keys (tests, or keys distributed out of band).
    pub fn with_jwks(audience: &str, jwks: Jwks) -> Self {
        Self {
            audience: audience.into(),
            keys: Keys::Static(jwks),
        }
    }

    /// A verifier fetching keys from `jwks_url` (normally `<hub>/.well-known/faros/jwks.json`),
    /// trusting `ca_pem` in addition to the system roots.
    pub fn from_url(audience: &str, jwks_url: &str, ca_pem: Option<&[u8]>) -> Result<Self, VerifyError> {
        let jwks_err = |e: reqwest::Error| VerifyError::Jwks {
            url: jwks_url.into(),
            message: e.to_string(),
        };
        let mut builder = reqwest::Client::builder().timeout(Duration::from_secs(5));
        if let Some(pem) = ca_pem {
            builder = builder.add_root_certificate(reqwest::Certificate::from_pem(pem).map_err(jwks_err)?);
        }
        Ok(Self {
            audience: audience.into(),
            keys: Keys::Remote {
                url: jwks_url.into(),
                http: builder.build().map_err(jwks_err)?,
                cache: RwLock::new(None),
            },
        })
    }

    /// The JWKS URL of a hub.
    pub fn hub_jwks_url(hub_url: &str) -> String {
        format!("{}{}", hub_url.trim_end_matches('/'), identity::JWKS_PATH)
    }

    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// Verifies one assertion now.
    pub async fn verify(&self, token: &str) -> Result<Claims, VerifyError> {
        let now = identity::now_unix();
        match &self.keys {
            Keys::Static(jwks) => Ok(identity::verify(token, jwks, &self.audience, now)?),
            Keys::Remote { url, http, cache } => {
                let kid = identity::token_kid(token)?;
                let jwks = self.remote_keys(url, http, cache, &kid).await?;
                Ok(identity::verify(token, &jwks, &self.audience, now)?)
            }
        }
    }

    async fn remote_keys(
        &self,
        url: &str,
        http: &reqwest::Client,
        cache: &RwLock<Option<(Jwks, Instant)>>,
        kid: &str,
    ) -> Result<Jwks, VerifyError> {
        {
            let cached = cache.read().await;
            if let Some((jwks, fetched)) = cached.as_ref() {
                let fresh = fetched.elapsed() < JWKS_TTL;
                let knows = jwks.find(kid).is_some();
                if (fresh && knows) || (!knows && fetched.elapsed() < JWKS_MIN_REFRESH) {
                    return Ok(jwks.clone());
                }
            }
        }
        let mut cached = cache.write().await;
        // Another request may have refreshed while this one waited for the lock.
        if let Some((jwks, fetched)) = cached.as_ref()
            && fetched.elapsed() < JWKS_MIN_REFRESH
        {
            return Ok(jwks.clone());
        }
        let err = |message: String| VerifyError::Jwks {
            url: url.into(),
            message,
        };
        let response = http.get(url).send().await.map_err(|e| err(e.to_string()))?;
        if !response.status().is_success() {
            return Err(err(format!("status {}", response.status())));
        }
        let jwks: Jwks = response.json().await.map_err(|e| err(e.to_string()))?;
        *cached = Some((jwks.clone(), Instant::now()));
        Ok(jwks)
    }

    /// Verifies the assertion header of a request.
    pub async fn verify_headers(&self, headers: &http::HeaderMap) -> Result<Claims, VerifyError> {
        let token = headers
            .get(names::HEADER_ASSERTION)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .ok_or(VerifyError::Missing)?;
        self.verify(token).await
    }
}

/// The verified caller of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedIdentity(pub Claims);

impl VerifiedIdentity {
    pub fn identity(&self) -> &Identity {
        &self.0.identity
    }

    /// The ProviderRevision the hub routed the request to, when the assertion names one (a hub
    /// that knows the revisions the provider reports in its heartbeats).
    pub fn revision(&self) -> Option<&str> {
        self.0.revision.as_deref()
    }
}

impl std::ops::Deref for VerifiedIdentity {
    type Target = Identity;
    fn deref(&self) -> &Identity {
        &self.0.identity
    }
}

/// Middleware: 401 unless the request carries a valid assertion; otherwise the
/// [`VerifiedIdentity`] is added to the request's extensions.
pub async fn require_identity(
    State(verifier): State<Arc<IdentityVerifier>>,
    mut request: Request,
    next: Next,
) -> Response {
    match verifier.verify_headers(request.headers()).await {
        Ok(claims) => {
            request.extensions_mut().insert(VerifiedIdentity(claims));
            next.run(request).await
        }
        Err(e) => {
            tracing::debug!(error = %e, path = request.uri().path(), "rejected backend request");
            e.into_response()
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for VerifiedIdentity {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        if let Some(id) = parts.extensions.get::<VerifiedIdentity>() {
            return Ok(id.clone());
        }
        let Some(verifier) = parts.extensions.get::<Arc<IdentityVerifier>>().cloned() else {
            return Err(Status::internal(
                "no identity verifier configured for this route (add require_identity or an Extension)",
            )
            .into_response());
        };
        let claims = verifier
            .verify_headers(&parts.headers)
            .await
            .map_err(IntoResponse::into_response)?;
        let id = VerifiedIdentity(claims);
        parts.extensions.insert(id.clone());
        Ok(id)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::routing::get;
    use faros_core::identity::{Claims, SigningKey};
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    fn alice() -> Identity {
        Identity {
            user: "alice".into(),
            groups: vec![],
            org: "acme".into(),
            workspace: "dev".into(),
            cluster: "c1".into(),
        }
    }

    async fn whoami(id: VerifiedIdentity) -> String {
        format!("{}@{}/{} ({})", id.user, id.org, id.workspace, id.cluster)
    }

    fn app(verifier: IdentityVerifier) -> Router {
        let verifier = Arc::new(verifier);
        Router::new()
            .route("/api/hello", get(whoami))
            .route_layer(axum::middleware::from_fn_with_state(verifier, require_identity))
    }

    async fn call(app: &Router, token: Option<&str>) -> (u16, String) {
        let mut req = http::Request::get("/api/hello");
        if let Some(t) = token {
            req = req.header(names::HEADER_ASSERTION, t);
        }
        let resp = app.clone().oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
        let code = resp.status().as_u16();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (code, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn extractor_accepts_valid_and_rejects_the_rest() {
        let key = SigningKey::generate("hub-1").unwrap();
        let jwks = Jwks {
            keys: vec![key.public_jwk()],
        };
        let app = app(IdentityVerifier::with_jwks("quickstart", jwks));
        let now = identity::now_unix();
        let valid = key
            .sign(&Claims::new(alice(), "quickstart", now, identity::DEFAULT_TTL))
            .unwrap();
        let expired = key
            .sign(&Claims::new(alice(), "quickstart", now - 600, identity::DEFAULT_TTL))
            .unwrap();
        let wrong_aud = key
            .sign(&Claims::new(alice(), "edges", now, identity::DEFAULT_TTL))
            .unwrap();
        let forged = SigningKey::generate("hub-1")
            .unwrap()
            .sign(&Claims::new(alice(), "quickstart", now, identity::DEFAULT_TTL))
            .unwrap();

        assert_eq!(call(&app, Some(&valid)).await, (200, "alice@acme/dev (c1)".to_string()));
        for (name, token, needle) in [
            ("expired", Some(expired.as_str()), "expired"),
            (
                "wrong audience",
                Some(wrong_aud.as_str()),
                "is for \\\"edges\\\", not for \\\"quickstart\\\"",
            ),
            ("forged", Some(forged.as_str()), "signature is invalid"),
            ("missing", None, "missing x-faros-assertion header"),
            ("garbage", Some("abc"), "malformed"),
        ] {
            let (code, body) = call(&app, token).await;
            assert_eq!(code, 401, "{name}: {body}");
            let status: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert_eq!(status["kind"], "Status", "{name}");
            assert_eq!(status["reason"], "Unauthorized", "{name}");
            assert!(body.contains(needle), "{name}: {body}");
        }
    }

    #[tokio::test]
    async fn remote_jwks_is_cached_and_refetched_for_new_keys() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let old = SigningKey::generate("k-old").unwrap();
        let new = SigningKey::generate("k-new").unwrap();
        let served = Arc::new(std::sync::Mutex::new(Jwks {
            keys: vec![old.public_jwk()],
        }));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (s, f) = (served.clone(), fetches.clone());
        let hub = Router::new().route(
            identity::JWKS_PATH,
            get(move || {
                let (s, f) = (s.clone(), f.clone());
                async move {
                    f.fetch_add(1, Ordering::SeqCst);
                    axum::Json(s.lock().unwrap().clone())
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, hub).await });

        let verifier = IdentityVerifier::from_url("quickstart", &IdentityVerifier::hub_jwks_url(&url), None).unwrap();
        let now = identity::now_unix();
        let t_old = old
            .sign(&Claims::new(alice(), "quickstart", now, identity::DEFAULT_TTL))
            .unwrap();
        assert_eq!(verifier.verify(&t_old).await.unwrap().identity, alice());
        assert_eq!(verifier.verify(&t_old).await.unwrap().identity, alice());
        assert_eq!(fetches.load(Ordering::SeqCst), 1, "second verify uses the cache");

        // The hub rotates; a token with the new kid is unknown to the cache. The first lookup is
        // within the refresh floor of the initial fetch, so it fails without hammering the hub.
        served.lock().unwrap().keys.push(new.public_jwk());
        let t_new = new
            .sign(&Claims::new(alice(), "quickstart", now, identity::DEFAULT_TTL))
            .unwrap();
        assert!(matches!(
            verifier.verify(&t_new).await,
            Err(VerifyError::Invalid(IdentityError::UnknownKey(_)))
        ));
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
        // Once the floor has passed, the unknown kid triggers a refetch.
        if let Keys::Remote { cache, .. } = &verifier.keys {
            let mut c = cache.write().await;
            let (jwks, _) = c.take().unwrap();
            *c = Some((jwks, Instant::now() - JWKS_MIN_REFRESH));
        }
        assert_eq!(verifier.verify(&t_new).await.unwrap().identity, alice());
        assert_eq!(fetches.load(Ordering::SeqCst), 2);
    }
}
