//! `cargo xtask bench [kcp]`: performance targets, measured (never asserted in tests) and reported as
//! ratios against a baseline taken in the same invocation on the same machine.
//!
//! The measuring code runs in a release build of xtask against a release build of `faros`, so the
//! debug build `cargo xtask` starts with only builds and re-executes itself.

use std::path::Path;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

mod faros;
mod kcp;
mod provider;
mod proxy;
mod startup;
mod stats;

#[derive(Args)]
pub struct Bench {
    /// Which benchmark to run.
    #[arg(value_enum, default_value_t = Suite::Kcp)]
    suite: Suite,
    /// Objects for the RSS measurement (the target is stated for 100k).
    #[arg(long, default_value_t = 100_000)]
    rss_objects: usize,
    /// Internal: set when the release build runs the measurements.
    #[arg(long, hide = true)]
    measure: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum Suite {
    /// The embedded kcp: creates/s vs redb's durable commit rate, watch latency, list latency, RSS.
    Kcp,
    /// Provider provisioning: 100 Providers at once, time to Ready and kube requests per Provider.
    Provider,
    /// The hub's backend proxy vs direct and vs nginx (wrk), and heartbeats/s.
    Proxy,
    /// `faros dev` cold start and restart until ready, vs the embedded kcp's own time to serve.
    Startup,
}

impl Bench {
    pub fn run(&self, root: &Path) -> anyhow::Result<()> {
        if !self.measure {
            let sh = xshell::Shell::new()?;
            sh.change_dir(root);
            xshell::cmd!(sh, "cargo build --release -p faros -p xtask")
                .run()
                .context("building release binaries")?;
            let suite = match self.suite {
                Suite::Kcp => "kcp",
                Suite::Provider => "provider",
                Suite::Proxy => "proxy",
                Suite::Startup => "startup",
            };
            let rss = self.rss_objects.to_string();
            let xtask = root.join("target/release/xtask");
            xshell::cmd!(sh, "{xtask} bench {suite} --measure --rss-objects {rss}").run()?;
            return Ok(());
        }
        if cfg!(debug_assertions) {
            bail!("the measuring run must be a release build; use `cargo xtask bench`");
        }
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        match self.suite {
            Suite::Kcp => runtime.block_on(kcp::run(root, self.rss_objects)),
            Suite::Provider => runtime.block_on(provider::run(root)),
            Suite::Proxy => runtime.block_on(proxy::run(root)),
            Suite::Startup => runtime.block_on(startup::run(root)),
        }
    }
}
