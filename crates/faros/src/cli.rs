//! Command-line arguments shared by the `faros` binary and in-process users of [`crate::dev`].

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use clap::Args;
use clap::builder::BoolishValueParser;

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
    #[arg(long, env = "FAROS_NO_QUICKSTART", value_parser = BoolishValueParser::new())]
    pub no_quickstart: bool,
    /// An out-of-tree provider crate to register, provision, initialise and serve beside the hub, as
    /// the quickstart is (repeatable; comma-separated in the variable). Its binary is run again
    /// whenever `cargo build` replaces it.
    #[arg(long = "provider", env = "FAROS_DEV_PROVIDERS", value_delimiter = ',')]
    pub providers: Vec<PathBuf>,
    /// Commit each write on its own instead of batching concurrent writes into one durable commit.
    #[arg(long, env = "FAROS_KCP_NO_GROUP_COMMIT", value_parser = BoolishValueParser::new())]
    pub kcp_no_group_commit: bool,
    /// Lifetime of a portal session from sign-in, in seconds (the hub's `--session-ttl`).
    #[arg(long, env = "FAROS_SESSION_TTL", default_value_t = DEFAULT_SESSION_TTL_SECS)]
    pub session_ttl: u64,
    /// OIDC users for both the embedded kcp and the hub (kcp's `--oidc-*` flags).
    #[command(flatten)]
    pub oidc: crate::oidc::OidcArgs,
}

/// The hub's default portal session lifetime (8 h), as `faros-hub-api --session-ttl` has it.
pub const DEFAULT_SESSION_TTL_SECS: u64 = 8 * 3600;

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
            session_ttl: DEFAULT_SESSION_TTL_SECS,
            oidc: Default::default(),
        }
    }

    /// The static token file in use.
    pub fn token_file(&self) -> PathBuf {
        self.token_file
            .clone()
            .unwrap_or_else(|| self.state_dir.join("tokens.csv"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        dev: DevArgs,
    }

    /// Every boolean flag of `faros dev` takes what the SDK's take: the bare flag, and `1`, `yes`,
    /// `on` (or `0`, `no`, `off`) in its `FAROS_*` variable.
    #[test]
    fn boolean_flags_are_boolish() {
        use clap::{ArgAction, CommandFactory};
        let bools: Vec<(String, String)> = Cli::command()
            .get_arguments()
            .filter(|a| a.get_value_parser().type_id() == clap::builder::ValueParser::bool().type_id())
            .filter_map(|a| Some((a.get_id().to_string(), a.get_long()?.to_string())))
            .collect();
        assert!(bools.len() >= 2, "no boolean flags found");
        for (id, long) in bools {
            for (value, want) in [
                ("1", true),
                ("yes", true),
                ("on", true),
                ("true", true),
                ("0", false),
                ("off", false),
            ] {
                // What the variable's value goes through: the flag's own value parser.
                let matches = Cli::command()
                    .mut_arg(&id, |a| a.action(ArgAction::Set))
                    .try_get_matches_from(["faros", &format!("--{long}"), value])
                    .unwrap_or_else(|e| panic!("--{long} {value}: {e}"));
                assert_eq!(matches.get_one::<bool>(&id), Some(&want), "--{long} {value}");
            }
        }
        let bare = Cli::try_parse_from(["faros", "--no-quickstart", "--kcp-no-group-commit"]).unwrap();
        assert!(bare.dev.no_quickstart && bare.dev.kcp_no_group_commit);
        let none = Cli::try_parse_from(["faros"]).unwrap();
        assert!(!none.dev.no_quickstart && !none.dev.kcp_no_group_commit);
        assert_eq!(none.dev.session_ttl, DEFAULT_SESSION_TTL_SECS);
    }
}
