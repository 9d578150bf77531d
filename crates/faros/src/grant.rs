//! `faros grant`: the one admin step that lets the hub reconciler run as its own kcp user instead
//! of kcp's admin (docs/install.md#kcp-identities). It runs with an admin kubeconfig, once per kcp
//! (again only after restoring a kcp backup made before the identity existed), and is idempotent.

use std::time::Duration;

use anyhow::Context;
use faros_core::client::{ClientFactory, KcpArgs};

/// Flags of `faros grant`.
#[derive(clap::Args, Debug, Clone)]
pub struct GrantArgs {
    #[command(flatten)]
    pub kcp: KcpArgs,
    /// The kcp user the reconciler authenticates as (its token-file line, client certificate
    /// common name or OIDC user name as kcp maps it).
    #[arg(long, env = "FAROS_RECONCILER_USER", default_value = faros_hub_reconciler::identity::DEFAULT_USER)]
    pub reconciler_user: String,
    /// Longest wait for an existing faros workspace to be Ready, in seconds.
    #[arg(long, env = "FAROS_GRANT_TIMEOUT", default_value_t = 120)]
    pub timeout: u64,
}

/// Writes the grant and prints what it covered.
pub async fn run(args: GrantArgs) -> anyhow::Result<()> {
    let admin = args.kcp.load().await.context("loading the admin kubeconfig")?;
    let factory = ClientFactory::new(admin).context("building a kcp client")?;
    let granted =
        faros_hub_reconciler::identity::grant(&factory, &args.reconciler_user, Duration::from_secs(args.timeout))
            .await
            .with_context(|| {
                format!(
                    "granting kcp user {:?} the reconciler's permissions",
                    args.reconciler_user
                )
            })?;
    println!(
        "kcp user {:?}: ClusterRole {} in root; cluster-admin in {} existing faros workspace(s){}",
        args.reconciler_user,
        faros_hub_reconciler::identity::ROLE,
        granted.owned.len(),
        if granted.owned.is_empty() {
            String::new()
        } else {
            format!(" ({})", granted.owned.join(", "))
        }
    );
    Ok(())
}
