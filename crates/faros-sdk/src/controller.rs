//! Controllers over an APIExport's virtual workspace: one watch across every tenant that bound the
//! export, one reconcile per object, with a client for that object's tenant.
//!
//! The queueing is [`faros_runtime`]'s, the same runtime the hub reconciler uses: objects are keyed by
//! [`TenantKey`] (`kcp.io/cluster`, namespace, name), because kube-runtime's `Controller` keys by
//! (namespace, name) and would merge two tenants' `default/hello` seen through `/clusters/*`:
//!
//! - events are deduplicated per key (a burst of updates is one reconcile of the newest object);
//! - a key is never reconciled twice at the same time;
//! - a failed reconcile is retried with per-key exponential backoff ([`RETRY_MIN`] doubling to
//!   [`RETRY_MAX`]); a successful one may ask to be requeued after a delay;
//! - a deleted object (including every object of a tenant that unbinds the export, which kcp
//!   deletes) is dropped from the queue, so nothing keeps retrying against a tenant that left.
//!
//! This module adds what is provider-specific: the virtual workspace URL ([`endpoint_url`] waits for
//! kcp to publish it in the export's APIExportEndpointSlice, which happens once some workspace has
//! bound the export), the per-tenant client, and [`ControllerStats`].

use std::fmt::{self, Display};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use faros_core::client::{ClientError, ClientFactory};
use faros_core::kcp::apis::v1alpha1::APIExportEndpointSlice;
use faros_core::wait::{WaitError, wait_for};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;

pub use faros_runtime::{Action, ClusterKey as TenantKey, RETRY_MAX, RETRY_MIN, WorkQueue};

/// Errors running a controller.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error("waiting for APIExportEndpointSlice {slice:?} to publish a URL: {source}")]
    Endpoint {
        slice: String,
        #[source]
        source: WaitError,
    },
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// Waits until the endpoint slice `slice` (in the workspace `client` targets) lists a virtual
/// workspace URL, and returns the first one.
pub async fn endpoint_url(client: Client, slice: &str, timeout: Duration) -> Result<String, ControllerError> {
    let api: Api<APIExportEndpointSlice> = Api::all(client);
    let found = wait_for(api, slice, |s| s.is_some_and(|s| !s.urls().is_empty()), timeout)
        .await
        .map_err(|source| ControllerError::Endpoint {
            slice: slice.into(),
            source,
        })?;
    Ok(found
        .and_then(|s| s.urls().first().map(|u| u.to_string()))
        .unwrap_or_default())
}

/// What a reconcile gets besides the object: its tenant, and a client scoped to that tenant
/// through the virtual workspace (`<vw>/clusters/<cluster>`).
#[derive(Clone)]
pub struct Tenant {
    pub key: TenantKey,
    pub client: Client,
    /// The resource the controller watches (what [`crate::reconcile`] patches).
    pub resource: ApiResource,
}

/// Counters of a running controller, shared with whoever wants to observe it (metrics, tests).
#[derive(Debug, Default)]
pub struct ControllerStats {
    pub reconciles: AtomicU64,
    pub failures: AtomicU64,
}

impl ControllerStats {
    pub fn reconciles(&self) -> u64 {
        self.reconciles.load(Ordering::Relaxed)
    }
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }
}

/// A controller for one exported (or claimed) resource across all tenants.
pub struct Controller {
    factory: ClientFactory,
    vw_url: String,
    resource: ApiResource,
    concurrency: usize,
    stats: Arc<ControllerStats>,
}

impl Controller {
    /// Watches `resource` through the virtual workspace at `vw_url` (from [`endpoint_url`]).
    pub fn new(factory: ClientFactory, vw_url: &str, resource: ApiResource) -> Self {
        Self {
            factory,
            vw_url: vw_url.trim_end_matches('/').to_string(),
            resource,
            concurrency: 8,
            stats: Arc::default(),
        }
    }

    /// Counts into `stats` instead of a private counter.
    pub fn stats(mut self, stats: Arc<ControllerStats>) -> Self {
        self.stats = stats;
        self
    }

    /// How many reconciles may run at once (default 8).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// Runs until `shutdown` completes. `reconcile` errors are logged and retried with backoff.
    pub async fn run<R, Fut, E>(self, reconcile: R, shutdown: impl Future<Output = ()>) -> Result<(), ControllerError>
    where
        R: Fn(Arc<DynamicObject>, Tenant) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: Display + Send + 'static,
    {
        let all = self.factory.virtual_workspace(&self.vw_url, "*")?;
        let api: Api<DynamicObject> = Api::all_with(all, &self.resource);
        let events = watcher::watcher(api, watcher::Config::default()).default_backoff();
        let (factory, vw_url, stats) = (self.factory, Arc::<str>::from(self.vw_url), self.stats);
        let resource = self.resource.clone();
        let reconcile = Arc::new(reconcile);
        faros_runtime::Controller::new(self.resource.kind.clone())
            .concurrency(self.concurrency)
            .watch(vw_url.clone(), events)
            .run(
                move |obj, request| {
                    let tenant = factory
                        .virtual_workspace(&vw_url, &request.key.cluster)
                        .map(|client| Tenant {
                            key: request.key,
                            client,
                            resource: resource.clone(),
                        });
                    let (reconcile, stats) = (reconcile.clone(), stats.clone());
                    async move {
                        stats.reconciles.fetch_add(1, Ordering::Relaxed);
                        let result = match tenant {
                            Ok(tenant) => reconcile(obj, tenant).await.map_err(Failed::Reconcile),
                            Err(e) => Err(Failed::Client(e)),
                        };
                        if result.is_err() {
                            stats.failures.fetch_add(1, Ordering::Relaxed);
                        }
                        result
                    }
                },
                faros_runtime::default_error_policy,
                shutdown,
            )
            .await;
        Ok(())
    }
}

/// Why one reconcile failed: the tenant's client could not be built, or the provider's reconcile
/// said so.
enum Failed<E> {
    Client(ClientError),
    Reconcile(E),
}

impl<E: Display> Display for Failed<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failed::Client(e) => write!(f, "building the tenant's client: {e}"),
            Failed::Reconcile(e) => e.fmt(f),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use faros_core::kcp::ANNOTATION_CLUSTER;
    use pretty_assertions::assert_eq;

    fn obj(cluster: &str, name: &str) -> DynamicObject {
        let ar = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let mut o = DynamicObject::new(name, &ar).within("default");
        o.metadata.annotations = Some([(ANNOTATION_CLUSTER.to_string(), cluster.to_string())].into());
        o
    }

    #[test]
    fn same_name_in_two_tenants_are_two_keys() {
        let a = TenantKey::of(&obj("c1", "hello")).unwrap();
        let b = TenantKey::of(&obj("c2", "hello")).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.to_string(), "c1|default/hello");
        let mut no_cluster = obj("c1", "x");
        no_cluster.metadata.annotations = None;
        assert_eq!(TenantKey::of(&no_cluster), None);
    }
}
