//! Project automation, run as `cargo xtask <command>` (the matklad pattern,
//! <https://github.com/matklad/cargo-xtask>: a plain binary crate aliased in `.cargo/config.toml`,
//! so no tool beyond cargo has to be installed).
//!
//! One module per subcommand, each a clap `Args` struct with a `run` method. Keep the dependency
//! list short: every dependency here is compiled before any task can run.

use clap::{Parser, Subcommand};
// The subcommands' shared leaf; also `crate::project_root` for modules that name it so.
use locate::project_root;

mod bench;
mod chart_docs;
mod codegen;
mod e2e;
mod fuzz;
mod generated;
mod gocmd;
mod images;
mod kcp;
mod kube;
mod lint;
mod locate;
mod upgrade_fixture;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "faros project automation")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Regenerate CRD and APIResourceSchema YAML under config/ from the Rust types.
    Codegen(codegen::Codegen),
    /// Measure performance targets against baselines taken in the same run (builds as shipped).
    Bench(bench::Bench),
    /// Run the e2e scenarios (against the in-process platform by default).
    E2e(e2e::E2e),
    /// Run every cargo fuzz target in fuzz/ for a while and report executions and findings.
    Fuzz(fuzz::Fuzz),
    /// Build (and with --push push) the container images from the Dockerfile.
    Images(images::Images),
    /// Real kcp from its Go modules (`kcp build`), for `e2e --target kcp`.
    Kcp(kcp::Kcp),
    /// A real Kubernetes control plane without containers (`kube build`, `kube up`, `kube charts`).
    Kube(kube::Kube),
    /// Check documentation references and the dependency rule between workspace crates.
    Lint(lint::Lint),
    /// Rewrite the upgrade test's fixture: a state directory this build wrote, and its manifest.
    UpgradeFixture(upgrade_fixture::UpgradeFixture),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Codegen(cmd) => cmd.run(&project_root()),
        Command::Bench(cmd) => cmd.run(&project_root()),
        Command::E2e(cmd) => cmd.run(&project_root()),
        Command::Fuzz(cmd) => cmd.run(&project_root()),
        Command::Images(cmd) => cmd.run(&project_root()),
        Command::Kcp(cmd) => cmd.run(&project_root()),
        Command::Kube(cmd) => cmd.run(&project_root()),
        Command::Lint(cmd) => cmd.run(&project_root()),
        Command::UpgradeFixture(cmd) => cmd.run(&project_root()),
    }
}
