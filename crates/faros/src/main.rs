//! `faros`: the command-line entry point. `faros dev` runs the platform in one process on the
//! embedded kcp; later components (hub reconciler, hub API, quickstart provider) join it.

use anyhow::Context;
use clap::{Parser, Subcommand};
use faros::cli::DevArgs;
use faros::dev;
use faros_core::telemetry::{LogArgs, install_crypto_provider};

/// jemalloc, as in every faros server binary (docs/benchmarks.md#allocator).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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
    /// Serve the embedded kcp alone (the `faros-kcp` chart): no hub, no providers.
    Kcp(Box<faros::kcp::KcpArgs>),
    /// With kcp's admin kubeconfig, once: let the hub reconciler (and, with --hub-user, the hub API)
    /// run as its own kcp user.
    Grant(faros::grant::GrantArgs),
    /// Provider authoring.
    #[command(subcommand)]
    Provider(ProviderCommand),
    /// Credentials for kubectl (exec credential plugins).
    #[command(subcommand)]
    Credential(faros::credential::CredentialCommand),
}

#[derive(Subcommand, Debug)]
enum ProviderCommand {
    /// Scaffold a provider crate: API, controller, backend route, MCP tool, UI, manifests, chart, tests.
    New(faros::scaffold::NewArgs),
    /// The provider's schemas.
    #[command(subcommand)]
    Schema(SchemaCommand),
}

#[derive(Subcommand, Debug)]
enum SchemaCommand {
    /// Run the hub's compatibility gate on the schema directory against the last published revision
    /// (exit 1: refused; 2: accepted only if no tenant's object is refused; 0: compatible).
    Check(faros::schema_check::SchemaCheckArgs),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    cli.log.init().context("setting up logging")?;
    install_crypto_provider();
    match cli.command {
        Command::Dev(args) => dev::run(args).await,
        Command::Kcp(args) => faros::kcp::run(*args).await,
        Command::Grant(args) => faros::grant::run(args).await,
        Command::Credential(cmd) => faros::credential::run(cmd).await,
        Command::Provider(ProviderCommand::Schema(SchemaCommand::Check(args))) => {
            let code = faros::schema_check::run(&args).await?;
            if code != 0 {
                std::process::exit(code);
            }
            Ok(())
        }
        Command::Provider(ProviderCommand::New(args)) => {
            let dir = faros::scaffold::run(&args)?;
            // `--dir ../notes` is printed as the directory it is, not as `<cwd>/../notes`.
            let dir = dir.canonicalize().unwrap_or(dir);
            println!("created provider `{}` in {}", args.name, dir.display());
            // As docs/provider-authoring.md builds it: in the crate, where `faros dev --provider`
            // (through `cargo metadata`) looks for the binary.
            println!("  build it:  cd {} && cargo build", dir.display());
            println!("  run it:    faros dev --provider {}", dir.display());
            Ok(())
        }
    }
}
