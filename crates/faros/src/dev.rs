//! `faros dev`: the whole platform in one process on an embedded kcp: the kcp-compatible API server,
//! the hub API (HTTPS, same CA), the hub reconciler, and the quickstart provider registered, initialised
//! and served the way a real provider is. Writes `<state-dir>/admin.kubeconfig` and `<state-dir>/hub.url`,
//! prints where things are, and stops cleanly on SIGINT/SIGTERM.

mod quickstart;

use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context;
use faros_embedded_kcp::{Config, Server};
use tokio::sync::watch;

use crate::DevArgs;

/// Resolves when `stop` flips to true.
pub(crate) async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

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
    let (stop_tx, stop_rx) = watch::channel(false);
    let admin = server
        .admin_config("root")
        .await
        .context("loading the admin kubeconfig")?;

    // The hub API, on the same CA as kcp so one kubeconfig CA works for both.
    let hub_listener = tokio::net::TcpListener::bind(SocketAddr::new(args.kcp_bind_address, args.hub_port))
        .await
        .with_context(|| format!("binding the hub API to port {}", args.hub_port))?;
    let hub_url = format!("https://{}", hub_listener.local_addr()?);
    std::fs::write(args.state_dir.join("hub.url"), &hub_url).context("writing hub.url")?;
    let mut hub_config = faros_hub_api::Config::new(admin.clone());
    hub_config.tls = Some(faros_hub_api::Tls::Config(server.tls_config()));
    hub_config.signing_key_file = Some(args.state_dir.join("hub-signing-key.json"));
    let hub = faros_hub_api::Hub::new(hub_config).context("configuring the hub API")?;
    let hub_task = tokio::spawn(hub.serve(hub_listener, stopped(stop_rx.clone())));

    // The reconciler writes provider kubeconfigs that reach kcp through the hub's pass-through.
    let mut reconciler_config = faros_hub_reconciler::Config::new(admin.clone());
    reconciler_config.hub_url = Some(hub_url.clone());
    reconciler_config.ca_pem = Some(server.ca_pem().to_string());
    let reconciler = tokio::spawn(faros_hub_reconciler::run(reconciler_config, stopped(stop_rx.clone())));

    let provider = if args.no_quickstart {
        None
    } else {
        let dev = quickstart::Dev {
            admin: admin.clone(),
            state_dir: args.state_dir.clone(),
            hub_url: hub_url.clone(),
            ca_pem: server.ca_pem().to_string(),
            listen: SocketAddr::new(args.kcp_bind_address, args.quickstart_port),
        };
        Some(tokio::spawn(quickstart::run(dev, stop_rx.clone())))
    };

    // Printed on stdout (not the log) so scripts and people can find things.
    println!("faros dev is running");
    println!("  embedded kcp:      {}/clusters/root", server.url());
    println!("  hub API:           {hub_url}");
    println!("  admin kubeconfig:  {}", kubeconfig_display.display());
    println!(
        "  try:               KUBECONFIG={} kubectl get namespaces",
        kubeconfig_display.display()
    );
    if !args.no_quickstart {
        println!(
            "  quickstart:        provider `quickstart` (root:faros:providers:quickstart), backend on port {}",
            args.quickstart_port
        );
    }
    println!("  state directory:   {}", display(&args.state_dir));
    println!("Press Ctrl-C to stop.");

    faros_core::telemetry::shutdown_signal().await;
    let _ = stop_tx.send(true);
    if let Some(p) = provider {
        log_end(
            "quickstart provider",
            p.await.map_err(anyhow::Error::from).and_then(|r| r),
        );
    }
    log_end(
        "hub reconciler",
        reconciler
            .await
            .map_err(anyhow::Error::from)
            .and_then(|r| r.map_err(Into::into)),
    );
    log_end(
        "hub API",
        hub_task
            .await
            .map_err(anyhow::Error::from)
            .and_then(|r| r.map_err(Into::into)),
    );
    server.shutdown().await;
    Ok(())
}

fn display(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or(path.to_path_buf())
        .display()
        .to_string()
}

fn log_end(component: &str, result: anyhow::Result<()>) {
    if let Err(e) = result {
        tracing::warn!(component, error = format!("{e:#}"), "stopped with an error");
    }
}
