//! `cargo xtask e2e`: the scenario tests of `e2e/`.
//!
//! `--target embedded` (the default) runs them against the whole stack started in-process by the
//! tests themselves (`faros dev`'s `Stack` on free ports). `--target kind` is the planned run
//! against kind + kcp + the Helm charts; it needs a container engine, kind, helm and the charts,
//! none of which exist in this repository's build environment yet, so it stops with a message
//! saying what is missing instead of pretending.

use std::path::Path;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use xshell::{Shell, cmd};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Target {
    /// The platform in-process, on the embedded kcp.
    Embedded,
    /// kind + kcp + the Helm charts (not available yet).
    Kind,
}

#[derive(Args)]
pub struct E2e {
    /// Where the platform under test runs.
    #[arg(long, value_enum, default_value_t = Target::Embedded)]
    target: Target,
    /// Only scenarios whose name contains this (passed to the test harness).
    filter: Option<String>,
}

impl E2e {
    pub fn run(self, root: &Path) -> anyhow::Result<()> {
        if self.target == Target::Kind {
            let missing: Vec<&str> = ["docker", "kind", "helm"]
                .into_iter()
                .filter(|tool| which(tool).is_none())
                .collect();
            bail!(
                "--target kind needs a container engine, kind and helm (missing here: {}) and the Helm \
                 charts under charts/, which are not written yet; run `cargo xtask e2e` for the \
                 in-process platform",
                if missing.is_empty() {
                    "none".to_string()
                } else {
                    missing.join(", ")
                }
            );
        }
        let sh = Shell::new()?;
        sh.change_dir(root);
        let filter = self.filter.unwrap_or_default();
        cmd!(sh, "cargo test -p faros-e2e --locked -- {filter}")
            .run()
            .context("the e2e scenarios failed")
    }
}

fn which(tool: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(tool))
            .find(|p| p.is_file())
    })
}
