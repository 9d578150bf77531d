//! Bearer ID tokens of one OpenID Connect issuer, mapped to users and groups the way
//! kube-apiserver's `--oidc-*` flags do.
//!
//! The verification — JWT parsing, signatures, claims to user with kube's prefix rules, the key
//! cache with discovery, rotation and rate limits — is [`faros_core::oidc`], shared with the
//! embedded kcp so both accept exactly the same tokens. What stays here is the hub's IO (an HTTPS
//! client trusting `--oidc-ca-file`) and the hub's verdicts.
//!
//! In a [`Chain`](super::Chain) a token that is not a JWT, or whose (unverified) `iss` is another
//! issuer, is [`Verdict::NotMine`]; a token of this issuer that fails any check is
//! [`Verdict::Rejected`] with a 401 saying why. Neither tokens nor claims values are logged.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use faros_core::oidc::{FetchJson, Outcome, Verifier};
use faros_core::status::Status;
use futures::future::BoxFuture;
use http::HeaderMap;
use http_body_util::{BodyExt, Limited};
use kube::client::ConfigExt;
use serde_json::Value;

pub use faros_core::oidc::{DEFAULT_USERNAME_CLAIM, LEEWAY_SECONDS, OidcSettings};

use super::{AuthError, Authenticator, Caller, CredentialSource, Verdict, bearer_token, settle};
use crate::catalog::clock::{Clock, SystemClock};
use crate::proxy::{UpstreamPool, pool};

/// Largest discovery document or key set read.
const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;

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

/// The hub's fetches of the issuer's documents, through its pooled client.
struct PoolFetch(UpstreamPool);

impl FetchJson for PoolFetch {
    fn get_json<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let req = http::Request::get(url)
                .header(http::header::ACCEPT, "application/json")
                .body(Body::empty())
                .map_err(|e| e.to_string())?;
            let resp = self.0.request(req).await.map_err(|e| e.to_string())?;
            if !resp.status().is_success() {
                return Err(format!("status {}", resp.status()));
            }
            let body = Limited::new(resp.into_body(), MAX_DOCUMENT_BYTES)
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            serde_json::from_slice(&body).map_err(|e| format!("not JSON: {e}"))
        })
    }
}

/// Verifies bearer ID tokens of one issuer.
#[derive(Debug)]
pub struct OidcAuthenticator {
    verifier: Verifier,
}

impl OidcAuthenticator {
    /// Checks the settings; fetches nothing until the first token of the issuer arrives.
    pub fn new(settings: OidcSettings, http: UpstreamPool) -> Result<Self, AuthError> {
        let verifier =
            Verifier::new(settings, Box::new(PoolFetch(http))).map_err(|e| AuthError::Oidc(e.to_string()))?;
        Ok(Self { verifier }.with_clock(Arc::new(SystemClock)))
    }

    /// Judges `exp`/`nbf` by `clock` instead of the system clock.
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        let now = Arc::new(move || clock.now().as_second());
        Self {
            verifier: self.verifier.with_clock(now),
        }
    }

    pub fn settings(&self) -> &OidcSettings {
        self.verifier.settings()
    }

    /// The verdict on one bearer token.
    pub async fn check(&self, token: &str) -> Verdict {
        match self.verifier.check(token).await {
            Outcome::NotMine => Verdict::NotMine,
            Outcome::Rejected(reason) => {
                Verdict::Rejected(Status::unauthorized(format!("invalid OIDC token: {reason}")))
            }
            Outcome::Unavailable => Verdict::Rejected(Status::unavailable(
                "cannot authenticate right now: the OIDC issuer's keys could not be fetched",
            )),
            Outcome::Accepted(user) => Verdict::Accepted(Arc::new(Caller::new(user, CredentialSource::Oidc))),
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
