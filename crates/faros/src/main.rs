//! `faros`: the command-line entry point. `faros dev` runs the platform in one process on the
//! embedded kcp; later components (hub reconciler, hub API, quickstart provider) join it.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use faros_core::telemetry::{LogArgs, install_crypto_provider};

mod dev;

#[derive(Parser, Debug)]
#[command(name = "faros", version, about = "faros: a provider platform hub on kcp")]
struct Cli {
    #[command(flatten)]
    log: LogArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run everything in one process on an embedded kcp (state survives restarts).
    Dev(DevArgs),
}

#[derive(Args, Debug, Clone)]
pub struct DevArgs {
    /// Directory for the embedded kcp's data, certificates, tokens and the admin kubeconfig.
    #[arg(long, env = "FAROS_STATE_DIR", default_value = ".faros")]
    pub state_dir: PathBuf,
    /// Port of the embedded kcp (0 picks a free port).
    #[arg(long, env = "FAROS_KCP_PORT", default_value_t = 6443)]
    pub kcp_port: u16,
    /// Address the embedded kcp binds to.
    #[arg(long, env = "FAROS_KCP_BIND_ADDRESS", default_value = "127.0.0.1")]
    pub kcp_bind_address: IpAddr,
    /// Static token file in kcp's format (`token,user,uid,"group1,group2"`).
    #[arg(long, env = "FAROS_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "FAROS_KCP_MAX_BODY_BYTES", default_value_t = 3 * 1024 * 1024)]
    pub kcp_max_body_bytes: usize,
    /// Number of change events kept in memory for watch resumption.
    #[arg(long, env = "FAROS_KCP_WATCH_HISTORY", default_value_t = 10_000)]
    pub kcp_watch_history: usize,
    /// Port of the hub API (HTTPS; 0 picks a free port).
    #[arg(long, env = "FAROS_HUB_PORT", default_value_t = 8443)]
    pub hub_port: u16,
    /// Port of the quickstart provider's backend and UI (0 picks a free port).
    #[arg(long, env = "FAROS_QUICKSTART_PORT", default_value_t = 8081)]
    pub quickstart_port: u16,
    /// Do not run the quickstart provider.
    #[arg(long, env = "FAROS_NO_QUICKSTART")]
    pub no_quickstart: bool,
    /// Commit each write on its own instead of batching concurrent writes into one durable commit.
    #[arg(long, env = "FAROS_KCP_NO_GROUP_COMMIT")]
    pub kcp_no_group_commit: bool,
}

impl DevArgs {
    fn listen(&self) -> SocketAddr {
        SocketAddr::new(self.kcp_bind_address, self.kcp_port)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    cli.log.init().context("setting up logging")?;
    install_crypto_provider();
    match cli.command {
        Command::Dev(args) => dev::run(args).await,
    }
}
