//! OIDC bearer tokens (kube-apiserver's `--oidc-*` flags): the embedded kcp's IO for
//! [`faros_core::oidc::Verifier`] — an HTTPS client trusting `--oidc-ca-file` (else the platform
//! roots) that GETs the issuer's discovery document and key set. Verification, claims and the key
//! cache are faros-core's, the same code the hub runs, so both accept exactly the same tokens.

use bytes::Bytes;
use faros_core::oidc::{FetchJson, OidcSettings, Verifier};
use futures::future::BoxFuture;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;
use serde_json::Value;

/// Largest discovery document or key set read.
const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    #[error("the OIDC CA file is not valid PEM: {0}")]
    CaPem(String),
    #[error("the OIDC CA file holds no certificate")]
    NoCa,
    #[error("building the TLS client for the OIDC issuer: {0}")]
    Tls(String),
    #[error(transparent)]
    Settings(#[from] faros_core::oidc::SettingsError),
}

struct HttpsFetch(Client<hyper_rustls::HttpsConnector<HttpConnector>, Empty<Bytes>>);

impl FetchJson for HttpsFetch {
    fn get_json<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let req = http::Request::get(url)
                .header(http::header::ACCEPT, "application/json")
                .body(Empty::new())
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

/// A verifier of `settings`' issuer; fetches nothing until the first token of the issuer arrives.
pub fn verifier(settings: OidcSettings) -> Result<Verifier, OidcError> {
    let mut tls = kube::Config::new(http::Uri::from_static("https://localhost"));
    if let Some(pem) = &settings.ca_pem {
        let certs = rustls_pemfile::certs(&mut pem.as_bytes())
            .map(|c| c.map(|c| c.to_vec()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| OidcError::CaPem(e.to_string()))?;
        if certs.is_empty() {
            return Err(OidcError::NoCa);
        }
        tls.root_cert = Some(certs);
    }
    let connector = tls
        .rustls_https_connector()
        .map_err(|e| OidcError::Tls(e.to_string()))?;
    let client = Client::builder(TokioExecutor::new()).build(connector);
    Ok(Verifier::new(settings, Box::new(HttpsFetch(client)))?)
}
