//! `cargo xtask kube`: a real Kubernetes control plane without containers, for checking the charts
//! against a real API server.
//!
//! - [`gomod`]: the wrapper module's go.mod and the version stamp, without IO;
//! - [`build`]: `cargo xtask kube build`, etcd, kube-apiserver and kube-controller-manager in
//!   `target/kube/<version>/`;
//! - [`config`], [`pki`], [`plane`]: the control plane on 127.0.0.1 (`cargo xtask kube up`);
//! - [`cli`]: kubectl and helm against it;
//! - [`crds`], [`charts`]: `cargo xtask kube charts`, every chart installed on it;
//! - [`node`]: `cargo xtask kube node`, the process node that runs its Pods.

pub(crate) mod build;
mod charts;
mod cli;
mod config;
mod crds;
mod docs;
pub(crate) mod gomod;
mod node;
mod pki;
pub(crate) mod plane;
mod verdict;

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

#[derive(Args)]
pub struct Kube {
    #[command(subcommand)]
    command: KubeCommand,
}

#[derive(Subcommand)]
enum KubeCommand {
    /// Build etcd, kube-apiserver and kube-controller-manager from their Go modules into
    /// `target/kube/<version>/` (only what is missing; needs Go).
    Build(build::Build),
    /// Start the control plane on 127.0.0.1, print its kubeconfigs, and run until Ctrl-C.
    Up(Up),
    /// Install every chart and values file on the control plane as docs/install.md does, and
    /// fail on any refusal, warning, drift or FailedCreate event.
    Charts(charts::Charts),
    /// Run Pods as local processes: a Node for the control plane (`kube up`), its Pods in network
    /// and mount namespaces of their own, Services resolved to loopback relays (needs root).
    Node(node::NodeCmd),
}

impl Kube {
    pub fn run(self, root: &Path) -> anyhow::Result<()> {
        match self.command {
            KubeCommand::Build(cmd) => cmd.run(root),
            KubeCommand::Up(cmd) => cmd.run(root),
            KubeCommand::Charts(cmd) => cmd.run(root),
            KubeCommand::Node(cmd) => cmd.run(root),
        }
    }
}

#[derive(Args)]
pub struct Up {
    /// Where the control plane's files go (replaced).
    #[arg(long, default_value = "target/kube/up")]
    dir: PathBuf,
    /// kubectl to wait with.
    #[arg(long, env = "FAROS_KUBECTL", default_value = "kubectl")]
    kubectl: String,
}

impl Up {
    fn run(self, root: &Path) -> anyhow::Result<()> {
        let plane = plane::ControlPlane::start(&build::bin_dir(root), root.join(&self.dir), &self.kubectl)?;
        let restricted = charts::pod_security_labels("restricted");
        let labels: Vec<(&str, &str)> = restricted.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        plane.grant_namespace_admin(&config::ADMIN_NAMESPACES, &labels)?;
        println!(
            "cluster admin:          export KUBECONFIG={}\nadmin of {}: {}\nCtrl-C (or SIGTERM) stops it.",
            plane.paths.admin_kubeconfig().display(),
            config::ADMIN_NAMESPACES.join(" and "),
            plane.paths.namespace_admin_kubeconfig().display()
        );
        // Until a signal: the plane's handler stops the processes and ends this one.
        loop {
            std::thread::park();
        }
    }
}
