//! HTTP clients for a test platform's endpoints: HTTPS ones (the hub, the embedded kcp) trusting
//! the CA that signed them and nothing else the tests would not control, and plain-HTTP ones (a
//! hub serving without TLS, a test's fake upstream). All time out after [`TIMEOUT`].

use std::time::Duration;

/// Long enough for the slowest honest answer in the tests (a 20 MB body through the hub); short
/// enough that a hung server fails the test instead of the CI job.
pub const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum HttpsError {
    #[error("the CA is not a PEM certificate: {0}")]
    Ca(#[source] reqwest::Error),
    #[error("building the HTTP client: {0}")]
    Build(#[source] reqwest::Error),
}

/// A client builder trusting `ca_pem`, for tests that set more (a longer timeout).
pub fn builder_trusting(ca_pem: &[u8]) -> Result<reqwest::ClientBuilder, HttpsError> {
    // rustls needs a process-wide crypto provider; tests may not have installed one yet.
    faros_core::telemetry::install_crypto_provider();
    let ca = reqwest::Certificate::from_pem(ca_pem).map_err(HttpsError::Ca)?;
    Ok(reqwest::Client::builder().add_root_certificate(ca))
}

/// A client trusting `ca_pem`, timing out after [`TIMEOUT`].
pub fn client_trusting(ca_pem: &[u8]) -> Result<reqwest::Client, HttpsError> {
    builder_trusting(ca_pem)?
        .timeout(TIMEOUT)
        .build()
        .map_err(HttpsError::Build)
}

/// A client for a test's plain-HTTP servers, timing out after [`TIMEOUT`].
pub fn client() -> Result<reqwest::Client, HttpsError> {
    reqwest::Client::builder()
        .timeout(TIMEOUT)
        .build()
        .map_err(HttpsError::Build)
}

/// A plain-HTTP client that hands back `3xx` answers instead of following them, for tests that
/// check a redirect's status, `Location` and cookies; times out after [`TIMEOUT`].
pub fn not_following_redirects() -> Result<reqwest::Client, HttpsError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .build()
        .map_err(HttpsError::Build)
}
