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
    shutdown_signal().await;
    tracing::info!("shutting down");
    server.shutdown().await;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
