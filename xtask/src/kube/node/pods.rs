//! One Pod as the node runs it: its sandbox, volumes written as files, init containers one after
//! the other, then its containers as processes, restarted by the Pod's policy, probed, and
//! stopped (the whole process group) when the Pod goes.

use std::collections::BTreeMap;
use std::net::SocketAddrV4;
use std::os::unix::fs::{PermissionsExt as _, chown};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;

use super::plan::{PodPlan, Process, VolumeKind};
use super::probes;
use super::sandbox::{Sandbox, SandboxError, stop};
use super::status::{self, Run};

/// Longest the node waits for a container to end after SIGTERM before SIGKILL.
const MAX_GRACE: Duration = Duration::from_secs(30);
/// Wait before restarting a container that exited, doubled per restart up to [`MAX_BACKOFF`].
const BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(20);

#[derive(Debug, thiserror::Error)]
pub(crate) enum PodError {
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> PodError {
    let path = path.display().to_string();
    move |source| PodError::Io { what, path, source }
}

/// A container's process and probes.
struct Live {
    child: Child,
    since: Timestamp,
    readiness: Option<probes::State>,
    liveness: Option<probes::State>,
    startup: Option<probes::State>,
}

struct Slot {
    process: Process,
    image: String,
    live: Option<Live>,
    run: Run,
    restarts: i32,
    /// Not before this instant (back-off after an exit).
    restart_at: Option<Instant>,
    probes: (Option<probes::Spec>, Option<probes::Spec>, Option<probes::Spec>),
}

/// A running Pod.
pub(crate) struct PodRun {
    pub name: String,
    pub namespace: String,
    pub sandbox: Sandbox,
    pub ip: String,
    /// Environment the node adds (KUBERNETES_SERVICE_HOST/PORT).
    env: Vec<(String, String)>,
    init: Vec<Slot>,
    containers: Vec<Slot>,
    restart: String,
    started: Timestamp,
    grace: Duration,
    /// The relays listening in this Pod's namespace, by address.
    pub listeners: BTreeMap<SocketAddrV4, tokio::task::JoinHandle<()>>,
    /// The hosts file last written.
    pub hosts: String,
    /// The ports its containers declare: no relay listens on them in its namespace, where a
    /// container's wildcard bind would find them taken.
    pub own_ports: std::collections::BTreeSet<u16>,
    pub last_status: Option<k8s_openapi::api::core::v1::PodStatus>,
}

fn waiting(reason: &str, message: &str) -> Run {
    Run::Waiting {
        reason: reason.into(),
        message: message.into(),
    }
}

/// Writes the plan's volumes under `<dir>/volumes/<name>`: files owned by root and readable per
/// their mode, empty directories owned by the Pod's user (fsGroup, as the kubelet chowns them).
fn write_volumes(dir: &Path, plan: &PodPlan, owner: Option<(u32, u32)>) -> Result<(), PodError> {
    for v in &plan.volumes {
        let root = dir.join("volumes").join(&v.name);
        std::fs::create_dir_all(&root).map_err(io("making", &root))?;
        match &v.kind {
            VolumeKind::EmptyDir => {
                std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o2775)).map_err(io("chmod", &root))?;
                if let Some((uid, gid)) = owner {
                    chown(&root, Some(uid), Some(gid)).map_err(io("chown", &root))?;
                }
            }
            VolumeKind::Files(files) => {
                for f in files {
                    let path = root.join(&f.path);
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent).map_err(io("making", parent))?;
                    }
                    std::fs::write(&path, &f.contents).map_err(io("writing", &path))?;
                    let mut mode = f.mode & 0o777;
                    // As the kubelet: with an fsGroup the group may read what the owner may.
                    if let Some((_, gid)) = owner {
                        chown(&path, None, Some(gid)).map_err(io("chown", &path))?;
                        mode |= (mode & 0o400) >> 3;
                    }
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                        .map_err(io("chmod", &path))?;
                }
            }
        }
    }
    Ok(())
}

fn probe_specs(pod: &Pod, name: &str) -> (Option<probes::Spec>, Option<probes::Spec>, Option<probes::Spec>) {
    let Some(c) = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.iter().find(|c| c.name == name))
    else {
        return (None, None, None);
    };
    let spec = |p: Option<&k8s_openapi::api::core::v1::Probe>| p.and_then(|p| probes::spec(c, p).ok());
    (
        spec(c.readiness_probe.as_ref()),
        spec(c.liveness_probe.as_ref()),
        spec(c.startup_probe.as_ref()),
    )
}

impl PodRun {
    /// Makes the sandbox, writes the volumes and mounts them with the hosts file; starts nothing.
    pub fn create(
        pod: &Pod,
        plan: PodPlan,
        dir: PathBuf,
        ip: String,
        env: Vec<(String, String)>,
        hosts: String,
    ) -> Result<Self, PodError> {
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(io("removing", &dir))?;
        }
        std::fs::create_dir_all(dir.join("logs")).map_err(io("making", &dir))?;
        let spec = pod.spec.clone().unwrap_or_default();
        let sc = spec.security_context.clone().unwrap_or_default();
        let owner = sc
            .fs_group
            .or(sc.run_as_group)
            .map(|g| (sc.run_as_user.unwrap_or(0) as u32, g as u32));
        write_volumes(&dir, &plan, owner)?;
        let hosts_path = dir.join("hosts");
        std::fs::write(&hosts_path, &hosts).map_err(io("writing", &hosts_path))?;
        std::fs::set_permissions(&hosts_path, std::fs::Permissions::from_mode(0o644))
            .map_err(io("chmod", &hosts_path))?;
        let sandbox = Sandbox::create(dir.clone())?;
        sandbox.bind(&hosts_path, Path::new("/etc/hosts"), true)?;
        // Every container's mounts, once: they share the Pod's mount namespace. The images' files
        // first, so the Pod's volumes cover them as they would in a container.
        for p in plan.init.iter().chain(&plan.containers) {
            sandbox.mount_image_files(&p.image_files)?;
        }
        for p in plan.init.iter().chain(&plan.containers) {
            sandbox.mount_all(&p.mounts)?;
        }
        let image = |name: &str, init: bool| {
            let list = if init {
                &spec.init_containers
            } else {
                &Some(spec.containers.clone())
            };
            list.iter()
                .flatten()
                .find(|c| c.name == name)
                .and_then(|c| c.image.clone())
                .unwrap_or_default()
        };
        let slot = |p: Process, init: bool| Slot {
            image: image(&p.name, init),
            probes: if init {
                (None, None, None)
            } else {
                probe_specs(pod, &p.name)
            },
            process: p,
            live: None,
            run: waiting(if init { "PodInitializing" } else { "ContainerCreating" }, ""),
            restarts: 0,
            restart_at: None,
        };
        Ok(Self {
            name: pod.metadata.name.clone().unwrap_or_default(),
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            sandbox,
            ip,
            env,
            init: plan.init.into_iter().map(|p| slot(p, true)).collect(),
            containers: plan.containers.into_iter().map(|p| slot(p, false)).collect(),
            restart: spec.restart_policy.unwrap_or_else(|| "Always".into()),
            started: Timestamp::now(),
            grace: Duration::from_secs(spec.termination_grace_period_seconds.unwrap_or(30).max(0) as u64)
                .min(MAX_GRACE),
            listeners: BTreeMap::new(),
            own_ports: spec
                .containers
                .iter()
                .chain(spec.init_containers.iter().flatten())
                .flat_map(|c| c.ports.iter().flatten())
                .filter_map(|p| u16::try_from(p.container_port).ok())
                .collect(),
            hosts,
            last_status: None,
        })
    }

    fn log(&self, name: &str) -> PathBuf {
        self.sandbox.dir.join("logs").join(format!("{name}.log"))
    }

    /// Rewrites the hosts file in place (the bind mount holds its inode).
    pub fn set_hosts(&mut self, hosts: String) -> Result<(), PodError> {
        if hosts != self.hosts {
            let path = self.sandbox.dir.join("hosts");
            std::fs::write(&path, &hosts).map_err(io("writing", &path))?;
            self.hosts = hosts;
        }
        Ok(())
    }

    fn launch(&self, slot: &mut Slot, now: Instant) -> Result<(), PodError> {
        let log = self.log(&slot.process.name);
        let child = self.sandbox.start(&slot.process, &self.env, &log)?;
        let (r, l, s) = slot.probes.clone();
        slot.live = Some(Live {
            child,
            since: Timestamp::now(),
            readiness: r.map(|s| probes::State::new(s, now, false)),
            liveness: l.map(|s| probes::State::new(s, now, true)),
            startup: s.map(|s| probes::State::new(s, now, false)),
        });
        slot.run = Run::Running {
            since: Timestamp::now(),
        };
        slot.restart_at = None;
        Ok(())
    }

    /// Whether the Pod's policy restarts a container that exited with `code`.
    fn restarts(&self, code: i32) -> bool {
        match self.restart.as_str() {
            "Never" => false,
            "OnFailure" => code != 0,
            _ => true,
        }
    }

    /// One step: reap exits, start what is due, run due probes. Returns whether anything changed.
    pub fn tick(&mut self) -> Result<(), PodError> {
        let now = Instant::now();
        // Init containers: the first not yet done runs, alone.
        let mut slots = std::mem::take(&mut self.init);
        let mut init_done = true;
        for slot in &mut slots {
            if matches!(slot.run, Run::Exited { code: 0, .. }) {
                continue;
            }
            init_done = false;
            self.step(slot, now, true)?;
            break;
        }
        self.init = slots;
        if init_done {
            let mut slots = std::mem::take(&mut self.containers);
            for slot in &mut slots {
                self.step(slot, now, false)?;
            }
            self.containers = slots;
        }
        Ok(())
    }

    fn step(&self, slot: &mut Slot, now: Instant, init: bool) -> Result<(), PodError> {
        if let Some(live) = &mut slot.live {
            if let Ok(Some(exit)) = live.child.try_wait() {
                let code = exit.code().unwrap_or(128 + 9);
                let since = live.since;
                stop(&mut live.child, Duration::ZERO);
                slot.live = None;
                slot.run = Run::Exited {
                    code,
                    since,
                    until: Timestamp::now(),
                };
                if (init && code != 0 && self.restart != "Never") || (!init && self.restarts(code)) {
                    let factor = 1u32 << slot.restarts.clamp(0, 5);
                    slot.restart_at = Some(now + (BACKOFF * factor).min(MAX_BACKOFF));
                    slot.restarts += 1;
                }
                return Ok(());
            }
            self.probe(slot, now);
            return Ok(());
        }
        match (&slot.run, slot.restart_at) {
            (Run::Waiting { .. }, _) => self.launch(slot, now),
            (Run::Exited { .. }, Some(at)) if now >= at => self.launch(slot, now),
            _ => Ok(()),
        }
    }

    fn probe(&self, slot: &mut Slot, now: Instant) {
        let pid = self.sandbox.pid();
        let Some(live) = &mut slot.live else { return };
        let due = |s: &Option<probes::State>| s.as_ref().is_some_and(|s| now >= s.next);
        let run = |s: &mut probes::State| {
            let ok = probes::run(pid, &s.spec.check, s.spec.timeout);
            s.record(ok, Instant::now())
        };
        // Until the startup probe passes, the others wait (as in the kubelet).
        if let Some(startup) = live.startup.as_mut().filter(|s| !s.passing) {
            if due(&Some(startup.clone())) && run(startup) == probes::Verdict::Failed {
                self.kill(slot, now);
            }
            return;
        }
        if due(&live.readiness)
            && let Some(r) = live.readiness.as_mut()
        {
            run(r);
        }
        if due(&live.liveness)
            && let Some(l) = live.liveness.as_mut()
            && run(l) == probes::Verdict::Failed
        {
            self.kill(slot, now);
        }
    }

    /// A liveness (or startup) failure: the container is killed and restarted by policy.
    fn kill(&self, slot: &mut Slot, now: Instant) {
        if let Some(mut live) = slot.live.take() {
            stop(&mut live.child, self.grace);
            slot.run = Run::Exited {
                code: 137,
                since: live.since,
                until: Timestamp::now(),
            };
            if self.restarts(137) {
                slot.restart_at = Some(now + BACKOFF);
                slot.restarts += 1;
            }
        }
    }

    /// Whether every container is ready (the Pod is a Service endpoint).
    pub fn ready(&self) -> bool {
        self.observed().containers.iter().all(|c| c.ready) && self.init_done()
    }

    fn init_done(&self) -> bool {
        self.init.iter().all(|s| matches!(s.run, Run::Exited { code: 0, .. }))
    }

    /// What the status is made from.
    pub fn observed(&self) -> status::Observed {
        let view = |s: &Slot| {
            let live = s.live.as_ref();
            let started = live.is_some_and(|l| l.startup.as_ref().is_none_or(|p| p.passing));
            status::Container {
                name: s.process.name.clone(),
                image: s.image.clone(),
                run: s.run.clone(),
                ready: started && live.is_some_and(|l| l.readiness.as_ref().is_none_or(|p| p.passing)),
                started,
                restarts: s.restarts,
            }
        };
        status::Observed {
            init: self.init.iter().map(view).collect(),
            containers: self.containers.iter().map(view).collect(),
            restart_never: self.restart != "Always",
            pod_ip: self.ip.clone(),
            started: self.started,
        }
    }

    /// Stops every container (SIGTERM to its process group, SIGKILL after the grace period), the
    /// relays and the sandbox.
    pub fn stop(self) {
        let grace = self.grace;
        self.stop_within(grace);
    }

    /// [`Self::stop`] with at most `grace` for each container.
    pub fn stop_within(mut self, grace: Duration) {
        for (_, l) in std::mem::take(&mut self.listeners) {
            l.abort();
        }
        let grace = grace.min(self.grace);
        for slot in self.init.iter_mut().chain(self.containers.iter_mut()) {
            if let Some(mut live) = slot.live.take() {
                stop(&mut live.child, grace);
            }
        }
        self.sandbox.destroy();
    }
}
