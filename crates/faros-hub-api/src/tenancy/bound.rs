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

use faros_core::status::Status;
use tokio::time::Instant;

use super::{Tenancy, WorkspaceRef, enable};
use crate::catalog::registry::Registry;

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
        tenancy: &Tenancy,
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
        let rows = enable::enabled(tenancy, registry, target).await?;
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
