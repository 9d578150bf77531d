//! `faros grant`: the one admin step that lets the hub reconciler, and with `--hub-user` the hub
//! API, run as their own kcp users instead of kcp's admin (docs/install.md#kcp-identities). It runs
//! with an admin kubeconfig, once per kcp (again only after restoring a kcp backup made before the
//! identities existed), and is idempotent.

use std::time::Duration;

use anyhow::Context;
use faros_core::client::{ClientFactory, KcpArgs};
use faros_hub_reconciler::identity;

/// Flags of `faros grant`.
#[derive(clap::Args, Debug, Clone)]
pub struct GrantArgs {
    #[command(flatten)]
    pub kcp: KcpArgs,
    /// The kcp user the reconciler authenticates as (its token-file line, client certificate
    /// common name or OIDC user name as kcp maps it).
    #[arg(long, env = "FAROS_RECONCILER_USER", default_value = identity::DEFAULT_USER)]
    pub reconciler_user: String,
    /// The kcp user the hub API authenticates as. Unset: the hub keeps kcp's admin kubeconfig and
    /// nothing is granted for it. Give the reconciler the same name (`--hub-user`,
    /// `FAROS_HUB_USER`): it grants the hub its roles in the workspaces it makes from then on.
    #[arg(long, env = "FAROS_HUB_USER")]
    pub hub_user: Option<String>,
    /// Longest wait for an existing faros workspace to be Ready, in seconds.
    #[arg(long, env = "FAROS_GRANT_TIMEOUT", default_value_t = 120)]
    pub timeout: u64,
}

/// "" or " (a, b)".
fn listed(paths: &[String]) -> String {
    if paths.is_empty() {
        String::new()
    } else {
        format!(" ({})", paths.join(", "))
    }
}

/// Writes the grants and prints what they covered.
pub async fn run(args: GrantArgs) -> anyhow::Result<()> {
    let admin = args.kcp.load().await.context("loading the admin kubeconfig")?;
    let factory = ClientFactory::new(admin).context("building a kcp client")?;
    let timeout = Duration::from_secs(args.timeout);
    let granted = identity::grant(&factory, &args.reconciler_user, timeout)
        .await
        .with_context(|| {
            format!(
                "granting kcp user {:?} the reconciler's permissions",
                args.reconciler_user
            )
        })?;
    println!(
        "kcp user {:?} (reconciler): ClusterRole {} in root; cluster-admin in {} existing faros workspace(s){}",
        args.reconciler_user,
        identity::ROLE,
        granted.owned.len(),
        listed(&granted.owned)
    );
    let Some(hub_user) = args.hub_user.as_deref().map(str::trim).filter(|u| !u.is_empty()) else {
        return Ok(());
    };
    let hub = identity::grant_hub(&factory, hub_user, timeout)
        .await
        .with_context(|| format!("granting kcp user {hub_user:?} the hub API's permissions"))?;
    println!(
        "kcp user {hub_user:?} (hub API): ClusterRole {role} in root; its roles in {} faros workspace(s){}; \
         in {} provider workspace(s){}; cluster-admin in {} existing organization and team workspace(s){}",
        hub.tree.len(),
        listed(&hub.tree),
        hub.providers.len(),
        listed(&hub.providers),
        hub.tenants.len(),
        listed(&hub.tenants),
        role = identity::hub::ROLE,
    );
    Ok(())
}
