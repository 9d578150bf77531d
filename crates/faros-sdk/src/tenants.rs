//! How backend handlers and MCP tools reach the caller's workspace: a client for the verified
//! caller's logical cluster through the export's virtual workspace, once kcp has published it.
//!
//! On a sharded kcp the slice lists one URL per shard, and only the tenant's shard serves it: the
//! URL is the one the controllers last saw the tenant's objects through, or, for a tenant they have
//! not seen, the one whose list of the probe resource answers for that tenant.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::response::{IntoResponse, Response};
use faros_core::client::ClientFactory;
use faros_core::status::Status;
use http::request::Parts;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use tokio::sync::RwLock;

use crate::endpoints::Endpoints;
use crate::identity::VerifiedIdentity;

struct Published {
    factory: ClientFactory,
    endpoints: Endpoints,
    /// An exported resource, listed to find a tenant's shard.
    probe: Option<ApiResource>,
}

/// The virtual workspace the provider reaches tenants through; empty until the controller has
/// waited for kcp to publish its URL (which happens once some workspace enabled the provider).
#[derive(Clone)]
pub struct Tenants {
    provider: Arc<str>,
    inner: Arc<RwLock<Option<Published>>>,
}

impl Tenants {
    /// No virtual workspace yet: every [`Tenants::client_for`] answers 503.
    pub fn new(provider: &str) -> Self {
        Self {
            provider: provider.into(),
            inner: Arc::default(),
        }
    }

    /// Records the virtual workspace URLs (followed) and the resource listed to find which of
    /// them serves a tenant not seen yet.
    pub async fn set(&self, factory: ClientFactory, endpoints: Endpoints, probe: Option<ApiResource>) {
        *self.inner.write().await = Some(Published {
            factory,
            endpoints,
            probe,
        });
    }

    /// A client for `who`'s logical cluster through the virtual workspace: 400 when the request
    /// names no workspace, 503 before the virtual workspace is known.
    pub async fn client_for(&self, who: &VerifiedIdentity) -> Result<kube::Client, Status> {
        if who.cluster.is_empty() {
            return Err(Status::bad_request(format!(
                "the request names no workspace; call it from a workspace that enabled {}",
                self.provider
            )));
        }
        let guard = self.inner.read().await;
        let unavailable = || {
            Status::unavailable(format!(
                "no workspace has enabled {} yet, or the provider has no kubeconfig",
                self.provider
            ))
        };
        let Some(published) = guard.as_ref() else {
            return Err(unavailable());
        };
        let urls = published.endpoints.current();
        let client = |url: &str| {
            published
                .factory
                .virtual_workspace(url, &who.cluster)
                .map_err(|e| Status::internal(e.to_string()))
        };
        let homes = published.endpoints.homes();
        if let Some(home) = homes.get(&who.cluster).filter(|h| urls.contains(h)) {
            return client(&home);
        }
        match (urls.as_slice(), &published.probe) {
            ([], _) => Err(unavailable()),
            ([only], _) | ([only, ..], None) => client(only),
            (_, Some(probe)) => {
                for url in &urls {
                    let c = client(url)?;
                    let api: Api<DynamicObject> = Api::all_with(c.clone(), probe);
                    if api.list_metadata(&ListParams::default().limit(1)).await.is_ok() {
                        homes.record(&who.cluster, url);
                        return Ok(c);
                    }
                }
                Err(Status::unavailable(format!(
                    "no shard serves workspace {} for {} yet (has it enabled the provider?)",
                    who.cluster, self.provider
                )))
            }
        }
    }
}

/// The verified caller of a backend request or MCP tool call, with a client that acts in the
/// caller's workspace only (the logical cluster the hub signed, never one named by the request).
#[derive(Clone)]
pub struct Caller {
    pub who: VerifiedIdentity,
    pub client: kube::Client,
}

impl Caller {
    /// The caller of a request whose extensions hold its [`VerifiedIdentity`] and the [`Tenants`].
    pub async fn of(parts: &Parts) -> Result<Self, Status> {
        let who = parts
            .extensions
            .get::<VerifiedIdentity>()
            .cloned()
            .ok_or_else(|| Status::unauthorized("no verified faros identity on this request"))?;
        let tenants = parts
            .extensions
            .get::<Tenants>()
            .ok_or_else(|| Status::internal("no tenants on this route (serve it through faros_sdk::App)"))?;
        let client = tenants.client_for(&who).await?;
        Ok(Self { who, client })
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Caller::of(parts).await.map_err(IntoResponse::into_response)
    }
}

/// The provider's name and version, for handlers that report them.
#[derive(Clone, Debug)]
pub struct ProviderInfo {
    pub name: String,
    pub version: String,
}

impl<S: Send + Sync> FromRequestParts<S> for ProviderInfo {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<ProviderInfo>()
            .cloned()
            .ok_or_else(|| Status::internal("no provider info on this route").into_response())
    }
}
