//! Runs the real `faros dev` binary as a child process for black-box tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct DevProcess {
    pub child: Child,
    pub kubeconfig: PathBuf,
    pub server: String,
    /// The hub API's URL.
    pub hub: String,
}

/// Starts `faros dev` on a free port with `state_dir`, waiting until it reports readiness on stdout.
pub fn start(state_dir: &Path, extra: &[&str]) -> DevProcess {
    let mut child = Command::new(env!("CARGO_BIN_EXE_faros"))
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
        .args(extra)
        .env("FAROS_LOG_LEVEL", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn faros dev");
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut lines = BufReader::new(stdout).lines();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut kubeconfig = None;
    let mut server = None;
    let mut hub = None;
    // Blocking reads are fine here: the child prints these lines right after it starts serving.
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(rest) = line.trim().strip_prefix("admin kubeconfig:") {
            kubeconfig = Some(PathBuf::from(rest.trim()));
        }
        if let Some(rest) = line.trim().strip_prefix("hub API:") {
            hub = Some(rest.trim().to_string());
        }
        if let Some(rest) = line.trim().strip_prefix("embedded kcp:") {
            server = Some(rest.trim().to_string());
        }
        if line.starts_with("Press Ctrl-C") {
            break;
        }
    }
    // Keep draining stdout so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    DevProcess {
        child,
        kubeconfig: kubeconfig.expect("faros dev printed the admin kubeconfig path"),
        server: server.expect("faros dev printed the server URL"),
        hub: hub.expect("faros dev printed the hub URL"),
    }
}

impl DevProcess {
    pub async fn client(&self) -> kube::Client {
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig).unwrap();
        let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap();
        kube::Client::try_from(cfg).unwrap()
    }

    /// SIGKILL: no chance to flush anything.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM and wait for a clean exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        self.child.wait().unwrap()
    }
}

impl Drop for DevProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
