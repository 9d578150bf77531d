//! Which providers a workspace has enabled, as the backend proxy needs to know on every request.
//!
//! The proxy asserts a workspace to a provider only when the workspace enabled it (an APIBinding
//! that is Bound): a tenant's identity in a workspace is theirs to share with the providers they
//! chose, not with every provider whose page they happen to open. Reading the bindings costs a kcp
//! list, so answers are kept for the membership decisions' TTL and dropped whenever the hub itself
//! enables or disables something ([`super::Tenancy::notify_bindings_changed`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use faros_core::kcp::apis::v1alpha2::APIBinding;
use faros_core::status::Status;
use kube::Api;
use kube::api::ListParams;
use tokio::time::Instant;

use super::access::{Access, WorkspaceRef};
use super::enable::plan::{self, Enabled};
use crate::catalog::registry::Registry;

/// Every APIBinding of a workspace.
pub async fn bindings(api: &Api<APIBinding>) -> Result<Vec<APIBinding>, Status> {
    Ok(api.list(&ListParams::default()).await.map_err(Status::from)?.items)
}

/// The providers enabled in `target`, one row per provider, sorted by name.
pub async fn enabled(access: &Access, registry: &Registry, target: &WorkspaceRef) -> Result<Vec<Enabled>, Status> {
    let api: Api<APIBinding> = Api::all(access.client(&target.cluster)?);
    let all = bindings(&api).await?;
    let ready = |p: &str| registry.view(p).is_some_and(|v| v.readiness.ready);
    Ok(plan::enabled_rows(&all, &ready))
}

/// Names of the providers bound in one workspace.
pub type Bound = Arc<BTreeSet<String>>;

/// The bound providers per logical cluster, briefly cached.
#[derive(Default)]
pub struct BoundProviders {
    cache: Mutex<HashMap<String, (Instant, Bound)>>,
}

impl BoundProviders {
    /// The providers whose binding is Bound in `target`.
    pub async fn of(
        &self,
        access: &Access,
        registry: &Registry,
        target: &WorkspaceRef,
        ttl: Duration,
    ) -> Result<Bound, Status> {
        if let Ok(cache) = self.cache.lock()
            && let Some((at, set)) = cache.get(&target.cluster)
            && at.elapsed() < ttl
        {
            return Ok(set.clone());
        }
        let rows = enabled(access, registry, target).await?;
        let set: Bound = Arc::new(rows.into_iter().filter(|r| r.bound).map(|r| r.provider).collect());
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() > 10_000 {
                cache.retain(|_, (at, _)| at.elapsed() < ttl);
            }
            cache.insert(target.cluster.clone(), (Instant::now(), set.clone()));
        }
        Ok(set)
    }

    /// Forgets every answer (the hub enabled or disabled a provider somewhere).
    pub fn invalidate(&self) {
        if let Ok(mut cache) = self.cache.lock() {
            cache.clear();
        }
    }
}
