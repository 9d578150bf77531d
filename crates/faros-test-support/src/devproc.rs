//! `faros dev` as a child process, for black-box tests that reach the platform only through what a
//! user of it has: the admin kubeconfig, the hub URL, the CA, the token file.
//!
//! [`Launch`] describes the process (every port picked by the OS unless a test needs one fixed);
//! [`Launch::spawn`] starts it and returns a [`Starting`] process a test may probe while it comes
//! up; [`Starting::ready`] waits until `faros dev` has announced itself — written `hub.url` and
//! printed its banner, which it does only once the README's tenant flow works — and returns the
//! [`DevProcess`]. Its stderr (the log) goes to `<state dir>.log`, quoted in every error. The
//! process is killed when dropped.
//!
//! Which binary runs is the caller's: a test of the `faros` crate passes `CARGO_BIN_EXE_faros`.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::https::{self, HttpsError};
use crate::kubeconfig::{self, KubeconfigError};

/// How long [`Starting::ready`] waits by default: `faros dev` gives up by itself after 120 s, and
/// the test should see that error (with its log) rather than its own timeout.
pub const READY_TIMEOUT: Duration = Duration::from_secs(150);

/// The banner's last line.
const BANNER_END: &str = "Press Ctrl-C";
/// How many lines of the log [`DevProcess::log_tail`] and errors quote.
const LOG_TAIL_LINES: usize = 40;

#[derive(thiserror::Error)]
pub enum DevProcessError {
    #[error("starting {bin} dev: {source}")]
    Spawn { bin: String, source: std::io::Error },
    #[error("creating the log file {path}: {source}")]
    Log { path: String, source: std::io::Error },
    #[error("waiting for faros dev: {0}")]
    Wait(#[source] std::io::Error),
    #[error("faros dev exited with {status} before announcing itself; its log ends:\n{log}")]
    Exited { status: ExitStatus, log: String },
    #[error("faros dev wrote no {hub_url} and no banner within {timeout:?}; its log ends:\n{log}")]
    Timeout {
        hub_url: String,
        timeout: Duration,
        log: String,
    },
    #[error("reading {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("faros dev's admin kubeconfig: {0}")]
    Kubeconfig(#[from] KubeconfigError),
    #[error("a client for faros dev's hub: {0}")]
    Https(#[from] HttpsError),
}

/// Tests `unwrap` these: print the message (with the log's line breaks), not a struct dump.
impl std::fmt::Debug for DevProcessError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// How to start `faros dev`.
#[derive(Clone, Debug)]
pub struct Launch {
    bin: PathBuf,
    state_dir: PathBuf,
    hub_port: u16,
    token_file: Option<PathBuf>,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    timeout: Duration,
    /// Run in the state directory's parent without `--state-dir` (the default `.faros`).
    default_state_dir: bool,
}

impl Launch {
    /// `bin dev` with state in `state_dir` and kcp, the hub and quickstart on ports the OS picks.
    pub fn new(bin: impl Into<PathBuf>, state_dir: impl Into<PathBuf>) -> Self {
        Self {
            bin: bin.into(),
            state_dir: state_dir.into(),
            hub_port: 0,
            token_file: None,
            args: Vec::new(),
            envs: Vec::new(),
            timeout: READY_TIMEOUT,
            default_state_dir: false,
        }
    }

    /// As the docs run it: in the directory that holds the state directory, which must be named
    /// `.faros`, and without `--state-dir`, so every path `faros dev` derives from its default
    /// relative state directory is exercised.
    pub fn default_state_dir(mut self) -> Self {
        assert!(
            self.state_dir.file_name().is_some_and(|n| n == ".faros"),
            "the default state directory is .faros, not {}",
            self.state_dir.display()
        );
        self.default_state_dir = true;
        self
    }

    /// The hub on `port`, for tests that dial it before `faros dev` announces it.
    pub fn hub_port(mut self, port: u16) -> Self {
        self.hub_port = port;
        self
    }

    /// `--token-file path` instead of `<state dir>/tokens.csv`.
    pub fn token_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.token_file = Some(path.into());
        self
    }

    /// More flags (`--no-quickstart`, `--provider <dir>`).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// An environment variable for the process (it inherits the test's environment otherwise).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.envs.push((key.into(), value.into()));
        self
    }

    /// How long [`Starting::ready`] waits (default [`READY_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Starts the process without waiting for it.
    pub fn spawn(self) -> Result<Starting, DevProcessError> {
        let log = self.state_dir.with_extension("log");
        let stderr = std::fs::File::create(&log).map_err(|source| DevProcessError::Log {
            path: log.display().to_string(),
            source,
        })?;
        let mut cmd = Command::new(&self.bin);
        cmd.arg("dev")
            .args(["--kcp-port", "0", "--quickstart-port", "0", "--hub-port"])
            .arg(self.hub_port.to_string());
        match (self.default_state_dir, self.state_dir.parent()) {
            (true, Some(dir)) => {
                cmd.current_dir(dir);
            }
            _ => {
                cmd.arg("--state-dir").arg(&self.state_dir);
            }
        }
        if let Some(file) = &self.token_file {
            cmd.arg("--token-file").arg(file);
        }
        cmd.args(&self.args);
        if std::env::var_os("FAROS_LOG_LEVEL").is_none() {
            cmd.env("FAROS_LOG_LEVEL", "warn");
        }
        cmd.envs(self.envs.iter().map(|(k, v)| (k, v)));
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|source| DevProcessError::Spawn {
                bin: self.bin.display().to_string(),
                source,
            })?;
        // A thread keeps reading stdout, so the child never blocks on a full pipe and the banner
        // is there for the test to read.
        let stdout: Arc<Mutex<Vec<String>>> = Arc::default();
        if let Some(pipe) = child.stdout.take() {
            let lines = stdout.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    if let Ok(mut lines) = lines.lock() {
                        lines.push(line);
                    }
                }
            });
        }
        let token_file = self.token_file.unwrap_or_else(|| self.state_dir.join("tokens.csv"));
        Ok(Starting {
            child: KillOnDrop(child),
            state_dir: self.state_dir,
            token_file,
            log,
            stdout,
            started: Instant::now(),
            timeout: self.timeout,
        })
    }

    /// Starts the process and waits until it is ready.
    pub async fn start(self) -> Result<DevProcess, DevProcessError> {
        self.spawn()?.ready().await
    }

    /// [`Launch::start`] for tests without an async runtime.
    pub fn start_blocking(self) -> Result<DevProcess, DevProcessError> {
        self.spawn()?.ready_blocking()
    }
}

/// A `faros dev` that may not serve yet.
pub struct Starting {
    child: KillOnDrop,
    state_dir: PathBuf,
    token_file: PathBuf,
    log: PathBuf,
    stdout: Arc<Mutex<Vec<String>>>,
    started: Instant,
    timeout: Duration,
}

/// What one look at a starting process found.
enum Step {
    Ready,
    Wait,
}

impl Starting {
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The exit status, if the process has exited.
    pub fn exited(&mut self) -> Result<Option<ExitStatus>, DevProcessError> {
        self.child.0.try_wait().map_err(DevProcessError::Wait)
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        tail(&self.log)
    }

    /// Waits until `faros dev` has written `hub.url` and printed its banner.
    pub async fn ready(mut self) -> Result<DevProcess, DevProcessError> {
        let mut interval = Duration::from_millis(20);
        loop {
            if let Step::Ready = self.step()? {
                return self.into_ready();
            }
            tokio::time::sleep(interval).await;
            interval = (interval * 2).min(Duration::from_millis(250));
        }
    }

    /// [`Starting::ready`] for tests without an async runtime.
    pub fn ready_blocking(mut self) -> Result<DevProcess, DevProcessError> {
        let mut interval = Duration::from_millis(20);
        loop {
            if let Step::Ready = self.step()? {
                return self.into_ready();
            }
            std::thread::sleep(interval);
            interval = (interval * 2).min(Duration::from_millis(250));
        }
    }

    /// One look: ready, still starting, or failed (exited, or out of time).
    fn step(&mut self) -> Result<Step, DevProcessError> {
        if let Some(status) = self.exited()? {
            return Err(DevProcessError::Exited {
                status,
                log: self.log_tail(),
            });
        }
        let hub_url = self.state_dir.join("hub.url");
        // `hub.url` is written before the banner is printed, but not atomically: read both.
        let announced = std::fs::read_to_string(&hub_url).is_ok_and(|u| !u.trim().is_empty())
            && self
                .stdout
                .lock()
                .is_ok_and(|lines| lines.iter().any(|l| l.starts_with(BANNER_END)));
        if announced {
            return Ok(Step::Ready);
        }
        if self.started.elapsed() > self.timeout {
            return Err(DevProcessError::Timeout {
                hub_url: hub_url.display().to_string(),
                timeout: self.timeout,
                log: self.log_tail(),
            });
        }
        Ok(Step::Wait)
    }

    fn into_ready(self) -> Result<DevProcess, DevProcessError> {
        let read = |name: &str| {
            let path = self.state_dir.join(name);
            std::fs::read_to_string(&path)
                .map(|s| s.trim().to_string())
                .map_err(|source| DevProcessError::Read {
                    path: path.display().to_string(),
                    source,
                })
        };
        let hub = read("hub.url")?;
        let kcp = read("kcp.url")?;
        let banner = self.stdout.lock().map(|l| l.join("\n")).unwrap_or_default();
        Ok(DevProcess {
            kubeconfig: self.state_dir.join("admin.kubeconfig"),
            server: format!("{kcp}/clusters/root"),
            hub,
            token_file: self.token_file,
            banner,
            state_dir: self.state_dir,
            log: self.log,
            child: self.child,
        })
    }
}

/// A running `faros dev` that has announced itself; killed when dropped.
pub struct DevProcess {
    /// The admin kubeconfig (`<state dir>/admin.kubeconfig`), for `root`.
    pub kubeconfig: PathBuf,
    /// The embedded kcp's URL of workspace `root` (`https://127.0.0.1:<port>/clusters/root`).
    pub server: String,
    /// The hub's base URL (`https://127.0.0.1:<port>`).
    pub hub: String,
    pub state_dir: PathBuf,
    /// The static token file kcp and the hub read (and reload on edit).
    pub token_file: PathBuf,
    /// What it printed on stdout up to the banner's end.
    pub banner: String,
    log: PathBuf,
    child: KillOnDrop,
}

impl DevProcess {
    /// The CA that signed kcp's and the hub's certificates.
    pub fn ca_path(&self) -> PathBuf {
        self.state_dir.join("ca.crt")
    }

    pub fn ca_pem(&self) -> Result<Vec<u8>, DevProcessError> {
        let path = self.ca_path();
        std::fs::read(&path).map_err(|source| DevProcessError::Read {
            path: path.display().to_string(),
            source,
        })
    }

    /// The dev user's token (administers organization `demo`).
    pub fn dev_token(&self) -> Result<String, DevProcessError> {
        let path = self.state_dir.join("dev-user.token");
        std::fs::read_to_string(&path)
            .map(|t| t.trim().to_string())
            .map_err(|source| DevProcessError::Read {
                path: path.display().to_string(),
                source,
            })
    }

    /// An HTTP client trusting its CA ([`https::client_trusting`]).
    pub fn https(&self) -> Result<reqwest::Client, DevProcessError> {
        Ok(https::client_trusting(&self.ca_pem()?)?)
    }

    /// Admin access to `root`, from the admin kubeconfig.
    pub async fn admin_config(&self) -> Result<kube::Config, DevProcessError> {
        faros_core::telemetry::install_crypto_provider();
        Ok(kubeconfig::config_from_file(&self.kubeconfig).await?)
    }

    /// A client of `root` as the admin.
    pub async fn client(&self) -> Result<kube::Client, DevProcessError> {
        let config = self.admin_config().await?;
        Ok(kube::Client::try_from(config).map_err(KubeconfigError::Client)?)
    }

    pub fn pid(&self) -> u32 {
        self.child.0.id()
    }

    /// The last lines of its log (stderr).
    pub fn log_tail(&self) -> String {
        tail(&self.log)
    }

    /// The lines of its log so far that contain `text`.
    pub fn log_lines_containing(&self, text: &str) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(text))
            .map(str::to_string)
            .collect()
    }

    /// The lines of its log so far at level WARN or ERROR (text format, colored or not).
    pub fn log_warnings(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(" WARN") || l.contains("ERROR"))
            .map(str::to_string)
            .collect()
    }

    /// SIGKILL: no chance to flush anything.
    pub fn kill(&mut self) {
        let _ = self.child.0.kill();
        let _ = self.child.0.wait();
    }

    /// SIGTERM, and the exit status once it has stopped.
    pub fn terminate(&mut self) -> Result<ExitStatus, DevProcessError> {
        // std has no SIGTERM; kill(1) is on every machine that runs these tests.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.0.id().to_string())
            .status();
        self.child.0.wait().map_err(DevProcessError::Wait)
    }
}

/// The child, killed when dropped: a test that fails (or a start that does) leaves no process.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn tail(log: &Path) -> String {
    tail_of(&std::fs::read_to_string(log).unwrap_or_default())
}

/// The log's last lines, ending before a backtrace: with `RUST_BACKTRACE` set, an error's
/// backtrace is longer than the quote and would push out the message saying what failed.
fn tail_of(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .iter()
        .rposition(|line| line.trim_start() == "stack backtrace:" || line.trim_start() == "Stack backtrace:")
        .unwrap_or(lines.len());
    lines[end.saturating_sub(LOG_TAIL_LINES)..end].join("\n")
}

#[cfg(test)]
mod tests {
    use super::tail_of;

    #[test]
    fn the_quote_ends_where_a_backtrace_starts() {
        let cases = [
            ("a\nb", "a\nb"),
            (
                "a\nError: state dir\nstack backtrace:\n  0: main",
                "a\nError: state dir",
            ),
            ("Error: x\n\nStack backtrace:\n  0: f\n  1: g", "Error: x\n"),
            ("", ""),
        ];
        for (log, quote) in cases {
            assert_eq!(tail_of(log), quote, "log {log:?}");
        }
        let long: Vec<String> = (0..100).map(|i| i.to_string()).collect();
        assert_eq!(tail_of(&long.join("\n")).lines().count(), super::LOG_TAIL_LINES);
    }
}
