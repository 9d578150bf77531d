//! Runs a [`Plan`]: each step logged with its duration; when one fails, the plan's log collection
//! runs, then the teardown either way. This is the only part of the e2e task that touches the
//! machine.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64::Engine as _;
use serde_json::Value;

use super::plan::{Action, Cmd, Gate, Plan, SecretRef, Step};
use super::platform::{http, token_of};

/// The processes a plan started in the background ([`Action::Spawn`]).
#[derive(Default)]
struct Processes(Vec<(String, Child)>);

impl Processes {
    /// Leaves every process running (`--keep`), saying how to stop each.
    fn leave_running(&mut self) {
        for (name, child) in self.0.drain(..) {
            eprintln!(
                "    left running: {name} (pid {}; `kill {}` stops it)",
                child.id(),
                child.id()
            );
        }
    }
}

impl Processes {
    /// The first that has exited, as `name (status)`.
    fn exited(&mut self) -> Option<String> {
        self.0.iter_mut().find_map(|(name, child)| match child.try_wait() {
            Ok(Some(status)) => Some(format!("{name} ({status})")),
            _ => None,
        })
    }
}

impl Drop for Processes {
    /// Stopped in reverse start order, each with SIGTERM and a few seconds to exit, then SIGKILL:
    /// kcp closes its embedded etcd cleanly.
    fn drop(&mut self) {
        for (name, child) in self.0.iter_mut().rev() {
            if let Ok(None) = child.try_wait() {
                eprintln!("    stopping {name}");
                // std has no SIGTERM; kill(1) is on every machine that runs this.
                let _ = Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
                let deadline = Instant::now() + Duration::from_secs(10);
                while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(100));
                }
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// How often a gate is checked while the e2e runs (whole seconds suit its minutes-long steps).
const GATE_POLL: Duration = Duration::from_secs(1);

/// Processes some steps started ([`start`]), left running until this is dropped; then they are
/// stopped as at the end of [`run`].
#[derive(Default)]
pub(crate) struct Running(Processes);

impl Running {
    /// The id of process `name` (an [`Action::Spawn`]'s name).
    pub(crate) fn pid(&self, name: &str) -> Option<u32> {
        self.0.0.iter().find(|(n, _)| n == name).map(|(_, c)| c.id())
    }

    /// Process `name`, handed to the caller (who stops it).
    pub(crate) fn take(&mut self, name: &str) -> Option<Child> {
        let i = self.0.0.iter().position(|(n, _)| n == name)?;
        Some(self.0.0.remove(i).1)
    }
}

/// Runs `steps` from `root` as [`run`] does, checking gates every `poll`, and leaves the processes
/// they start in `running` (also when a step fails, so that dropping it stops them). No log
/// collection, no teardown: for a caller that measures a platform a plan starts.
pub(crate) fn start(steps: &[Step], root: &Path, poll: Duration, running: &mut Running) -> anyhow::Result<()> {
    let total = steps.len();
    for (i, step) in steps.iter().enumerate() {
        run_step(step, root, &format!("{}/{total}", i + 1), &mut running.0, poll)
            .map_err(|e| e.context(format!("step {}/{total} `{}` failed", i + 1, step.name)))?;
    }
    Ok(())
}

/// Runs every step from `root`; on failure collects logs, then tears down, and returns the failure.
pub(crate) fn run(plan: &Plan, root: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    let total = plan.steps.len();
    let mut result = Ok(());
    let procs = &mut Processes::default();
    for (i, step) in plan.steps.iter().enumerate() {
        if let Err(e) = run_step(step, root, &format!("{}/{total}", i + 1), procs, GATE_POLL) {
            result = Err(e.context(format!("step {}/{total} `{}` failed", i + 1, step.name)));
            break;
        }
    }
    if result.is_err() {
        for step in &plan.on_failure {
            // Collection is best effort: a half-created cluster still yields what it can.
            if let Err(e) = run_step(step, root, "on failure", procs, GATE_POLL) {
                eprintln!("    (log collection incomplete: {e:#})");
            }
        }
    }
    for step in &plan.teardown {
        if let Err(e) = run_step(step, root, "teardown", procs, GATE_POLL) {
            eprintln!("    teardown failed: {e:#}");
        }
    }
    if plan.keep_processes {
        procs.leave_running();
    }
    drop(std::mem::take(procs));
    eprintln!("==> total {:.1?}", started.elapsed());
    result
}

fn run_step(step: &Step, root: &Path, position: &str, procs: &mut Processes, poll: Duration) -> anyhow::Result<()> {
    eprintln!("==> [{position}] {}", step.name);
    let started = Instant::now();
    let result = step.actions.iter().try_for_each(|a| run_action(a, root, procs, poll));
    let outcome = if result.is_ok() { "done" } else { "FAILED" };
    eprintln!("<== [{position}] {} {outcome} in {:.1?}", step.name, started.elapsed());
    result
}

fn command(cmd: &Cmd, root: &Path) -> Command {
    let mut c = Command::new(&cmd.program);
    c.args(&cmd.args).current_dir(root).stdin(Stdio::null());
    for (k, v) in &cmd.env {
        c.env(k, v);
    }
    c
}

/// Runs `cmd` with its output on the terminal.
fn run_cmd(cmd: &Cmd, root: &Path) -> anyhow::Result<()> {
    eprintln!("    $ {cmd}");
    let status = command(cmd, root)
        .status()
        .with_context(|| format!("starting `{}`", cmd.program))?;
    if !status.success() {
        bail!("`{cmd}` failed ({status})");
    }
    Ok(())
}

/// Runs `cmd` and returns its standard output.
fn read_cmd(cmd: &Cmd, root: &Path) -> anyhow::Result<Vec<u8>> {
    let out = command(cmd, root)
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("starting `{}`", cmd.program))?;
    if !out.status.success() {
        bail!(
            "`{cmd}` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

fn write_file(path: &Path, contents: &[u8], private: bool) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    if private {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(contents)
        .with_context(|| format!("writing {}", path.display()))
}

fn run_action(action: &Action, root: &Path, procs: &mut Processes, poll: Duration) -> anyhow::Result<()> {
    let at = |p: &Path| root.join(p);
    match action {
        Action::Run(cmd) => run_cmd(cmd, root),
        Action::RunUnlessListed { cmd, list, item } => {
            let listed = read_cmd(list, root)?;
            if String::from_utf8_lossy(&listed).lines().any(|l| l.trim() == item) {
                eprintln!("    {item} exists: reusing it");
                Ok(())
            } else {
                run_cmd(cmd, root)
            }
        }
        Action::Write {
            path,
            contents,
            private,
        } => {
            eprintln!("    write {}", path.display());
            write_file(&at(path), contents.as_bytes(), *private)
        }
        Action::ExtractSecret {
            kubeconfig,
            namespace,
            name,
            key,
            to,
        } => {
            eprintln!("    extract {namespace}/{name} key {key} into {}", to.display());
            let jsonpath = format!("jsonpath={{.data.{}}}", key.replace('.', "\\."));
            let cmd = Cmd::new("kubectl", &["--kubeconfig"])
                .arg(kubeconfig.display().to_string())
                .args(["-n", namespace, "get", "secret", name, "-o", &jsonpath]);
            let encoded = read_cmd(&cmd, root)?;
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(String::from_utf8_lossy(&encoded).trim())
                .with_context(|| format!("Secret {namespace}/{name} key {key} is not base64"))?;
            if decoded.is_empty() {
                bail!("Secret {namespace}/{name} has no key {key}");
            }
            write_file(&at(to), &decoded, true)
        }
        Action::Kubeconfig {
            ca,
            server,
            tls_server_name,
            user,
            tokens,
            secret,
            to,
        } => {
            eprintln!("    write {} (kubeconfig for {server} as {user})", to.display());
            let ca = std::fs::read(at(ca)).with_context(|| format!("reading {}", ca.display()))?;
            let token = token_of(&at(tokens), user)?;
            let text = kubeconfig(&ca, server, tls_server_name.as_deref(), user, &token);
            let contents = match secret {
                Some(s) => secret_manifest(s, &text),
                None => text,
            };
            write_file(&at(to), contents.as_bytes(), true)
        }
        Action::Reroute {
            from,
            server,
            tls_server_name,
            to,
        } => {
            eprintln!(
                "    write {} (server {server}, tls-server-name {tls_server_name})",
                to.display()
            );
            let text = std::fs::read_to_string(at(from)).with_context(|| format!("reading {}", from.display()))?;
            let mut kc: Value = serde_saphyr::from_str(&text).with_context(|| format!("parsing {}", from.display()))?;
            reroute(&mut kc, server, tls_server_name);
            write_file(&at(to), &serde_json::to_vec_pretty(&kc)?, true)
        }
        Action::Wait { gate, timeout_secs } => wait(gate, Duration::from_secs(*timeout_secs), root, procs, poll),
        Action::Spawn { name, cmd, log } => {
            eprintln!("    $ {cmd} > {} 2>&1 &", log.display());
            let log_path = at(log);
            write_file(&log_path, b"", false)?;
            let out = std::fs::OpenOptions::new()
                .append(true)
                .open(&log_path)
                .with_context(|| format!("opening {}", log_path.display()))?;
            let child = command(cmd, root)
                .stdout(out.try_clone()?)
                .stderr(out)
                .spawn()
                .with_context(|| format!("starting {name} (`{}`)", cmd.program))?;
            procs.0.push((name.clone(), child));
            Ok(())
        }
        Action::ShardSpread(spread) => super::spread::run(spread, root),
        Action::Capture { cmd, to } => {
            eprintln!("    $ {cmd} > {}", to.display());
            match read_cmd(cmd, root) {
                Ok(out) => write_file(&at(to), &out, false),
                Err(e) => {
                    eprintln!("    ({e:#})");
                    Ok(())
                }
            }
        }
    }
}

/// A token kubeconfig; JSON, which kubectl and kube-rs read as YAML.
fn kubeconfig(ca: &[u8], server: &str, tls_server_name: Option<&str>, user: &str, token: &str) -> String {
    let mut cluster = serde_json::json!({
        "server": server,
        "certificate-authority-data": base64::engine::general_purpose::STANDARD.encode(ca),
    });
    if let Some(name) = tls_server_name {
        cluster["tls-server-name"] = Value::String(name.into());
    }
    let kc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kcp", "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "kcp", "context": {"cluster": "kcp", "user": user}}],
        "current-context": "kcp",
    });
    serde_json::to_string_pretty(&kc).unwrap_or_default()
}

fn secret_manifest(s: &SecretRef, contents: &str) -> String {
    let manifest = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": s.name, "namespace": s.namespace},
        "type": "Opaque",
        "stringData": {s.key.clone(): contents},
    });
    serde_json::to_string_pretty(&manifest).unwrap_or_default()
}

/// Every cluster's server becomes `server` plus the old URL's path; `tls-server-name` is set.
fn reroute(kc: &mut Value, server: &str, tls_server_name: &str) {
    for cluster in kc["clusters"].as_array_mut().into_iter().flatten() {
        let old = cluster["cluster"]["server"].as_str().unwrap_or_default();
        let path = old
            .split_once("://")
            .and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].to_string()))
            .unwrap_or_default();
        cluster["cluster"]["server"] = Value::String(format!("{}{path}", server.trim_end_matches('/')));
        cluster["cluster"]["tls-server-name"] = Value::String(tls_server_name.into());
    }
}

fn wait(gate: &Gate, timeout: Duration, root: &Path, procs: &mut Processes, poll: Duration) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let started = Instant::now();
    let mut last = String::new();
    loop {
        let check: anyhow::Result<bool> = match gate {
            Gate::Command(cmd) => Ok(command(cmd, root)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())),
            Gate::Readyz { url, ca } => runtime.block_on(async {
                let r = http(&at_root(root, ca))?.get(format!("{url}/readyz")).send().await?;
                Ok(r.status().as_u16() == 200)
            }),
            Gate::ProviderReady {
                hub,
                ca,
                user,
                tokens,
                provider,
            } => runtime.block_on(async {
                let token = token_of(&at_root(root, tokens), user)?;
                let r = http(&at_root(root, ca))?
                    .get(format!("{hub}/api/providers"))
                    .bearer_auth(token)
                    .send()
                    .await?;
                let body: Value = r.json().await?;
                Ok(body["items"]
                    .as_array()
                    .is_some_and(|i| i.iter().any(|p| p["name"] == provider.as_str() && p["ready"] == true)))
            }),
        };
        match check {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) => last = format!("; last error: {e:#}"),
        }
        if let Some(exited) = procs.exited() {
            bail!("{exited} exited while waiting for {gate:?}{last}");
        }
        if started.elapsed() > timeout {
            bail!("timed out after {timeout:?} waiting for {gate:?}{last}");
        }
        std::thread::sleep(poll);
    }
}

fn at_root(root: &Path, p: &Path) -> std::path::PathBuf {
    root.join(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reroute_keeps_the_path_and_sets_the_server_name() {
        let mut kc = serde_json::json!({"clusters": [{"name": "a", "cluster": {
            "server": "https://faros-faros-kcp.faros.svc:6443/clusters/root", "certificate-authority-data": "x"}}]});
        reroute(&mut kc, "https://127.0.0.1:16443/", "faros-faros-kcp.faros.svc");
        assert_eq!(
            kc["clusters"][0]["cluster"]["server"],
            "https://127.0.0.1:16443/clusters/root"
        );
        assert_eq!(
            kc["clusters"][0]["cluster"]["tls-server-name"],
            "faros-faros-kcp.faros.svc"
        );
        assert_eq!(kc["clusters"][0]["cluster"]["certificate-authority-data"], "x");
    }

    /// The kubeconfig the plan writes is one kube-rs loads, with the server name for TLS.
    #[tokio::test]
    async fn rendered_kubeconfigs_load() {
        let text = kubeconfig(
            b"-----BEGIN CERTIFICATE-----\n",
            "https://127.0.0.1:1/clusters/root",
            Some("n.svc"),
            "u",
            "t",
        );
        let kc = kube::config::Kubeconfig::from_yaml(&text).unwrap();
        assert_eq!(
            kc.clusters[0].cluster.as_ref().unwrap().tls_server_name.as_deref(),
            Some("n.svc")
        );
        let secret = secret_manifest(
            &SecretRef {
                namespace: "faros".into(),
                name: "kcp-admin-kubeconfig".into(),
                key: "admin.kubeconfig".into(),
            },
            &text,
        );
        let v: Value = serde_json::from_str(&secret).unwrap();
        assert_eq!(v["stringData"]["admin.kubeconfig"], text);
    }
}
