//! The kind cluster's fixed shape: which kcp it runs, its ports, namespaces, releases and Secret
//! names. Read by the plan ([`super`]) and the files it writes ([`super::files`]).

/// Which kcp the platform runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Kcp {
    /// kcp from kcp's Helm chart (server, etcd, front-proxy), with cert-manager.
    Real,
    /// The `faros-kcp` chart (the embedded kcp): faster, no kcp chart (cert-manager still, for the hub).
    Embedded,
}

pub(crate) const KCP_NODE_PORT: u16 = 31443;
pub(crate) const KCP_HOST_PORT: u16 = 16443;
pub(crate) const HUB_NODE_PORT: u16 = 30443;
pub(crate) const HUB_HOST_PORT: u16 = 18443;
/// The front-proxy Service's pinned ClusterIP (inside kind's default service CIDR 10.96.0.0/16).
pub(crate) const FRONT_PROXY_IP: &str = "10.96.0.100";
/// kcp's external hostname: the front-proxy Service's name, resolvable in every pod.
pub(crate) const FRONT_PROXY_HOST: &str = "kcp-front-proxy.kcp.svc";
pub(crate) const KCP_NAMESPACE: &str = "kcp";
pub(crate) const FAROS_NAMESPACE: &str = "faros";
pub(crate) const FAROS_RELEASE: &str = "faros";
/// The Secret holding the shared static token file (read by kcp and the hub).
pub(crate) const TOKENS_SECRET: &str = "faros-e2e-tokens";
/// Real kcp: the front-proxy admin kubeconfig the hub and the reconciler mount.
pub(crate) const KCP_ADMIN_SECRET: &str = "kcp-admin-kubeconfig";
