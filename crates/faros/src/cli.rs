//! Command-line arguments shared by the `faros` binary and in-process users of [`crate::dev`].

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use clap::Args;

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
    /// Static token file in kcp's format (`token,user,uid,"group1,group2"`), read by the embedded
    /// kcp and the hub alike and reloaded when edited. Default: `<state-dir>/tokens.csv`.
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
    /// An out-of-tree provider crate to register, provision, initialise and serve beside the hub, as
    /// the quickstart is (repeatable; comma-separated in the variable). Its binary is run again
    /// whenever `cargo build` replaces it.
    #[arg(long = "provider", env = "FAROS_DEV_PROVIDERS", value_delimiter = ',')]
    pub providers: Vec<PathBuf>,
    /// Commit each write on its own instead of batching concurrent writes into one durable commit.
    #[arg(long, env = "FAROS_KCP_NO_GROUP_COMMIT")]
    pub kcp_no_group_commit: bool,
}

impl DevArgs {
    pub fn listen(&self) -> SocketAddr {
        SocketAddr::new(self.kcp_bind_address, self.kcp_port)
    }
}

impl DevArgs {
    /// Defaults for an in-process stack in `state_dir` with every port picked by the OS.
    pub fn ephemeral(state_dir: impl Into<PathBuf>) -> Self {
        Self {
            state_dir: state_dir.into(),
            kcp_port: 0,
            kcp_bind_address: IpAddr::from([127, 0, 0, 1]),
            token_file: None,
            kcp_max_body_bytes: 3 * 1024 * 1024,
            kcp_watch_history: 10_000,
            hub_port: 0,
            quickstart_port: 0,
            no_quickstart: false,
            providers: Vec::new(),
            kcp_no_group_commit: false,
        }
    }

    /// The static token file in use.
    pub fn token_file(&self) -> PathBuf {
        self.token_file
            .clone()
            .unwrap_or_else(|| self.state_dir.join("tokens.csv"))
    }
}
