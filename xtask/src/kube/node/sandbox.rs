//! A Pod's sandbox: a holder process (`unshare --net --mount sleep infinity`) whose network
//! namespace has only `lo` (so nothing routes out) and whose mount namespace (private propagation)
//! gets the Pod's volumes and its own `/etc/hosts` by bind mounts, so two Pods' `/etc/faros/...`
//! never meet. Containers are started in both namespaces by `nsenter`, as their user by `setpriv`,
//! each the leader of its own process group, which is what is signalled to stop it.

use std::fs::File;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};

use super::plan::{Mount, Process};

const POLL: Duration = Duration::from_millis(50);

#[derive(Debug, thiserror::Error)]
pub(crate) enum SandboxError {
    #[error("{command}: {source}")]
    Start { command: String, source: std::io::Error },
    #[error("{command} failed: {stderr}")]
    Failed { command: String, stderr: String },
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> SandboxError {
    let path = path.display().to_string();
    move |source| SandboxError::Io { what, path, source }
}

/// A Pod's namespaces, held by one process.
pub(crate) struct Sandbox {
    holder: Child,
    /// The Pod's directory on the host (volumes, hosts file, logs).
    pub dir: PathBuf,
}

fn run(cmd: &mut Command) -> Result<(), SandboxError> {
    let command = format!("{cmd:?}");
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|source| SandboxError::Start {
            command: command.clone(),
            source,
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(SandboxError::Failed {
            command,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }
}

impl Sandbox {
    /// Makes the namespaces and brings `lo` up in the new network namespace.
    pub fn create(dir: PathBuf) -> Result<Self, SandboxError> {
        let mut cmd = Command::new("unshare");
        cmd.args([
            "--net",
            "--mount",
            "--propagation",
            "private",
            "--",
            "sleep",
            "infinity",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
        let holder = cmd.spawn().map_err(|source| SandboxError::Start {
            command: format!("{cmd:?}"),
            source,
        })?;
        let sandbox = Self { holder, dir };
        // unshare execs sleep once the namespaces exist: until then /proc/<pid>/ns/net is the host's.
        let host = std::fs::read_link("/proc/self/ns/net").ok();
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::read_link(format!("/proc/{}/ns/net", sandbox.pid())).ok() == host && Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        run(sandbox.enter(&["--net"]).args(["ip", "link", "set", "lo", "up"]))?;
        Ok(sandbox)
    }

    /// The holder's PID: `/proc/<pid>/ns/{net,mnt}` are the Pod's namespaces.
    pub fn pid(&self) -> u32 {
        self.holder.id()
    }

    fn enter(&self, namespaces: &[&str]) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.arg("--target")
            .arg(self.pid().to_string())
            .args(namespaces)
            .arg("--");
        cmd
    }

    /// Bind-mounts `source` (a file or directory on the host) at `target` in the Pod's mount
    /// namespace. A missing target is made on the host as an empty mount point (there is no image
    /// root: the host's tree is the Pods' root, seen through their own mounts).
    pub fn bind(&self, source: &Path, target: &Path, read_only: bool) -> Result<(), SandboxError> {
        if !target.exists() {
            if source.is_dir() {
                std::fs::create_dir_all(target).map_err(io("making mount point", target))?;
            } else {
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).map_err(io("making mount point", parent))?;
                }
                File::create(target).map_err(io("making mount point", target))?;
            }
        }
        let mut cmd = self.enter(&["--mount"]);
        cmd.args(["mount", "--bind"]);
        if read_only {
            cmd.args(["-o", "ro"]);
        }
        run(cmd.arg(source).arg(target))
    }

    /// Mounts the image's files of a container, read-only, where the image has them.
    pub fn mount_image_files(&self, files: &[(PathBuf, String)]) -> Result<(), SandboxError> {
        for (source, target) in files {
            self.bind(source, Path::new(target), true)?;
        }
        Ok(())
    }

    /// Mounts `mounts` of a container, each volume's directory under `volumes/<name>`.
    pub fn mount_all(&self, mounts: &[Mount]) -> Result<(), SandboxError> {
        for m in mounts {
            let mut source = self.dir.join("volumes").join(&m.volume);
            if !m.sub_path.is_empty() {
                source = source.join(&m.sub_path);
            }
            self.bind(&source, Path::new(&m.path), m.read_only)?;
        }
        Ok(())
    }

    /// Starts `process` in the Pod's namespaces, as its user, its output appended to `log`.
    pub fn start(&self, process: &Process, extra_env: &[(String, String)], log: &Path) -> Result<Child, SandboxError> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(io("opening", log))?;
        let err = out.try_clone().map_err(io("opening", log))?;
        let mut cmd = self.enter(&["--net", "--mount"]);
        if let Some(dir) = &process.working_dir {
            // nsenter's own option: the directory inside the mount namespace.
            cmd = Command::new("nsenter");
            cmd.arg("--target")
                .arg(self.pid().to_string())
                .args(["--net", "--mount"])
                .arg(format!("--wd={dir}"))
                .arg("--");
        }
        if process.uid.is_some() || process.gid.is_some() {
            cmd.arg("setpriv");
            if let Some(uid) = process.uid {
                cmd.arg(format!("--reuid={uid}"));
            }
            if let Some(gid) = process.gid.or(process.uid) {
                cmd.arg(format!("--regid={gid}"));
            }
            if process.groups.is_empty() {
                cmd.arg("--clear-groups");
            } else {
                let groups: Vec<String> = process.groups.iter().map(i64::to_string).collect();
                cmd.arg(format!("--groups={}", groups.join(",")));
            }
            cmd.arg("--no-new-privs").arg("--");
        }
        cmd.arg(&process.program)
            .args(&process.args)
            .env_clear()
            .env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
            .env("HOME", "/")
            .envs(extra_env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .envs(process.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        cmd.spawn().map_err(|source| SandboxError::Start {
            command: format!("{:?} {:?}", process.program, process.args),
            source,
        })
    }

    /// Ends the holder (the namespaces go with the last process in them).
    pub fn destroy(mut self) {
        stop(&mut self.holder, Duration::ZERO);
    }
}

/// Stops `child`'s process group: SIGTERM, then SIGKILL after `grace`.
pub(crate) fn stop(child: &mut Child, grace: Duration) {
    let Some(pid) = i32::try_from(child.id()).ok().and_then(Pid::from_raw) else {
        return;
    };
    if !grace.is_zero() {
        let _ = kill_process_group(pid, Signal::TERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                // The leader is gone; the rest of its group goes with SIGKILL below.
                break;
            }
            std::thread::sleep(POLL);
        }
    }
    let _ = kill_process_group(pid, Signal::KILL);
    let _ = child.wait();
}
