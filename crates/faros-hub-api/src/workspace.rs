//! The organization or team workspace a request acts in, once resolved: shared by the tenancy
//! routes, the MCP federation and the proxies, so it lives below all of them.

/// A resolved organization (`workspace: None`) or team workspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkspaceRef {
    pub org: String,
    pub workspace: Option<String>,
    /// Canonical kcp path, e.g. `root:faros:tenants:acme:dev`.
    pub path: String,
    /// Logical cluster name (what `/clusters/<cluster>` and identity assertions carry).
    pub cluster: String,
}

/// Logical cluster name → workspace path, read from the cluster's LogicalCluster (annotation
/// `kcp.io/path`) with the hub's own identity and kept: a logical cluster's path never changes.
/// Shared by everything that meets cluster names in wildcard lists (the catalog, the membership
/// index).
#[derive(Debug)]
pub struct ClusterPaths {
    factory: faros_core::client::ClientFactory,
    paths: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

/// Why a cluster's path could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error("kcp client: {0}")]
    Client(#[from] faros_core::client::ClientError),
    #[error("reading the LogicalCluster of {cluster}: {source}")]
    Kube {
        cluster: String,
        #[source]
        source: kube::Error,
    },
    #[error("the LogicalCluster of {0} has no {ann}", ann = faros_core::kcp::ANNOTATION_PATH)]
    Missing(String),
}

impl ClusterPaths {
    pub fn new(factory: faros_core::client::ClientFactory) -> Self {
        Self {
            factory,
            paths: std::sync::Mutex::default(),
        }
    }

    /// The path already known for `cluster`, without asking kcp.
    pub fn known(&self, cluster: &str) -> Option<String> {
        self.paths
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(cluster)
            .cloned()
    }

    /// The workspace path of logical cluster `cluster`.
    pub async fn path_of(&self, cluster: &str) -> Result<String, PathError> {
        use faros_core::kcp::{ANNOTATION_PATH, LOGICALCLUSTER_NAME, LogicalCluster};
        use kube::ResourceExt;
        if let Some(p) = self.known(cluster) {
            return Ok(p);
        }
        let api: kube::Api<LogicalCluster> = kube::Api::all(self.factory.cluster(cluster)?);
        let lc = api.get(LOGICALCLUSTER_NAME).await.map_err(|source| PathError::Kube {
            cluster: cluster.to_string(),
            source,
        })?;
        let path = lc
            .annotations()
            .get(ANNOTATION_PATH)
            .cloned()
            .ok_or_else(|| PathError::Missing(cluster.to_string()))?;
        self.paths
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(cluster.to_string(), path.clone());
        Ok(path)
    }
}
