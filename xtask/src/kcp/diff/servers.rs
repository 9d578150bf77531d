//! Fresh servers for one script: real kcp (one shard, embedded etcd, started with the flags of the
//! `e2e --target kcp` plan, `xtask/src/e2e/kcp.rs`) and the embedded kcp (`faros kcp`), both on
//! free loopback ports, both reading the same static token file, each in its own directory that is
//! removed first. Dropping a [`Process`] kills it.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;

use super::exec::Target;
use super::script::USERS;

const START_TIMEOUT: Duration = Duration::from_secs(180);

/// Where kcp shows that its shard informer lists the root shard: root's `tenancy.kcp.io`
/// APIExportEndpointSlice gets the shard's URL from the same informer (fed by the cache server) the
/// workspace scheduler lists shards from.
pub const SCHEDULING_PROBE: &str = "/clusters/root/apis/apis.kcp.io/v1alpha1/apiexportendpointslices/tenancy.kcp.io";

/// Whether the [`SCHEDULING_PROBE`]'s answer has an endpoint, i.e. kcp can schedule workspaces.
pub fn schedules(code: u16, slice: &Value) -> bool {
    code == 200
        && slice
            .pointer("/status/endpoints")
            .and_then(Value::as_array)
            .is_some_and(|endpoints| !endpoints.is_empty())
}

/// The static users both servers load: `admin` is in `system:masters` (the privileged group of
/// both), `kcp-admin` in `system:kcp:admin` (kcp's global admin group, bound to cluster-admin by
/// its bootstrap policy), `alice`, `bob` and `carol` are plain tenants (a script needs three when
/// one creates a workspace, one is granted in it and one is not).
pub fn tokens() -> anyhow::Result<BTreeMap<String, String>> {
    USERS
        .into_iter()
        .filter(|u| *u != "anonymous")
        .map(|u| Ok((u.to_string(), crate::e2e::tokens::random_hex(24)?)))
        .collect()
}

/// kube-apiserver's token file format.
pub fn token_file(tokens: &BTreeMap<String, String>) -> String {
    tokens
        .iter()
        .map(|(user, token)| match user.as_str() {
            "admin" => format!("{token},{user},{user}-uid,\"system:masters\"\n"),
            "kcp-admin" => format!("{token},{user},{user}-uid,\"system:kcp:admin\"\n"),
            _ => format!("{token},{user},{user}-uid\n"),
        })
        .collect()
}

pub struct Process {
    child: Child,
    pub target: Target,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_ports<const N: usize>() -> anyhow::Result<[u16; N]> {
    // All bound at once, so no two are the same.
    let listeners = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()?;
    let mut ports = [0; N];
    for (port, l) in ports.iter_mut().zip(&listeners) {
        *port = l.local_addr()?.port();
    }
    Ok(ports)
}

fn fresh_dir(dir: &Path, tokens: &BTreeMap<String, String>) -> anyhow::Result<PathBuf> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir)?;
    let file = dir.join("tokens.csv");
    std::fs::write(&file, token_file(tokens))?;
    Ok(file)
}

fn spawn(mut cmd: Command, log: &Path) -> anyhow::Result<Child> {
    let out = std::fs::File::create(log)?;
    cmd.stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .with_context(|| format!("starting {:?}", cmd.get_program()))
}

/// A server's command line, its base URL and the log it writes (in its fresh directory).
pub struct Launch {
    pub command: Command,
    pub base: String,
    pub log: PathBuf,
}

impl Launch {
    /// Starts the command, its output to the log.
    pub fn spawn(self) -> anyhow::Result<Child> {
        spawn(self.command, &self.log)
    }
}

/// How real kcp starts in `dir` (its root directory and log beside it): one shard, embedded etcd.
pub fn real_kcp_launch(binary: &Path, dir: &Path, tokens: &BTreeMap<String, String>) -> anyhow::Result<Launch> {
    let token_file = fresh_dir(dir, tokens)?;
    let [port, etcd_client, etcd_peer] = free_ports()?;
    let mut command = Command::new(binary);
    command
        .arg("start")
        .arg(format!("--root-directory={}", dir.join("root").display()))
        .arg("--bind-address=127.0.0.1")
        .arg(format!("--secure-port={port}"))
        .arg(format!("--external-hostname=127.0.0.1:{port}"))
        .arg(format!("--embedded-etcd-client-port={etcd_client}"))
        .arg(format!("--embedded-etcd-peer-port={etcd_peer}"))
        .arg(format!("--token-auth-file={}", token_file.display()));
    Ok(Launch {
        command,
        base: format!("https://127.0.0.1:{port}"),
        log: dir.join("kcp.log"),
    })
}

/// How the embedded kcp starts as `faros kcp` in `dir`.
pub fn embedded_launch(binary: &Path, dir: &Path, tokens: &BTreeMap<String, String>) -> anyhow::Result<Launch> {
    let token_file = fresh_dir(dir, tokens)?;
    let [port] = free_ports()?;
    let mut command = Command::new(binary);
    command
        .arg("kcp")
        .arg(format!("--listen=127.0.0.1:{port}"))
        .arg(format!("--state-dir={}", dir.join("state").display()))
        .arg(format!("--token-file={}", token_file.display()))
        .arg("--log-level=warn,rustls=error");
    Ok(Launch {
        command,
        base: format!("https://127.0.0.1:{port}"),
        log: dir.join("faros-kcp.log"),
    })
}

fn process(launch: Launch, tokens: &BTreeMap<String, String>) -> anyhow::Result<Process> {
    let target = Target::new(launch.base.clone(), tokens.clone())?;
    let child = launch.spawn()?;
    Ok(Process { child, target })
}

/// Real kcp in `dir` (its root directory and log beside it).
pub fn real_kcp(binary: &Path, dir: &Path, tokens: &BTreeMap<String, String>) -> anyhow::Result<Process> {
    process(real_kcp_launch(binary, dir, tokens)?, tokens)
}

/// The embedded kcp as `faros kcp` in `dir`.
pub fn embedded(binary: &Path, dir: &Path, tokens: &BTreeMap<String, String>) -> anyhow::Result<Process> {
    process(embedded_launch(binary, dir, tokens)?, tokens)
}

impl Process {
    /// Waits until `/readyz` answers 200, or the process exits, or the start timeout passes.
    pub async fn ready(&mut self, log: &Path) -> anyhow::Result<()> {
        let started = Instant::now();
        while !self.target.ready().await {
            if let Some(status) = self.child.try_wait()? {
                bail!("exited with {status} before /readyz answered; see {}", log.display());
            }
            if started.elapsed() > START_TIMEOUT {
                bail!("/readyz not 200 after {START_TIMEOUT:?}; see {}", log.display());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(())
    }

    /// Real kcp, after [`Process::ready`]: waits until it can schedule a workspace. kcp answers
    /// /readyz about a second before its workspace scheduler's shard informer lists the root shard;
    /// a workspace created in that second is marked Unavailable (`WorkspaceScheduled=False`, "No
    /// available shards") and, once scheduled, moved from Unavailable straight to Ready without
    /// passing Initializing (kcp's `updateTerminalConditionPhase`): Ready before its initializers
    /// ran, with no `WorkspaceInitialized` condition. A script's first workspace would otherwise be
    /// compared in whichever of the two states the start left it.
    pub async fn schedulable(&mut self, log: &Path) -> anyhow::Result<()> {
        let started = Instant::now();
        loop {
            if let Some((code, slice)) = self.target.get_json("admin", SCHEDULING_PROBE).await
                && schedules(code, &slice)
            {
                return Ok(());
            }
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "exited with {status} before it could schedule workspaces; see {}",
                    log.display()
                );
            }
            if started.elapsed() > START_TIMEOUT {
                bail!(
                    "{SCHEDULING_PROBE} listed no endpoint after {START_TIMEOUT:?}: kcp cannot schedule workspaces; see {}",
                    log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_file_puts_only_admin_in_system_masters() {
        let tokens = BTreeMap::from([
            ("admin".to_string(), "t1".to_string()),
            ("alice".to_string(), "t2".to_string()),
        ]);
        assert_eq!(
            token_file(&tokens),
            "t1,admin,admin-uid,\"system:masters\"\nt2,alice,alice-uid\n"
        );
    }

    #[test]
    fn kcp_schedules_once_roots_tenancy_slice_has_an_endpoint() {
        use serde_json::json;
        let conditions = json!([{"type": "APIExportValid", "status": "True"}]);
        // As kcp v0.32.3 answers a second after /readyz, and then once its shard informer lists root.
        let before = json!({"kind": "APIExportEndpointSlice", "status": {"conditions": conditions}});
        let after = json!({"kind": "APIExportEndpointSlice", "status": {"conditions": conditions,
            "endpoints": [{"url": "https://127.0.0.1:6443/services/apiexport/root/tenancy.kcp.io"}]}});
        assert!(!schedules(200, &before));
        assert!(!schedules(200, &json!({"status": {"endpoints": []}})));
        assert!(schedules(200, &after));
        assert!(!schedules(403, &after));
    }

    #[test]
    fn every_user_a_script_may_name_has_a_token_but_anonymous() {
        let tokens = tokens().unwrap();
        let named: Vec<&str> = tokens.keys().map(String::as_str).collect();
        assert_eq!(named, ["admin", "alice", "bob", "carol", "kcp-admin"]);
        for user in USERS {
            assert_eq!(tokens.contains_key(user), user != "anonymous", "{user}");
        }
        let file = token_file(&tokens);
        assert_eq!(file.matches("system:masters").count(), 1);
        assert!(file.contains(&format!(
            "{},kcp-admin,kcp-admin-uid,\"system:kcp:admin\"\n",
            tokens["kcp-admin"]
        )));
        assert!(file.contains(&format!("{},carol,carol-uid\n", tokens["carol"])));
    }
}
