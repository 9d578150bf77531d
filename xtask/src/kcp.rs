//! `cargo xtask kcp`: real kcp for the `--target kcp` e2e runs, built from its Go modules.
//!
//! - [`gomod`]: the wrapper module's go.mod, the version stamp and proxy refusals, without IO;
//! - [`staging`]: kcp's staging modules from an archive of the release, for those the proxy refuses;
//! - [`build`]: `cargo xtask kcp build [--version vX.Y.Z]`, binaries in `target/kcp/<version>/`;
//! - [`diff`]: `cargo xtask kcp diff`, the embedded kcp compared with real kcp request by request.

pub(crate) mod build;
pub(crate) mod diff;
pub(crate) mod gomod;
pub(crate) mod staging;

use std::path::Path;

use clap::{Args, Subcommand};

#[derive(Args)]
pub struct Kcp {
    #[command(subcommand)]
    command: KcpCommand,
}

#[derive(Subcommand)]
enum KcpCommand {
    /// Build kcp, kcp-front-proxy and cache-server from kcp's Go modules into `target/kcp/<version>/`
    /// (only what is missing; needs Go).
    Build(build::Build),
    /// Run the request scripts of e2e/kcp-diff/ against real kcp and the embedded kcp and compare
    /// (or against the embedded kcp and real kcp's recorded answers, --recorded).
    Diff(diff::Diff),
}

impl Kcp {
    pub fn run(self, root: &Path) -> anyhow::Result<()> {
        match self.command {
            KcpCommand::Build(cmd) => cmd.run(root),
            KcpCommand::Diff(cmd) => cmd.run(root),
        }
    }
}
