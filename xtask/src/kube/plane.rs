//! A Kubernetes control plane for tests: etcd, kube-apiserver and kube-controller-manager from
//! `cargo xtask kube build`, as processes on 127.0.0.1 with ephemeral ports, their files in one
//! directory ([`config::Paths`]), each stopped by PID (by [`ControlPlane::stop`] or on drop).
//!
//! No kubelet and no scheduler: Deployments get ReplicaSets and Pods (or FailedCreate events when
//! admission refuses them), and Pods stay Pending unless the process node ([`super::node`]) runs
//! beside it and binds them.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use super::cli::{CliError, Tool};
use super::config::{self, Paths, Ports, Tokens};
use super::pki::{self, PkiError};

/// How long the processes get to be ready, and to stop.
const START_DEADLINE: Duration = Duration::from_secs(90);
const STOP_DEADLINE: Duration = Duration::from_secs(10);
/// Between two looks at a condition.
const POLL: Duration = Duration::from_millis(100);

/// The PIDs of every control plane process running, for [`kill_on_signal`].
static RUNNING: Mutex<Vec<u32>> = Mutex::new(Vec::new());
static SIGNAL_HANDLER: Once = Once::new();

/// On Ctrl-C or SIGTERM, kills the processes of [`RUNNING`] by PID before this process exits:
/// they are not in the terminal's foreground group when xtask runs in the background, and a
/// signal ends xtask without running [`ControlPlane`]'s drop.
fn kill_on_signal() {
    SIGNAL_HANDLER.call_once(|| {
        std::thread::spawn(|| {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                return;
            };
            let got = runtime.block_on(async {
                let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
                tokio::select! {
                    r = tokio::signal::ctrl_c() => r,
                    _ = term.recv() => Ok(()),
                }
            });
            if got.is_ok() {
                let pids = RUNNING.lock().map(|p| p.clone()).unwrap_or_default();
                for pid in pids {
                    let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
                }
                std::process::exit(130);
            }
        });
    });
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum PlaneError {
    #[error("{binary} is missing: run `cargo xtask kube build`")]
    Missing { binary: String },
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Pki(#[from] PkiError),
    #[error(transparent)]
    Cli(#[from] CliError),
    #[error("{process} exited ({status}) before the control plane was ready; the end of {log}:\n{tail}")]
    Exited {
        process: &'static str,
        status: String,
        log: String,
        tail: String,
    },
    #[error(
        "this machine has address {address}, inside the Service range {range}: a ClusterIP would be a host's \
         address (choose another range in xtask/src/kube/config.rs)"
    )]
    ServiceRange { address: String, range: &'static str },
    #[error("{what} not within {deadline:?}; logs in {dir}")]
    Deadline {
        what: &'static str,
        deadline: Duration,
        dir: String,
    },
}

/// A running control plane.
pub(crate) struct ControlPlane {
    pub paths: Paths,
    pub server: String,
    kubectl: Tool,
    processes: Vec<Process>,
}

struct Process {
    name: &'static str,
    child: Child,
}

impl ControlPlane {
    /// Starts etcd, the API server and the controller manager from `bin` with their files in `dir`
    /// (made; the binaries' own state is created fresh), and waits until the API server's /readyz
    /// answers ok and the controller manager has made the `default` ServiceAccount.
    pub fn start(bin: &Path, dir: PathBuf, kubectl: &str) -> Result<Self, PlaneError> {
        for binary in super::build::BINARIES {
            if !bin.join(binary).is_file() {
                return Err(PlaneError::Missing {
                    binary: bin.join(binary).display().to_string(),
                });
            }
        }
        refuse_host_addresses_in_service_range()?;
        let paths = Paths { dir };
        let io = |what, path: &Path| {
            let path = path.display().to_string();
            move |source| PlaneError::Io { what, path, source }
        };
        if paths.dir.exists() {
            std::fs::remove_dir_all(&paths.dir).map_err(io("removing", &paths.dir))?;
        }
        std::fs::create_dir_all(&paths.dir).map_err(io("creating", &paths.dir))?;
        let started = Instant::now();
        pki::make(&paths)?;
        let tokens = Tokens {
            cluster_admin: pki::token()?,
            namespace_admin: pki::token()?,
            controller_manager: pki::token()?,
        };
        let ports = free_ports().map_err(io("binding a port on", Path::new("127.0.0.1")))?;
        let server = config::server(&ports);
        let ca = paths.ca_cert();
        let files = [
            (paths.tokens(), config::token_file(&tokens)),
            (paths.admission(), config::admission_configuration().to_string()),
            (
                paths.admin_kubeconfig(),
                config::kubeconfig(&server, &ca, config::CLUSTER_ADMIN, &tokens.cluster_admin),
            ),
            (
                paths.namespace_admin_kubeconfig(),
                config::kubeconfig(&server, &ca, config::NAMESPACE_ADMIN, &tokens.namespace_admin),
            ),
            (
                paths.controller_manager_kubeconfig(),
                config::kubeconfig(
                    &server,
                    &ca,
                    config::controller_manager_user(),
                    &tokens.controller_manager,
                ),
            ),
        ];
        for (path, contents) in files {
            std::fs::write(&path, contents).map_err(io("writing", &path))?;
        }
        let mut plane = Self {
            kubectl: Tool::new(kubectl, &paths.admin_kubeconfig()),
            server,
            paths,
            processes: Vec::new(),
        };
        plane.spawn("etcd", bin, config::etcd_args(&plane.paths, &ports))?;
        plane.spawn("kube-apiserver", bin, config::apiserver_args(&plane.paths, &ports))?;
        plane.wait("the API server's /readyz answering ok", |kubectl| {
            kubectl
                .output(&["get", "--raw", "/readyz"], None)
                .map(|(ok, out, _)| ok && out.stdout.trim() == "ok")
        })?;
        plane.spawn(
            "kube-controller-manager",
            bin,
            config::controller_manager_args(&plane.paths, &ports),
        )?;
        plane.wait(
            "the controller manager making ServiceAccount default/default",
            |kubectl| {
                kubectl
                    .output(&["get", "serviceaccount", "default", "-n", "default"], None)
                    .map(|(ok, _, _)| ok)
            },
        )?;
        eprintln!(
            "control plane ready at {} in {:.1?} (files and logs in {})",
            plane.server,
            started.elapsed(),
            plane.paths.dir.display()
        );
        Ok(plane)
    }

    /// kubectl as the cluster admin.
    pub fn kubectl(&self) -> &Tool {
        &self.kubectl
    }

    /// Creates `namespaces` (with `labels`) and makes the namespace-only admin `admin` of each:
    /// the cluster admin's half of a split install.
    pub fn grant_namespace_admin(&self, namespaces: &[&str], labels: &[(&str, &str)]) -> Result<(), PlaneError> {
        for ns in namespaces {
            let mut yaml = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n  labels:\n");
            for (k, v) in labels {
                yaml.push_str(&format!("    {k}: {v}\n"));
            }
            yaml.push_str(&format!("---\n{}", config::namespace_admin_rbac(ns)));
            self.kubectl.run_with_stdin(&["apply", "-f", "-"], Some(&yaml))?;
        }
        Ok(())
    }

    fn spawn(&mut self, name: &'static str, bin: &Path, args: Vec<String>) -> Result<(), PlaneError> {
        let log_path = self.paths.log(name);
        let io = |what| {
            let path = log_path.display().to_string();
            move |source| PlaneError::Io { what, path, source }
        };
        let log = std::fs::File::create(&log_path).map_err(io("creating"))?;
        let err = log.try_clone().map_err(io("opening"))?;
        let child = Command::new(bin.join(name))
            .args(&args)
            .current_dir(&self.paths.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(io("starting a process logging to"))?;
        kill_on_signal();
        if let Ok(mut running) = RUNNING.lock() {
            running.push(child.id());
        }
        self.processes.push(Process { name, child });
        Ok(())
    }

    /// Polls `ready` until it holds, failing at once when a process exits.
    fn wait(&mut self, what: &'static str, ready: impl Fn(&Tool) -> Result<bool, CliError>) -> Result<(), PlaneError> {
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            for p in &mut self.processes {
                if let Ok(Some(status)) = p.child.try_wait() {
                    let log = self.paths.log(p.name);
                    let text = std::fs::read_to_string(&log).unwrap_or_default();
                    let lines: Vec<&str> = text.lines().collect();
                    return Err(PlaneError::Exited {
                        process: p.name,
                        status: status.to_string(),
                        log: log.display().to_string(),
                        tail: lines[lines.len().saturating_sub(20)..].join("\n"),
                    });
                }
            }
            if ready(&self.kubectl)? {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(PlaneError::Deadline {
                    what,
                    deadline: START_DEADLINE,
                    dir: self.paths.dir.display().to_string(),
                });
            }
            std::thread::sleep(POLL);
        }
    }

    /// Stops every process, the last started first: SIGTERM by PID, SIGKILL after
    /// [`STOP_DEADLINE`].
    pub fn stop(&mut self) {
        while let Some(mut p) = self.processes.pop() {
            if let Ok(mut running) = RUNNING.lock() {
                running.retain(|&pid| pid != p.child.id());
            }
            let pid = p.child.id().to_string();
            let _ = Command::new("kill").args(["-TERM", &pid]).status();
            let deadline = Instant::now() + STOP_DEADLINE;
            loop {
                match p.child.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if Instant::now() > deadline => {
                        let _ = p.child.kill();
                        let _ = p.child.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(POLL),
                }
            }
        }
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Fails when one of this machine's IPv4 addresses (`ip -o -4 addr`) lies in the Service range.
fn refuse_host_addresses_in_service_range() -> Result<(), PlaneError> {
    let out = Command::new("ip")
        .args(["-o", "-4", "addr", "show"])
        .stdin(Stdio::null())
        .output()
        .map_err(|source| PlaneError::Io {
            what: "running",
            path: "ip -o -4 addr show".into(),
            source,
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    for address in text.lines().filter_map(|l| l.split_whitespace().nth(3)) {
        if config::overlaps(config::SERVICE_CIDR, address) {
            return Err(PlaneError::ServiceRange {
                address: address.to_string(),
                range: config::SERVICE_CIDR,
            });
        }
    }
    Ok(())
}

/// Four distinct free ports on 127.0.0.1 (held together while chosen, so none repeats).
fn free_ports() -> std::io::Result<Ports> {
    let listeners = (0..4)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()?;
    let port = |i: usize| listeners[i].local_addr().map(|a| a.port());
    Ok(Ports {
        etcd_client: port(0)?,
        etcd_peer: port(1)?,
        apiserver: port(2)?,
        controller_manager: port(3)?,
    })
}
