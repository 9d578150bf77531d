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
//! This module adds what is provider-specific: one watch per virtual workspace URL of the export's
//! APIExportEndpointSlice ([`Endpoints`]: kcp publishes one per shard hosting a bound workspace),
//! started and stopped as the slice's URLs change, as kcp's multicluster-provider does; the
//! per-tenant client through the URL the tenant was seen on; and [`ControllerStats`].

use std::collections::BTreeMap;
use std::fmt::{self, Display};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use faros_core::client::{ClientError, ClientFactory};
use faros_core::kcp::endpoints::UrlChanges;
use faros_runtime::{SourceId, Sources};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;

pub use crate::endpoints::{Endpoints, TenantHomes};

pub use faros_runtime::{Action, ClusterKey as TenantKey, RETRY_MAX, RETRY_MIN, WorkQueue};

/// Errors running a controller.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// What a reconcile gets besides the object: its tenant, and a client scoped to that tenant
/// through the virtual workspace (`<vw>/clusters/<cluster>`).
#[derive(Clone)]
pub struct Tenant {
    pub key: TenantKey,
    pub client: Client,
    /// The resource the controller watches (what [`crate::reconcile`] patches).
    pub resource: ApiResource,
    /// The virtual workspace URL (of the tenant's shard) the object came through.
    pub url: Arc<str>,
    /// The field manager [`crate::reconcile`]'s writes record: the provider's name, so the fields
    /// it owns are told apart from the tenant's and from another revision's.
    pub field_manager: Arc<str>,
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
    endpoints: Endpoints,
    resource: ApiResource,
    concurrency: usize,
    stats: Arc<ControllerStats>,
    field_manager: Arc<str>,
}

impl Controller {
    /// Watches `resource` through every virtual workspace URL of `endpoints`, as they change.
    pub fn new(factory: ClientFactory, endpoints: Endpoints, resource: ApiResource) -> Self {
        Self {
            factory,
            endpoints,
            concurrency: 8,
            stats: Arc::default(),
            field_manager: resource.group.as_str().into(),
            resource,
        }
    }

    /// The field manager of the reconcile's writes (default: the resource's group); [`crate::App`]
    /// sets the provider's name.
    pub fn field_manager(mut self, name: &str) -> Self {
        self.field_manager = name.into();
        self
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
        let controller = faros_runtime::Controller::new(self.resource.kind.clone()).concurrency(self.concurrency);
        let follow = follow(
            controller.sources(),
            self.endpoints.clone(),
            self.factory.clone(),
            self.resource.clone(),
        );
        let (factory, stats, homes) = (self.factory, self.stats, self.endpoints.homes().clone());
        let resource = self.resource.clone();
        let field_manager = self.field_manager.clone();
        let reconcile = Arc::new(reconcile);
        let run = controller.run(
            move |obj, request: faros_runtime::Request<Arc<str>>| {
                // Tools and backend routes reach this tenant through the same shard's URL.
                homes.record(&request.key.cluster, &request.source);
                let tenant = factory
                    .virtual_workspace(&request.source, &request.key.cluster)
                    .map(|client| Tenant {
                        key: request.key,
                        client,
                        resource: resource.clone(),
                        url: request.source.clone(),
                        field_manager: field_manager.clone(),
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
        );
        // `follow` never ends by itself; the controller ends on shutdown.
        tokio::select! {
            _ = run => {}
            _ = follow => {}
        }
        Ok(())
    }
}

/// Keeps one watch of `resource` per URL of `endpoints`: a URL that appears gets a watch, one that
/// goes has its watch stopped (and its tenants' objects forgotten); the others run on untouched.
async fn follow(
    sources: Sources<DynamicObject, Arc<str>>,
    mut endpoints: Endpoints,
    factory: ClientFactory,
    resource: ApiResource,
) {
    let mut watching: BTreeMap<String, SourceId> = BTreeMap::new();
    let mut urls = endpoints.seen();
    loop {
        let changes = UrlChanges::between(watching.keys().map(String::as_str), &urls);
        for url in changes.start {
            match factory.virtual_workspace(&url, "*") {
                Ok(all) => {
                    tracing::info!(%url, kind = %resource.kind, "watching through the virtual workspace");
                    let api: Api<DynamicObject> = Api::all_with(all, &resource);
                    let events = watcher::watcher(api, watcher::Config::default()).default_backoff();
                    watching.insert(url.clone(), sources.add(Arc::from(url.as_str()), events));
                }
                // Retried when the slice next changes; nothing else would make it build now.
                Err(error) => tracing::error!(%url, %error, "cannot build the virtual workspace client"),
            }
        }
        for url in changes.stop {
            if let Some(id) = watching.remove(&url) {
                tracing::info!(%url, kind = %resource.kind, "the endpoint slice no longer lists this URL; watch stopped");
                sources.remove(id);
            }
        }
        match endpoints.changed().await {
            Some(next) => urls = next,
            None => return std::future::pending().await,
        }
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
