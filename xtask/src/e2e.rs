//! `cargo xtask e2e`: the scenario tests of `e2e/`, against one of three targets.
//!
//! - `--target in-process` (the default): every scenario starts the whole stack in its test process,
//!   and `external_faros_dev` runs them all against `faros dev` started as a separate process;
//! - `--target external --kubeconfig K --hub-url U --ca C (--token-file F | --users-file F)`: the same
//!   scenarios against an installed platform, using only what a user of it has;
//! - `--target kind`: a kind cluster with kcp (kcp's Helm chart, or `--kcp embedded` for the
//!   faros-kcp chart), the images and charts of this repository, then the external target against it
//!   ([`kind`]);
//! - `--target kube`: the charts installed by helm on a real Kubernetes control plane without
//!   containers (`cargo xtask kube up`), whose Pods the process node runs (`cargo xtask kube node`),
//!   with real kcp as a host process as in `--target kcp` ([`kube`]).
//!
//! Every target is a plan ([`plan::Plan`]) built without IO; `--dry-run` prints it, [`exec`] runs it.
//! This module only reads flags and the machine (which tools exist), never decides the plan.

mod exec;
pub(crate) mod kcp;
mod kind;
mod kube;
mod plan;
mod platform;
mod prereqs;
mod scenarios;
mod spread;
pub(crate) mod tokens;
mod versions;

use std::path::{Path, PathBuf};

use anyhow::bail;
use clap::{Args, ValueEnum};

use crate::images::{self, Engine};
use crate::locate::which;
use plan::{Action, Plan, Step};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Target {
    /// The platform in-process, on the embedded kcp (and `faros dev` as a separate process).
    #[value(name = "in-process", alias = "embedded")]
    InProcess,
    /// An installed platform, given by --kubeconfig, --hub-url, --ca and user tokens.
    External,
    /// kind + kcp + the Helm charts (needs a container engine, kind, helm and kubectl).
    Kind,
    /// Real kcp (built from its Go modules, or --kcp-binary) and the hub and quickstart as
    /// separate processes on 127.0.0.1 (needs Go or a kcp binary, openssl and kubectl).
    Kcp,
    /// The charts by helm on a real Kubernetes control plane whose Pods run as local processes
    /// (`cargo xtask kube up` and `kube node`; needs root), with real kcp as a host process.
    Kube,
}

#[derive(Args)]
pub struct E2e {
    /// Where the platform under test runs.
    #[arg(long, value_enum, env = "FAROS_E2E_TARGET", default_value_t = Target::InProcess)]
    target: Target,
    /// External: kcp admin kubeconfig (the front-proxy's, for real kcp).
    #[arg(long, env = "FAROS_E2E_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// External: the hub's base URL (https).
    #[arg(long, env = "FAROS_E2E_HUB_URL")]
    hub_url: Option<String>,
    /// External: the CA bundle of the hub's certificate.
    #[arg(long, env = "FAROS_E2E_CA")]
    ca: Option<PathBuf>,
    /// External: a static token file the platform reloads; scenarios append their users to it.
    #[arg(long, env = "FAROS_E2E_TOKEN_FILE", conflicts_with = "users_file")]
    token_file: Option<PathBuf>,
    /// External: pre-provisioned static tokens (kcp's token-file format) the scenarios take users from.
    #[arg(long, env = "FAROS_E2E_USERS_FILE")]
    users_file: Option<PathBuf>,
    /// External: also run the scenario that deletes the quickstart Provider (last; it stays deleted).
    #[arg(long, env = "FAROS_E2E_DESTRUCTIVE", value_parser = clap::builder::BoolishValueParser::new())]
    destructive: bool,
    /// Kcp: run this kcp binary instead of building one (`kcp-front-proxy` and `cache-server` are
    /// taken from beside it).
    #[arg(long, env = "FAROS_E2E_KCP_BINARY")]
    kcp_binary: Option<PathBuf>,
    /// Kcp: how many shards (more than one: a cache server, the shards and kcp-front-proxy, from the
    /// binaries beside the kcp binary).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=8))]
    shards: u16,
    /// Kcp: the kcp release `cargo xtask kcp build` builds for the run.
    #[arg(long, default_value = crate::kcp::gomod::PINNED_VERSION)]
    kcp_version: String,
    /// Kind: which kcp to install.
    #[arg(long, value_enum, default_value_t = kind::Kcp::Real)]
    kcp: kind::Kcp,
    /// Kind: reuse the cluster if it exists instead of recreating it.
    #[arg(long)]
    reuse: bool,
    /// Kind: leave the cluster running at the end. Kcp: leave kcp, the hub and quickstart running.
    #[arg(long)]
    keep: bool,
    /// Kind: cluster name.
    #[arg(long, default_value = "faros-e2e")]
    cluster_name: String,
    /// Kind: container engine (default: docker if its daemon answers, else podman).
    #[arg(long, value_enum)]
    engine: Option<Engine>,
    /// Print every command, file and values file instead of running anything.
    #[arg(long)]
    dry_run: bool,
    /// Only scenarios whose name contains this (passed to the test harness).
    filter: Option<String>,
}

/// Where the kube target keeps its files (kcp's, the control plane's, the node's).
const KUBE_WORK_DIR: &str = "target/e2e/kube";
/// Where the kind target keeps its files, relative to the project root.
const KIND_WORK_DIR: &str = "target/e2e/kind";
/// Where the kcp target keeps its files (kcp's root directory, certificates, tokens, logs).
const KCP_WORK_DIR: &str = "target/e2e/kcp";
/// The same with `--shards N` (N > 1): every server's root directory, the CAs and kubeconfigs.
const KCP_SHARDED_WORK_DIR: &str = "target/e2e/kcp-sharded";
const LOGS_DIR: &str = "target/e2e-logs";
/// Tag of the images the kind target builds and loads.
const KIND_IMAGE_TAG: &str = "e2e";

impl E2e {
    pub fn run(self, root: &Path) -> anyhow::Result<()> {
        let plan = self.plan(root)?;
        if self.dry_run {
            print!("{}", plan.render());
            return Ok(());
        }
        exec::run(&plan, root)
    }

    fn plan(&self, root: &Path) -> anyhow::Result<Plan> {
        let filter = self.filter.as_deref();
        let step = |name: &str, cmds: Vec<plan::Cmd>| Plan {
            steps: vec![Step::new(name, cmds.into_iter().map(Action::Run).collect())],
            ..Plan::default()
        };
        match self.target {
            Target::InProcess => Ok(step("scenarios in-process", scenarios::in_process(filter))),
            Target::External => {
                let target = self.external_target()?;
                Ok(step(
                    "scenarios through the external target",
                    scenarios::external(&target, filter),
                ))
            }
            Target::Kcp => {
                let sharded = self.shards > 1;
                if !self.dry_run {
                    self.kcp_needs(root).map_err(anyhow::Error::msg)?;
                }
                let work = root.join(if sharded { KCP_SHARDED_WORK_DIR } else { KCP_WORK_DIR });
                let logs = root.join(LOGS_DIR);
                // Ports: the single shard's or front-proxy's six, then three per sharded server,
                // then the test IdP's.
                let servers = if sharded { 1 + usize::from(self.shards) } else { 0 };
                let (tokens, ports) = if self.dry_run {
                    let placeholder = (0..7 + 3 * servers).map(|i| 6443 + i as u16).collect::<Vec<_>>();
                    (tokens::Tokens::placeholder(tokens::Holders::Kcp), placeholder)
                } else {
                    // A fresh kcp every run: fresh tokens too.
                    (
                        tokens::Tokens::generate(tokens::Holders::Kcp)?,
                        free_ports(7 + 3 * servers)?,
                    )
                };
                let built = crate::kcp::build::bin_dir(root, &self.kcp_version).join("kcp");
                let kcp = match &self.kcp_binary {
                    Some(path) => std::path::absolute(path)?,
                    None => built,
                };
                if self.kcp_binary.is_some() && !self.dry_run {
                    let needed: &[&str] = if sharded {
                        &["kcp", "kcp-front-proxy", "cache-server"]
                    } else {
                        &["kcp"]
                    };
                    check_binaries(&kcp, needed)?;
                }
                let mut sharded_ports = None;
                if sharded {
                    let server = |i: usize| kcp::Server {
                        secure: ports[6 + 3 * i],
                        etcd_client: ports[7 + 3 * i],
                        etcd_peer: ports[8 + 3 * i],
                    };
                    sharded_ports = Some(kcp::Sharded {
                        cache: server(0),
                        shards: (1..servers).map(server).collect(),
                    });
                }
                let mut plan = kcp::plan(&kcp::Input {
                    work: &work,
                    logs: &logs,
                    kcp: &kcp,
                    build_kcp: self.kcp_binary.is_none().then_some(self.kcp_version.as_str()),
                    faros_bin: &root.join("target/debug"),
                    // The test IdP's port comes after the sharded servers' ports.
                    ports: kcp::Ports::from_list(&ports, ports[6 + 3 * servers]),
                    sharded: sharded_ports.as_ref(),
                    tokens: &tokens,
                    filter,
                });
                plan.keep_processes = self.keep;
                Ok(plan)
            }
            Target::Kube => {
                if !self.dry_run {
                    self.kcp_needs(root).map_err(anyhow::Error::msg)?;
                }
                let work = root.join(KUBE_WORK_DIR);
                let logs = root.join(LOGS_DIR);
                let (tokens, ports) = if self.dry_run {
                    let placeholder = (0..7).map(|i| 6443 + i as u16).collect::<Vec<_>>();
                    (tokens::Tokens::placeholder(tokens::Holders::Kcp), placeholder)
                } else {
                    (tokens::Tokens::generate(tokens::Holders::Kcp)?, free_ports(7)?)
                };
                let kcp = match &self.kcp_binary {
                    Some(path) => std::path::absolute(path)?,
                    None => crate::kcp::build::bin_dir(root, &self.kcp_version).join("kcp"),
                };
                let helm = std::env::var("FAROS_HELM").unwrap_or_else(|_| "helm".into());
                let xtask = std::env::current_exe()?;
                let mut plan = kube::plan(&kube::Input {
                    kcp: kcp::Input {
                        work: &work,
                        logs: &logs,
                        kcp: &kcp,
                        build_kcp: self.kcp_binary.is_none().then_some(self.kcp_version.as_str()),
                        faros_bin: &root.join("target/debug"),
                        ports: kcp::Ports::from_list(&ports, ports[6]),
                        sharded: None,
                        tokens: &tokens,
                        filter,
                    },
                    xtask: &xtask,
                    helm: &helm,
                    tokens: &tokens,
                    filter,
                });
                plan.keep_processes = self.keep;
                Ok(plan)
            }
            Target::Kind => {
                // Checked first, so a machine without the tools fails at once (a dry run needs none).
                let helm = std::env::var("FAROS_HELM").unwrap_or_else(|_| "helm".into());
                let engine = if self.dry_run {
                    self.engine.unwrap_or(Engine::Docker)
                } else {
                    prereqs::check(prereqs::Found {
                        engine: images::choose_engine(self.engine, images::probe),
                        kind: which("kind"),
                        helm: which(&helm),
                        kubectl: which("kubectl"),
                    })
                    .map_err(anyhow::Error::msg)?
                };
                // Absolute: the scenarios run from the e2e crate's directory.
                let work = root.join(KIND_WORK_DIR);
                let logs = root.join(LOGS_DIR);
                let build = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs().to_string())
                    .unwrap_or_default();
                let tokens = if self.dry_run {
                    tokens::Tokens::placeholder(tokens::Holders::Kind)
                } else {
                    tokens::Tokens::load_or_generate(&work.join("tokens.csv"))?
                };
                Ok(kind::plan(&kind::Input {
                    kcp: self.kcp,
                    cluster: &self.cluster_name,
                    reuse: self.reuse,
                    keep: self.keep,
                    engine,
                    helm: &helm,
                    work: &work,
                    logs: &logs,
                    tag: KIND_IMAGE_TAG,
                    build: &build,
                    tokens: &tokens,
                    filter,
                }))
            }
        }
    }

    /// What `--target kcp` runs besides cargo: Go for the kcp build (unless given a binary), openssl
    /// for its certificates, kubectl, and Node.js with e2e/oidc's packages for the test IdP.
    fn kcp_needs(&self, root: &Path) -> Result<(), String> {
        let built = crate::kcp::gomod::COMMANDS
            .iter()
            .all(|c| crate::kcp::build::bin_dir(root, &self.kcp_version).join(c).is_file());
        let installed = |dir: &str, package: &str| {
            root.join(dir)
                .join("node_modules")
                .join(package)
                .join("package.json")
                .is_file()
        };
        prereqs::check_needs(
            "--target kcp",
            &[
                prereqs::Need {
                    what: "go",
                    present: self.kcp_binary.is_some() || built || which(&crate::gocmd::go_program()),
                    hint: "Go 1.26 on PATH or FAROS_GO, to build kcp; or --kcp-binary PATH",
                },
                prereqs::Need {
                    what: "openssl",
                    present: which("openssl"),
                    hint: "Debian's openssl, for the run's certificates",
                },
                prereqs::Need {
                    what: "kubectl",
                    present: which("kubectl"),
                    hint: "kubectl on PATH",
                },
                prereqs::Need {
                    what: "node",
                    present: which("node"),
                    hint: "Node.js 20 on PATH, for the test OpenID Connect provider",
                },
                prereqs::Need {
                    what: "e2e/oidc's packages",
                    present: installed("e2e/oidc", "oidc-provider"),
                    hint: "`npm ci --prefix e2e/oidc`",
                },
                prereqs::Need {
                    what: "helm",
                    present: which(&std::env::var("FAROS_HELM").unwrap_or_else(|_| "helm".into())),
                    hint: "helm 3 on PATH or FAROS_HELM, a client in the clients scenario",
                },
                prereqs::Need {
                    what: "python3 with kubernetes and mcp",
                    present: python_imports(&["kubernetes", "mcp"]),
                    hint: "`python3 -m pip install kubernetes mcp` at the versions .ci/run pins",
                },
                prereqs::Need {
                    what: "e2e/mcp-sdk's packages",
                    present: installed("e2e/mcp-sdk", "@modelcontextprotocol/sdk"),
                    hint: "`npm ci --prefix e2e/mcp-sdk`",
                },
            ],
        )
    }

    fn external_target(&self) -> anyhow::Result<scenarios::ExternalTarget> {
        let (Some(kubeconfig), Some(hub_url), Some(ca)) = (&self.kubeconfig, &self.hub_url, &self.ca) else {
            bail!(
                "--target external needs --kubeconfig (kcp admin), --hub-url and --ca (or FAROS_E2E_KUBECONFIG, \
                 FAROS_E2E_HUB_URL, FAROS_E2E_CA)"
            );
        };
        let users = match (&self.token_file, &self.users_file) {
            (Some(f), None) => scenarios::Users::TokenFile(f.clone()),
            (None, Some(f)) => scenarios::Users::Pool(f.clone()),
            _ => bail!(
                "--target external needs user tokens: --token-file (a static token file the platform reloads, such \
                 as faros dev's <state-dir>/tokens.csv) or --users-file (pre-provisioned static tokens)"
            ),
        };
        if !self.dry_run {
            for (flag, path) in [("--kubeconfig", kubeconfig), ("--ca", ca)] {
                if !path.is_file() {
                    bail!("{flag} {}: no such file", path.display());
                }
            }
        }
        // The scenarios run from the e2e crate's directory: hand them absolute paths.
        let abs = |p: &PathBuf| std::path::absolute(p).unwrap_or_else(|_| p.clone());
        Ok(scenarios::ExternalTarget {
            kubeconfig: abs(kubeconfig),
            hub_url: hub_url.clone(),
            ca: abs(ca),
            users: match users {
                scenarios::Users::TokenFile(f) => scenarios::Users::TokenFile(abs(&f)),
                scenarios::Users::Pool(f) => scenarios::Users::Pool(abs(&f)),
            },
            destructive: self.destructive,
        })
    }
}

/// `n` ports free a moment ago (the processes need them on their command lines before they start).
fn free_ports(n: usize) -> anyhow::Result<Vec<u16>> {
    // All bound at once, so no two are the same.
    let listeners = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()?)
}

/// Every binary in `names` beside `kcp` (the `--kcp-binary`), or an error naming the missing ones.
fn check_binaries(kcp: &Path, names: &[&str]) -> anyhow::Result<()> {
    let missing: Vec<String> = names
        .iter()
        .map(|name| kcp.with_file_name(name))
        .filter(|path| !path.is_file())
        .map(|path| path.display().to_string())
        .collect();
    if !missing.is_empty() {
        bail!(
            "--kcp-binary {}: missing {} (kcp's `kcp`, `kcp-front-proxy` and `cache-server` are expected in one \
             directory, as `cargo xtask kcp build` puts them)",
            kcp.display(),
            missing.join(", ")
        );
    }
    Ok(())
}

/// Whether `python3` can import every one of `modules`.
fn python_imports(modules: &[&str]) -> bool {
    std::process::Command::new("python3")
        .arg("-c")
        .arg(format!("import {}", modules.join(", ")))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
