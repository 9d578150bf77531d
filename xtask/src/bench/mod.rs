//! `cargo xtask bench [kcp]`: performance targets, measured (never asserted in tests) and reported as
//! ratios against a baseline taken in the same invocation on the same machine.
//!
//! The measuring code runs in a release build of xtask against `faros` built as the images ship it
//! (the `image` profile, with symbols: [`profile::MEASURED_PROFILE`]), so the debug build `cargo
//! xtask` starts with only builds and re-executes itself. `--smoke` runs every
//! suite (or the one named) with small sizes in the debug build against `target/debug/faros`: what
//! `.ci/run` does so that benchmarks cannot rot ([`profile`]). A measuring run appends its summary
//! to docs/benchmarks.md with the date, commit and machine ([`record`]; `--no-record` does not).

use std::path::Path;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

mod bare_proxy;
mod callgrind_groups;
mod faros;
mod kcp;
mod kcp_vs_real;
mod placement;
mod profile;
mod provider;
mod proxy;
mod proxy_cpu;
mod proxy_headers;
mod proxy_instructions;
mod proxy_syscalls;
mod record;
mod scale;
mod startup;
mod stats;
mod watch;

#[derive(Args)]
pub struct Bench {
    /// Which benchmark to run (`kcp` by default; with `--smoke`, all of them by default).
    #[arg(value_enum)]
    suite_arg: Option<Suite>,
    /// Objects for the RSS measurement (the target is stated for 100k).
    #[arg(long, default_value_t = 100_000)]
    rss_objects: usize,
    /// The `faros` binary to measure instead of `target/image-symbols/faros`: a copy of a build from before
    /// a change, so that before and after are measured in one sitting on the same machine
    /// (`kcp-vs-real` runs the hub API, the hub reconciler and quickstart from the same directory).
    #[arg(long)]
    faros: Option<std::path::PathBuf>,
    /// Small sizes in the debug build, every suite unless one is named: proves the suites run and
    /// report figures (CI); the timings mean nothing.
    #[arg(long)]
    smoke: bool,
    /// The real kcp binary `kcp-vs-real` compares with (default: `target/kcp/<pinned version>/kcp`,
    /// from `cargo xtask kcp build`).
    #[arg(long)]
    kcp_binary: Option<std::path::PathBuf>,
    /// `scale`: team workspaces after each tenant step, cumulative (default 1000,5000,10000; smoke 8,20).
    #[arg(long, value_delimiter = ',')]
    scale_workspaces: Option<Vec<usize>>,
    /// `scale`: team workspaces per organization (default 10; `--scale-workspaces 20000
    /// --scale-per-org 2` is the tenancy target of 10k organizations).
    #[arg(long)]
    scale_per_org: Option<usize>,
    /// `scale`: Providers after each provider step, cumulative (default 100,500,1000; smoke 2,5).
    #[arg(long, value_delimiter = ',')]
    scale_providers: Option<Vec<usize>>,
    /// `provider`, `kcp-vs-real`: Providers (and bare workspaces) applied at once (default 100; smoke 3).
    #[arg(long)]
    providers: Option<usize>,
    /// Do not append the run's summary to docs/benchmarks.md (a measuring run does by default).
    #[arg(long)]
    no_record: bool,
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
    /// Instructions per proxied request (callgrind), the hub's vs nginx's: the deterministic view
    /// of the `proxy` suite's noisy ratio (needs valgrind; skipped in smoke runs).
    ProxyInstructions,
    /// `faros dev` cold start and restart until ready, vs the embedded kcp's own time to serve.
    Startup,
    /// The embedded kcp and real kcp under one workload: /readyz, RSS, creates/s, lists, watch,
    /// workspace create-to-Ready, each with the ratio embedded/real; then the platform on each, and on
    /// real kcp its targets against kcp's own figures on the same kcp.
    KcpVsReal,
    /// Growth curves: 1k/5k/10k tenant workspaces and 100/500/1 000 Providers, time and RSS per step,
    /// `/api/me` and list latency at each tenant size.
    Scale,
}

impl Suite {
    const ALL: [Suite; 6] = [
        Suite::Kcp,
        Suite::Provider,
        Suite::Proxy,
        Suite::ProxyInstructions,
        Suite::Startup,
        Suite::Scale,
    ];

    fn name(self) -> &'static str {
        match self {
            Suite::Kcp => "kcp",
            Suite::Provider => "provider",
            Suite::Proxy => "proxy",
            Suite::ProxyInstructions => "proxy-instructions",
            Suite::Startup => "startup",
            Suite::KcpVsReal => "kcp-vs-real",
            Suite::Scale => "scale",
        }
    }
}

impl Bench {
    pub fn run(&self, root: &Path) -> anyhow::Result<()> {
        kcp_vs_real::use_kcp_binary(self.kcp_binary.as_deref());
        if self.smoke {
            let sh = xshell::Shell::new()?;
            sh.change_dir(root);
            xshell::cmd!(sh, "cargo build -p faros")
                .run()
                .context("building target/debug/faros")?;
            let mut profile = profile::Profile::smoke(root);
            self.scale_sizes(&mut profile);
            let suites: Vec<Suite> = self.suite_arg.map_or(Suite::ALL.to_vec(), |s| vec![s]);
            // Every smoke run also compares with real kcp where its binary exists (it skips itself
            // where it does not; CI builds kcp first, so there it always runs).
            let suites: Vec<Suite> = match self.suite_arg {
                None => suites.into_iter().chain([Suite::KcpVsReal]).collect(),
                Some(_) => suites,
            };
            for suite in suites {
                let started = std::time::Instant::now();
                let summary = measure(root, suite, &profile)?;
                if summary.starts_with("skipped:") {
                    continue;
                }
                profile::check_summary(suite.name(), &summary)?;
                println!("smoke: {} benchmark ran in {:.1?}\n", suite.name(), started.elapsed());
            }
            return Ok(());
        }
        if !self.measure {
            let sh = xshell::Shell::new()?;
            sh.change_dir(root);
            let measured = profile::MEASURED_PROFILE;
            xshell::cmd!(sh, "cargo build --profile {measured} -p faros")
                .run()
                .with_context(|| format!("building faros with the {measured} profile"))?;
            xshell::cmd!(sh, "cargo build --release -p xtask")
                .run()
                .context("building the measuring xtask")?;
            let suite = self.suite().name();
            let rss = self.rss_objects.to_string();
            let xtask = root.join("target/release/xtask");
            let faros: Vec<String> = self
                .faros
                .iter()
                .flat_map(|f| ["--faros".to_string(), f.display().to_string()])
                .collect();
            let faros: Vec<String> = faros
                .into_iter()
                .chain(
                    self.kcp_binary
                        .iter()
                        .flat_map(|k| ["--kcp-binary".to_string(), k.display().to_string()]),
                )
                .chain(self.scale_args())
                .chain(self.no_record.then(|| "--no-record".to_string()))
                .collect();
            xshell::cmd!(sh, "{xtask} bench {suite} --measure --rss-objects {rss} {faros...}").run()?;
            return Ok(());
        }
        if cfg!(debug_assertions) {
            bail!("the measuring run must be a release build; use `cargo xtask bench`");
        }
        let mut profile = profile::Profile::full(root, self.rss_objects);
        if let Some(faros) = &self.faros {
            profile.faros = faros.clone();
        }
        self.scale_sizes(&mut profile);
        let summary = measure(root, self.suite(), &profile)?;
        if self.no_record || summary.starts_with("skipped:") {
            return Ok(());
        }
        record::record(root, self.suite().name(), &summary)
    }

    /// The `--scale-*` and `--providers` flags over the profile's sizes.
    fn scale_sizes(&self, profile: &mut profile::Profile) {
        if let Some(w) = &self.scale_workspaces {
            profile.scale.workspaces = w.clone();
        }
        if let Some(n) = self.scale_per_org {
            profile.scale.per_org = n;
        }
        if let Some(pr) = &self.scale_providers {
            profile.scale.providers = pr.clone();
        }
        if let Some(n) = self.providers {
            profile.providers = n;
        }
    }

    /// The `--scale-*` and `--providers` flags given, for the measuring run.
    fn scale_args(&self) -> Vec<String> {
        let list = |v: &Vec<usize>| v.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
        let mut args = Vec::new();
        if let Some(w) = &self.scale_workspaces {
            args.extend(["--scale-workspaces".to_string(), list(w)]);
        }
        if let Some(n) = self.scale_per_org {
            args.extend(["--scale-per-org".to_string(), n.to_string()]);
        }
        if let Some(pr) = &self.scale_providers {
            args.extend(["--scale-providers".to_string(), list(pr)]);
        }
        if let Some(n) = self.providers {
            args.extend(["--providers".to_string(), n.to_string()]);
        }
        args
    }

    fn suite(&self) -> Suite {
        self.suite_arg.unwrap_or(Suite::Kcp)
    }
}

/// Runs one suite; returns its summary line (already printed).
fn measure(root: &Path, suite: Suite, profile: &profile::Profile) -> anyhow::Result<String> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let summary = match suite {
        Suite::Kcp => runtime.block_on(kcp::run(root, profile)),
        Suite::Provider => runtime.block_on(provider::run(root, profile)),
        Suite::Proxy => runtime.block_on(proxy::run(root, profile)),
        Suite::ProxyInstructions => runtime.block_on(proxy_instructions::run(root, profile)),
        Suite::Startup => runtime.block_on(startup::run(profile)),
        Suite::KcpVsReal => runtime.block_on(kcp_vs_real::run(root, profile)),
        Suite::Scale => runtime.block_on(scale::run(root, profile)),
    }?;
    println!("{summary}");
    Ok(summary)
}
