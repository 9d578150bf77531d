//! `faros dev` as a separate process, for running the scenarios through the external target
//! against a platform the tests share nothing with but files and sockets.
//!
//! The binary is the one `cargo build -p faros` (or `cargo test --workspace`) put next to the test
//! executable; this module never builds it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};

use crate::target::{External, UserSource};

/// Overrides where the `faros` binary is looked for.
pub const ENV_FAROS_BIN: &str = "FAROS_E2E_FAROS_BIN";

/// A running `faros dev`; killed when dropped.
pub struct DevProcess {
    child: Child,
    state_dir: PathBuf,
}

impl DevProcess {
    /// Starts `faros dev` with every port picked by the OS and state in `state_dir`, and waits until
    /// it has written `hub.url` (kcp and the hub listen by then).
    pub async fn start(state_dir: &Path) -> anyhow::Result<Self> {
        let bin = faros_binary()?;
        let log = std::fs::File::create(state_dir.with_extension("log"))
            .with_context(|| format!("creating the log file next to {}", state_dir.display()))?;
        let child = Command::new(&bin)
            .args([
                "dev",
                "--kcp-port",
                "0",
                "--hub-port",
                "0",
                "--quickstart-port",
                "0",
                "--state-dir",
            ])
            .arg(state_dir)
            .env(
                "FAROS_LOG_LEVEL",
                std::env::var("FAROS_LOG_LEVEL").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {} dev", bin.display()))?;
        let mut dev = DevProcess {
            child,
            state_dir: state_dir.to_path_buf(),
        };
        let hub_url = state_dir.join("hub.url");
        let started = tokio::time::Instant::now();
        let mut delay = Duration::from_millis(20);
        loop {
            if let Some(status) = dev.child.try_wait()? {
                bail!(
                    "faros dev exited with {status} before writing hub.url; its log: {}",
                    dev.log_tail()
                );
            }
            if std::fs::read_to_string(&hub_url).is_ok_and(|u| !u.trim().is_empty()) {
                return Ok(dev);
            }
            if started.elapsed() > crate::WAIT {
                bail!(
                    "faros dev wrote no {} within {:?}; its log: {}",
                    hub_url.display(),
                    crate::WAIT,
                    dev.log_tail()
                );
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_millis(250));
        }
    }

    /// The external target this process is: its admin kubeconfig, hub URL and CA, and its token file
    /// for new users (kcp and the hub reload it).
    pub fn target(&self, destructive: bool) -> anyhow::Result<External> {
        let hub_url = std::fs::read_to_string(self.state_dir.join("hub.url")).context("reading hub.url")?;
        Ok(External {
            kubeconfig: self.state_dir.join("admin.kubeconfig"),
            hub_url: hub_url.trim().to_string(),
            ca: self.state_dir.join("ca.crt"),
            users: UserSource::TokenFile(self.state_dir.join("tokens.csv")),
            destructive,
        })
    }

    /// The last lines of its stderr.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.state_dir.with_extension("log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for DevProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `target/<profile>/faros`: the test executable lives in `target/<profile>/deps/`.
fn faros_binary() -> anyhow::Result<PathBuf> {
    if let Some(bin) = std::env::var_os(ENV_FAROS_BIN) {
        return Ok(PathBuf::from(bin));
    }
    let exe = std::env::current_exe().context("locating the test executable")?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .context("the test executable is not in target/<profile>/deps")?;
    let bin = profile_dir.join(format!("faros{}", std::env::consts::EXE_SUFFIX));
    if !bin.is_file() {
        bail!(
            "{} is not built: run `cargo build -p faros` (or `cargo test --workspace`) first, or set {ENV_FAROS_BIN}",
            bin.display()
        );
    }
    Ok(bin)
}
