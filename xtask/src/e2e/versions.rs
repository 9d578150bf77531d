//! Every version `cargo xtask e2e --target kind` installs, pinned in one place. Bump them here; the
//! plan snapshots (`snapshots/`) show the change.

/// The kind node image (Kubernetes of the hosting cluster).
pub(crate) const KIND_NODE_IMAGE: &str = "kindest/node:v1.32.2";

/// cert-manager's chart repository and version (real kcp's chart issues its certificates with it).
pub(crate) const CERT_MANAGER_REPO: &str = "https://charts.jetstack.io";
pub(crate) const CERT_MANAGER_VERSION: &str = "v1.16.2";

/// kcp's own Helm chart (kcp-dev/helm-charts, chart `kcp`): server, etcd and front-proxy.
pub(crate) const KCP_CHART_REPO: &str = "https://kcp-dev.github.io/helm-charts";
pub(crate) const KCP_CHART_VERSION: &str = "0.16.6";
