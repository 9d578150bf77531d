//! What every handler shares: the hub's state, built once by [`crate::Hub::new`]. The routes that
//! read it are in [`crate::router`] (API) and [`crate::edge`] (proxies).

use std::sync::Arc;
use std::time::Duration;

use crate::auth::Authenticator;
use crate::auth::tokenreview::TokenReviewer;
use crate::catalog::Registry;
use crate::keys::KeyStore;
use crate::metrics::Metrics;
use crate::proxy::UpstreamPool;

/// Limits and timeouts of the HTTP surface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpSettings {
    /// Longest wait for a provider upstream's response headers (then 504).
    pub upstream_timeout: Duration,
    /// Longest wait for kcp's response headers on the pass-through (watches send headers at once).
    pub kcp_timeout: Duration,
    /// Largest request body forwarded to a provider or kcp (then 413).
    pub body_limit: usize,
    /// Scheme the hub is served with, for `X-Forwarded-Proto`.
    pub public_proto: &'static str,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            upstream_timeout: Duration::from_secs(30),
            kcp_timeout: Duration::from_secs(30),
            body_limit: 10 * 1024 * 1024,
            public_proto: "https",
        }
    }
}

/// Everything a handler needs.
pub struct Shared {
    pub registry: Arc<Registry>,
    /// Whether the faros workspace tree is bootstrapped ([`crate::readiness`]).
    pub tree: Arc<crate::readiness::TreeGate>,
    pub authn: Arc<dyn Authenticator>,
    /// Reviews heartbeat tokens in provider workspaces.
    pub reviewer: Arc<dyn TokenReviewer>,
    pub keys: Arc<KeyStore>,
    pub metrics: Arc<Metrics>,
    pub providers_http: UpstreamPool,
    pub kcp_http: UpstreamPool,
    /// kcp's server root (scheme, authority and any path prefix).
    pub kcp_base: http::Uri,
    pub settings: HttpSettings,
    /// Organizations, workspaces, membership, Enable/Disable, MCP federation.
    pub tenancy: Arc<crate::tenancy::Tenancy>,
    /// MCP federation (built by [`crate::Hub::new`] from the registry, keys, metrics and tenancy).
    pub mcp: Arc<crate::mcp::Federation>,
    /// Portal sessions (cookie → credential), see [`crate::portal::session`].
    pub sessions: Arc<crate::portal::Sessions>,
    /// The portal's OIDC sign-in, when an issuer is configured.
    pub oidc_login: Option<Arc<crate::portal::login::OidcLogin>>,
}

/// Cheap-to-clone handle on [`Shared`].
pub type AppState = Arc<Shared>;
