//! The single-shard platform of [`super::plan`], started and left running for a caller that measures
//! it (`cargo xtask bench kcp-vs-real`): fresh ports, tokens and files under its work directory, the
//! plan's own [`super::startup`] steps run by [`exec::start`], and the time its `start` part took
//! (from kcp's start until the hub reports quickstart Ready, and of that until kcp answered
//! `/readyz`). It builds nothing (the caller builds
//! the binaries), runs no scenario and collects no logs: they stay in `<work>/logs/`.

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use super::super::exec::{self, Running};
use super::super::platform::token_of;
use super::super::tokens::{ADMIN_USER, Holders, RECONCILER_USER, Tokens};
use super::{Input, Ports, Startup, startup};

/// The platform's processes, in the order the plan starts them (the test IdP aside).
pub(crate) const PROCESSES: [&str; 4] = ["kcp", "hub-reconciler", "hub-api", "quickstart"];

/// The running platform; its processes stop when it is dropped (kcp last, as the plan stops them).
pub(crate) struct Platform {
    running: Running,
    /// `https://127.0.0.1:<port>`: kcp, without a workspace path.
    pub kcp_url: String,
    pub hub_url: String,
    /// The CA of kcp's and the hub's serving certificates.
    pub ca: PathBuf,
    /// kcp's admin (group `system:kcp:admin`).
    pub admin_token: String,
    /// The hub reconciler's own kcp user: the identity that creates provider workspaces.
    pub reconciler_token: String,
    /// The hub reconciler's `/metrics`.
    pub reconciler_metrics: String,
    /// From kcp's start until the hub reported quickstart Ready.
    pub to_quickstart_ready: Duration,
    /// From kcp's start until it answered `/readyz` (the first part of `to_quickstart_ready`).
    pub kcp_ready: Duration,
    /// Every process's log.
    pub logs: PathBuf,
}

impl Platform {
    /// The ids of [`PROCESSES`] still held here.
    pub(crate) fn pids(&self) -> Vec<(&'static str, u32)> {
        PROCESSES
            .iter()
            .filter_map(|name| Some((*name, self.running.pid(name)?)))
            .collect()
    }

    /// kcp's process, handed to the caller (which then stops it).
    pub(crate) fn take_kcp(&mut self) -> Option<Child> {
        self.running.take("kcp")
    }
}

/// Starts the platform from `root` (the repository: the plan names files in it) with `kcp` and the
/// faros binaries in `faros_bin`, its files under `work`, checking gates every `poll`.
pub(crate) fn platform(
    root: &Path,
    kcp: &Path,
    faros_bin: &Path,
    work: &Path,
    poll: Duration,
) -> anyhow::Result<Platform> {
    let ports = super::super::free_ports(7)?;
    let tokens = Tokens::generate(Holders::Kcp)?;
    let input = Input {
        work,
        logs: &work.join("logs"),
        kcp,
        build_kcp: None,
        faros_bin,
        ports: Ports {
            kcp: ports[0],
            etcd_client: ports[1],
            etcd_peer: ports[2],
            hub: ports[3],
            reconciler: ports[4],
            quickstart: ports[5],
            idp: ports[6],
        },
        sharded: None,
        tokens: &tokens,
        filter: None,
    };
    let Startup { prepare, start } = startup(&input);
    let mut running = Running::default();
    exec::start(&prepare, root, poll, &mut running)?;
    // The first step is kcp's own (spawned, `/readyz` waited, its kubeconfigs written): timed on
    // its own as the part of the start that is kcp's.
    let (kcp_step, rest) = start.split_at(1.min(start.len()));
    let started = Instant::now();
    exec::start(kcp_step, root, poll, &mut running)?;
    let kcp_ready = started.elapsed();
    exec::start(rest, root, poll, &mut running)?;
    let to_quickstart_ready = started.elapsed();
    Ok(Platform {
        running,
        kcp_url: input.kcp_url(),
        hub_url: input.hub_url(),
        ca: input.file("ca.crt"),
        admin_token: token_of(&input.file("tokens.csv"), ADMIN_USER)?,
        reconciler_token: token_of(&input.file("tokens.csv"), RECONCILER_USER)?,
        reconciler_metrics: format!("http://127.0.0.1:{}/metrics", input.ports.reconciler),
        to_quickstart_ready,
        kcp_ready,
        logs: work.join("logs"),
    })
}
