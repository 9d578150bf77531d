//! `faros dev`: the embedded kcp (and, as they land, the hub and the quickstart provider) in one
//! process. Writes `<state-dir>/admin.kubeconfig` once the server answers, and stops cleanly on
//! SIGINT/SIGTERM.

use anyhow::Context;
use faros_embedded_kcp::{Config, Server};

use crate::DevArgs;

pub async fn run(args: DevArgs) -> anyhow::Result<()> {
    let mut config = Config::new(&args.state_dir);
    config.listen = args.listen();
    config.token_file = args.token_file.clone();
    config.max_body_bytes = args.kcp_max_body_bytes;
    config.history_capacity = args.kcp_watch_history;
    config.group_commit = !args.kcp_no_group_commit;
    let server = Server::start(config).await.context("starting the embedded kcp")?;
    let kubeconfig_path = args.state_dir.join("admin.kubeconfig");
    faros_embedded_kcp::server::write_private(&kubeconfig_path, server.admin_kubeconfig().as_bytes())
        .with_context(|| format!("writing {}", kubeconfig_path.display()))?;
    let kubeconfig_display = std::fs::canonicalize(&kubeconfig_path).unwrap_or(kubeconfig_path.clone());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let reconciler = start_reconciler(&server, stop_rx.clone()).await?;
    // Printed on stdout (not the log) so scripts and people can find things.
    println!("faros dev is running");
    println!("  embedded kcp:      {}/clusters/root", server.url());
    println!("  admin kubeconfig:  {}", kubeconfig_display.display());
    println!(
        "  try:               KUBECONFIG={} kubectl get namespaces",
        kubeconfig_display.display()
    );
    println!("  state directory:   {}", args.state_dir.display());
    println!("Press Ctrl-C to stop.");
    faros_core::telemetry::shutdown_signal().await;
    let _ = stop_tx.send(true);
    match reconciler.await {
        Ok(Err(e)) => tracing::warn!(error = %e, "hub reconciler stopped with an error"),
        Err(e) => tracing::warn!(error = %e, "hub reconciler task failed"),
        Ok(Ok(())) => {}
    }
    server.shutdown().await;
    Ok(())
}

/// Starts the hub reconciler in-process: it bootstraps the faros workspace tree and provisions Providers.
async fn start_reconciler(
    server: &Server,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<tokio::task::JoinHandle<Result<(), faros_hub_reconciler::Error>>> {
    let mut config = faros_hub_reconciler::Config::new(server.admin_config("root").await.context("loading the admin kubeconfig")?);
    config.hub_url = Some(server.url());
    config.ca_pem = Some(server.ca_pem().to_string());
    let shutdown = async move {
        let _ = stop.wait_for(|stopped| *stopped).await;
    };
    Ok(tokio::spawn(faros_hub_reconciler::run(config, shutdown)))
}

