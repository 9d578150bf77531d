//! The top of the hub's state: [`Shared`], built once by [`crate::Hub::new`], and the axum
//! sub-states handlers extract from it ([`FromRef`]). A handler names only the part it uses (the
//! tenancy routes take [`Tenancy`], the catalog list the [`Registry`], the session API
//! [`SessionApi`]), so the subsystems never import this module: it imports them. The routes that
//! read it are in [`crate::router`] (API) and [`crate::edge`] (proxies).

use std::ops::Deref;
use std::sync::Arc;

use axum::extract::FromRef;

use crate::auth::Authenticator;
use crate::auth::tokenreview::TokenReviewer;
use crate::catalog::Registry;
use crate::keys::KeyStore;
use crate::mcp::federation::Federation;
use crate::metrics::Metrics;
use crate::portal::login::{OidcLogin, SessionApi};
use crate::portal::session::Sessions;
use crate::proxy::UpstreamPool;
use crate::serving::HttpSettings;
use crate::tenancy::Tenancy;

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
    pub tenancy: Arc<Tenancy>,
    /// MCP federation (built by [`crate::Hub::new`] from the registry, keys, metrics and tenancy).
    pub mcp: Arc<Federation>,
    /// Portal sessions (cookie → credential), see [`crate::portal::session`].
    pub sessions: Arc<Sessions>,
    /// The portal's OIDC sign-in, when an issuer is configured.
    pub oidc_login: Option<Arc<OidcLogin>>,
}

/// Cheap-to-clone handle on [`Shared`]: the API router's state. A type of this crate (not an
/// `Arc` alias) so that it can hand out sub-states.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    pub fn new(shared: Shared) -> Self {
        Self(Arc::new(shared))
    }
}

impl Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl FromRef<AppState> for Arc<Tenancy> {
    fn from_ref(st: &AppState) -> Self {
        st.tenancy.clone()
    }
}

impl FromRef<AppState> for Arc<Registry> {
    fn from_ref(st: &AppState) -> Self {
        st.registry.clone()
    }
}

impl FromRef<AppState> for Arc<Federation> {
    fn from_ref(st: &AppState) -> Self {
        st.mcp.clone()
    }
}

impl FromRef<AppState> for Arc<dyn TokenReviewer> {
    fn from_ref(st: &AppState) -> Self {
        st.reviewer.clone()
    }
}

impl FromRef<AppState> for Arc<Metrics> {
    fn from_ref(st: &AppState) -> Self {
        st.metrics.clone()
    }
}

impl FromRef<AppState> for HttpSettings {
    fn from_ref(st: &AppState) -> Self {
        st.settings.clone()
    }
}

impl FromRef<AppState> for SessionApi {
    fn from_ref(st: &AppState) -> Self {
        SessionApi {
            authn: st.authn.clone(),
            sessions: st.sessions.clone(),
            oidc_login: st.oidc_login.clone(),
            settings: st.settings.clone(),
        }
    }
}
