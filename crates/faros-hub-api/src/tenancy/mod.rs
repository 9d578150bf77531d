//! Tenancy: organizations and team workspaces as kcp workspaces, membership as kcp RBAC inside
//! them, and what tenants do there (Enable/Disable providers, MCP federation).
//!
//! One source of truth: an organization is the workspace `root:faros:tenants:<org>`, a team
//! workspace is `root:faros:tenants:<org>:<ws>`, and a user belongs to one when a ClusterRoleBinding
//! there grants them `faros:workspace:admin` or `faros:workspace:member` ([`rbac`]). The hub reads
//! those bindings from kcp itself: from an index fed by one watch of them across all tenant
//! workspaces ([`index`]), and where the index cannot be sure, from kcp's SubjectAccessReviews
//! ([`access`]), so what the portal shows and what `kubectl` allows stay the same thing. Org admins are materialized as admins into every workspace of the org, because
//! kcp RBAC does not inherit across workspaces.
//!
//! This module must not talk to providers; it only reads the registry and writes kcp.

pub mod access;
pub mod bound;
pub mod enable;
pub mod identity;
pub mod index;
pub mod kubeconfig;
pub mod me;
pub mod members;
pub mod orgs;
pub mod rbac;
pub mod role;
pub mod scope;
pub mod spaces;

use std::sync::Arc;
use std::time::Duration;

use faros_core::client::ClientFactory;
use tokio::sync::watch;

pub use access::{Access, AccessSettings, WorkspaceRef};
pub use role::Role;

/// Settings of the tenant-facing API.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TenancySettings {
    pub access: AccessSettings,
    /// The hub's public base URL (what tenant kubeconfigs point at), e.g. `https://hub.example.com`.
    /// `None`: derived from the request's `Host` and the serving scheme.
    pub public_url: Option<String>,
    /// PEM CA bundle clients need to trust the hub (goes into tenant kubeconfigs).
    pub ca_pem: Option<String>,
    /// How long Enable waits for the APIBinding to become Bound before answering 202.
    pub enable_wait: Option<Duration>,
}

/// Shared state of the tenancy routes.
pub struct Tenancy {
    pub access: Access,
    pub settings: TenancySettings,
    /// Bumped whenever the hub enables or disables a provider somewhere (MCP federation listens).
    bindings_changed: watch::Sender<u64>,
    /// What each workspace enabled, for the backend proxy ([`bound`]).
    pub bound: bound::BoundProviders,
    /// Memberships of every tenant workspace, fed by watches ([`index`]).
    pub index: Arc<index::MembershipIndex>,
    /// Logical cluster → workspace path.
    pub paths: Arc<crate::workspace::ClusterPaths>,
}

impl Tenancy {
    pub fn new(
        factory: ClientFactory,
        settings: TenancySettings,
        metrics: crate::metrics::MembershipMetrics,
    ) -> Arc<Self> {
        let index = Arc::new(index::MembershipIndex::new(metrics));
        Arc::new(Self {
            paths: Arc::new(crate::workspace::ClusterPaths::new(factory.clone())),
            access: Access::new(factory, settings.access, index.clone()),
            index,
            settings,
            bindings_changed: watch::channel(0).0,
            bound: bound::BoundProviders::default(),
        })
    }

    /// Tells listeners that some workspace's set of enabled providers changed.
    pub fn notify_bindings_changed(&self) {
        self.bound.invalidate();
        self.bindings_changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Changes announced by [`Tenancy::notify_bindings_changed`].
    pub fn subscribe_bindings(&self) -> watch::Receiver<u64> {
        self.bindings_changed.subscribe()
    }

    pub fn factory(&self) -> &ClientFactory {
        self.access.factory()
    }

    /// A kube client with the hub's own kcp identity for the logical cluster (path or name) `cluster`.
    pub fn client(&self, cluster: &str) -> Result<kube::Client, faros_core::status::Status> {
        self.access.client(cluster)
    }

    /// [`TenancySettings::enable_wait`] with its default.
    pub fn enable_wait(&self) -> Duration {
        self.settings.enable_wait.unwrap_or(Duration::from_secs(10))
    }
}
