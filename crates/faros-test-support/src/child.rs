//! A server a test runs as a child process (a hub replica, nginx): its stderr and stdout go to a
//! log file quoted in errors, it is killed when dropped (so a failing test leaves nothing running),
//! and it can be stopped the way an orchestrator stops it: SIGTERM, then its exit awaited.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

/// How many lines of the log [`ChildProcess::log_tail`] quotes.
const LOG_TAIL_LINES: usize = 40;

#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    #[error("creating the log file {path}: {source}")]
    Log { path: String, source: std::io::Error },
    #[error("starting {bin}: {source}")]
    Spawn { bin: String, source: std::io::Error },
    #[error("waiting for {bin}: {source}")]
    Wait { bin: String, source: std::io::Error },
    #[error("the SIGTERM/wait task of {bin} did not finish: {source}")]
    Join {
        bin: String,
        source: tokio::task::JoinError,
    },
}

/// What to run: a binary, its arguments and environment, and where its output goes.
#[derive(Clone, Debug)]
pub struct Spec {
    pub bin: PathBuf,
    pub args: Vec<OsString>,
    pub envs: Vec<(OsString, OsString)>,
    /// Created (truncated) at each start; stdout and stderr both go there.
    pub log: PathBuf,
}

impl Spec {
    pub fn new(bin: impl Into<PathBuf>, log: impl Into<PathBuf>) -> Self {
        Self {
            bin: bin.into(),
            args: Vec::new(),
            envs: Vec::new(),
            log: log.into(),
        }
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.envs.push((key.into(), value.into()));
        self
    }

    /// Starts the process (appending to its log, so a restarted server's earlier life stays readable).
    pub fn spawn(&self) -> Result<ChildProcess, ChildError> {
        let bin = self.bin.display().to_string();
        let open = || {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.log)
                .map_err(|source| ChildError::Log {
                    path: self.log.display().to_string(),
                    source,
                })
        };
        let child = Command::new(&self.bin)
            .args(&self.args)
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(open()?)
            .stderr(open()?)
            .spawn()
            .map_err(|source| ChildError::Spawn {
                bin: bin.clone(),
                source,
            })?;
        Ok(ChildProcess {
            child: Some(child),
            bin,
            log: self.log.clone(),
        })
    }
}

/// A running child; killed (SIGKILL) when dropped unless [`ChildProcess::terminate`] stopped it.
pub struct ChildProcess {
    child: Option<std::process::Child>,
    bin: String,
    log: PathBuf,
}

impl ChildProcess {
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(std::process::Child::id)
    }

    pub fn log(&self) -> &Path {
        &self.log
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        tail(&self.log)
    }

    /// The exit status, if the process has exited.
    pub fn exited(&mut self) -> Result<Option<ExitStatus>, ChildError> {
        match &mut self.child {
            Some(child) => child.try_wait().map_err(|source| ChildError::Wait {
                bin: self.bin.clone(),
                source,
            }),
            None => Ok(None),
        }
    }

    /// SIGTERM, and the exit status once it has stopped (waited for off the async runtime).
    pub async fn terminate(&mut self) -> Result<Option<ExitStatus>, ChildError> {
        let Some(mut child) = self.child.take() else {
            return Ok(None);
        };
        let bin = self.bin.clone();
        let waited = tokio::task::spawn_blocking(move || {
            // std has no SIGTERM; kill(1) is on every machine that runs these tests.
            let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
            child.wait()
        })
        .await
        .map_err(|source| ChildError::Join {
            bin: bin.clone(),
            source,
        })?;
        waited.map(Some).map_err(|source| ChildError::Wait { bin, source })
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The last lines of the log file `log` (empty when it cannot be read).
pub fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}
