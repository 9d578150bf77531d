//! `cargo xtask kcp`: real kcp for the `--target kcp` e2e runs, built from its Go modules.
//!
//! - [`gomod`]: the wrapper module's go.mod, the version stamp and proxy refusals, without IO;
//! - [`build`]: `cargo xtask kcp build [--version vX.Y.Z]`, binaries in `target/kcp/<version>/`.

pub(crate) mod build;
pub(crate) mod gomod;

use std::path::Path;

use clap::{Args, Subcommand};

#[derive(Args)]
pub struct Kcp {
    #[command(subcommand)]
    command: KcpCommand,
}

#[derive(Subcommand)]
enum KcpCommand {
    /// Build kcp, kcp-front-proxy and cache-server from kcp's Go modules into target/kcp/<version>/
    /// (only what is missing; needs Go).
    Build(build::Build),
}

impl Kcp {
    pub fn run(self, root: &Path) -> anyhow::Result<()> {
        match self.command {
            KcpCommand::Build(cmd) => cmd.run(root),
        }
    }
}
