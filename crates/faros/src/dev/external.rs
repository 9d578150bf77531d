//! `faros dev --provider <dir>`: an out-of-tree provider beside the hub, run the way the quickstart
//! is: its `provider.yaml` applied, its kubeconfig Secret awaited and written to
//! `<state-dir>/providers/<name>.kubeconfig`, then its own binary run as `init` and `serve` with the
//! environment its chart would set (kubeconfig, schemas, CatalogEntry, hub URL and CA, listen
//! address, `<NAME>_URL`). When the binary changes (`cargo build`), both run again.
//!
//! The binary is the crate's first `bin` target in cargo's target directory (`cargo metadata`,
//! so `CARGO_TARGET_DIR` and `.cargo/config.toml` count), built by the author.
//!
//! Nothing here gives up while `faros dev` runs: a binary not built yet is waited for, and an
//! `init` that fails or a `serve` that exits is run again after a backoff (`backoff`) or at once
//! when a new build appears; each is logged. `faros dev` announces itself without waiting for
//! these providers (an author may start it before the first build).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use anyhow::{Context, bail};
use faros_core::client::ClientFactory;
use faros_core::names;
use faros_core::provider::Provider;
use tokio::process::{Child, Command};
use tokio::sync::watch;

/// How often the binary's modification time is looked at.
const POLL: Duration = Duration::from_millis(500);
/// First pause after a failed `init`, an exited `serve` or a failed registration.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// Longest pause between attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How often a missing binary is mentioned again in the log.
const NOT_BUILT_REMINDER: Duration = Duration::from_secs(60);

/// The pause before the next attempt: [`FIRST_BACKOFF`] after a success (or at first), doubling
/// after each failure up to [`MAX_BACKOFF`].
fn backoff(previous: Option<Duration>) -> Duration {
    previous.map_or(FIRST_BACKOFF, |d| (d * 2).clamp(FIRST_BACKOFF, MAX_BACKOFF))
}

/// One `--provider` directory, resolved.
#[derive(Clone, Debug)]
pub struct External {
    pub dir: PathBuf,
    /// `metadata.name` of its `provider.yaml`.
    pub name: String,
    /// The binary cargo builds for it.
    pub bin: PathBuf,
    /// Where its backend listens (stable across restarts).
    pub addr: SocketAddr,
}

/// Reads `<dir>/provider.yaml` and asks cargo where the crate's binary goes.
pub fn resolve(dir: &Path, addr: SocketAddr) -> anyhow::Result<External> {
    let dir = dir
        .canonicalize()
        .with_context(|| format!("--provider {}: no such directory", dir.display()))?;
    let manifest = dir.join("provider.yaml");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("--provider {}: reading {}", dir.display(), manifest.display()))?;
    let provider: Provider =
        serde_saphyr::from_str(&text).with_context(|| format!("parsing {}", manifest.display()))?;
    let name = provider.metadata.name.unwrap_or_default();
    if name.is_empty() {
        bail!("{}: metadata.name: required", manifest.display());
    }
    let out = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
            "--manifest-path",
        ])
        .arg(dir.join("Cargo.toml"))
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("--provider {}: running cargo metadata", dir.display()))?;
    if !out.status.success() {
        bail!(
            "--provider {}: cargo metadata failed (is it a Rust crate?)",
            dir.display()
        );
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).context("parsing cargo metadata")?;
    let bin = binary(&meta, &dir.join("Cargo.toml"))
        .with_context(|| format!("--provider {}: the crate has no bin target", dir.display()))?;
    Ok(External { dir, name, bin, addr })
}

/// `<target_directory>/debug/<first bin of the package at manifest>`.
fn binary(meta: &serde_json::Value, manifest: &Path) -> Option<PathBuf> {
    let target = meta.get("target_directory")?.as_str()?;
    let package = meta
        .get("packages")?
        .as_array()?
        .iter()
        .find(|p| p.get("manifest_path").and_then(|m| m.as_str()).map(Path::new) == Some(manifest))?;
    let bin = package.get("targets")?.as_array()?.iter().find(|t| {
        t.get("kind")
            .and_then(|k| k.as_array())
            .is_some_and(|k| k.iter().any(|k| k == "bin"))
    })?;
    Some(Path::new(target).join("debug").join(bin.get("name")?.as_str()?))
}

/// What the provider's process needs to know about this `faros dev`.
pub struct Dev {
    pub admin: kube::Config,
    pub state_dir: PathBuf,
    pub hub_url: String,
}

/// Registers and provisions the provider, then keeps `init` + `serve` running on its current binary
/// until `stop`.
pub async fn run(ext: External, dev: Dev, stop: watch::Receiver<bool>) -> anyhow::Result<()> {
    let factory = ClientFactory::new(dev.admin.clone())?;
    let mut stop = stop;
    let mut delay = None;
    let kubeconfig = loop {
        match super::quickstart::provision(&factory, &ext.dir.join("provider.yaml"), &dev.hub_url, &stop).await {
            Ok(Some(k)) => break k,
            Ok(None) => return Ok(()),
            Err(e) => {
                let d = backoff(delay);
                delay = Some(d);
                tracing::error!(provider = %ext.name, error = format!("{e:#}"), retry_in = ?d, "registering the provider failed; retrying");
                if pause(d, &ext.bin, None, &mut stop).await.is_none() {
                    return Ok(());
                }
            }
        }
    };
    let dir = dev.state_dir.join("providers");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let kubeconfig_path = dir.join(format!("{}.kubeconfig", ext.name));
    faros_embedded_kcp::server::write_private(&kubeconfig_path, kubeconfig.as_bytes())
        .with_context(|| format!("writing {}", kubeconfig_path.display()))?;
    let ca = dev
        .state_dir
        .join("ca.crt")
        .canonicalize()
        .context("the CA file faros dev writes")?;
    let env = environment(&ext, &kubeconfig_path, &dev.hub_url, &ca);

    let mut delay = None;
    loop {
        let Some(built) = wait_for_build(&ext.bin, &mut stop).await else {
            return Ok(());
        };
        tracing::info!(provider = %ext.name, bin = %ext.bin.display(), "running init");
        let failed = match spawn(&ext, &env, "init")?.wait().await {
            Ok(status) if status.success() => None,
            Ok(status) => Some(format!("init exited with {status}")),
            Err(e) => Some(format!("init: {e}")),
        };
        if let Some(why) = failed {
            let d = backoff(delay);
            delay = Some(d);
            tracing::error!(provider = %ext.name, retry_in = ?d, "{why}; running it again then, or at the next build");
            if pause(d, &ext.bin, Some(built), &mut stop).await.is_none() {
                return Ok(());
            }
            continue;
        }
        let mut serve = spawn(&ext, &env, "serve")?;
        tracing::info!(provider = %ext.name, addr = %ext.addr, "serving");
        tokio::select! {
            _ = super::stopped(stop.clone()) => {
                let _ = serve.kill().await;
                return Ok(());
            }
            status = serve.wait() => {
                let d = backoff(delay);
                delay = Some(d);
                tracing::error!(provider = %ext.name, status = ?status, retry_in = ?d, "serve exited; running init and serve again then, or at the next build");
                if pause(d, &ext.bin, Some(built), &mut stop).await.is_none() {
                    return Ok(());
                }
            }
            _ = changed(&ext.bin, built) => {
                tracing::info!(provider = %ext.name, "binary changed; restarting");
                let _ = serve.kill().await;
                delay = None;
            }
        }
    }
}

/// Waits `delay`, or less when `bin` is rebuilt (its modification time is no longer `built`);
/// None on stop.
async fn pause(delay: Duration, bin: &Path, built: Option<SystemTime>, stop: &mut watch::Receiver<bool>) -> Option<()> {
    let rebuilt = async {
        match built {
            Some(t) => changed(bin, t).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::time::sleep(delay) => Some(()),
        _ = rebuilt => Some(()),
        _ = stop.wait_for(|s| *s) => None,
    }
}

/// The variables the provider's chart sets, pointed at this `faros dev`.
fn environment(ext: &External, kubeconfig: &Path, hub_url: &str, ca: &Path) -> Vec<(String, String)> {
    let url = format!("http://{}", ext.addr);
    let prefix = ext.name.to_uppercase().replace('-', "_");
    let path = |p: &Path| p.display().to_string();
    vec![
        (names::ENV_PROVIDER_KUBECONFIG.into(), path(kubeconfig)),
        (names::ENV_SCHEMAS_DIR.into(), path(&ext.dir.join("schemas"))),
        (
            names::ENV_CATALOGENTRY_FILE.into(),
            path(&ext.dir.join("manifest.yaml")),
        ),
        (names::ENV_HUB_URL.into(), hub_url.into()),
        (faros_sdk::heartbeat::ENV_HUB_CA_FILE.into(), path(ca)),
        (names::ENV_PROVIDER_NAME.into(), ext.name.clone()),
        (faros_sdk::app::cli::ENV_LISTEN.into(), ext.addr.to_string()),
        (format!("{prefix}_URL"), url),
    ]
}

fn spawn(ext: &External, env: &[(String, String)], cmd: &str) -> anyhow::Result<Child> {
    Command::new(&ext.bin)
        .arg(cmd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        // The author's shell may point KUBECONFIG at the admin: the provider uses its own.
        .env_remove("KUBECONFIG")
        .current_dir(&ext.dir)
        .stdin(Stdio::null())
        // Its log goes where faros dev's does; stdout is faros dev's banner.
        .stdout(std::io::stderr())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {} {cmd}", ext.bin.display()))
}

fn mtime(bin: &Path) -> Option<SystemTime> {
    std::fs::metadata(bin).and_then(|m| m.modified()).ok()
}

/// Waits until `bin` exists and returns its modification time; None on stop. A missing binary is
/// logged at once and every [`NOT_BUILT_REMINDER`].
async fn wait_for_build(bin: &Path, stop: &mut watch::Receiver<bool>) -> Option<SystemTime> {
    let mut logged: Option<tokio::time::Instant> = None;
    loop {
        if *stop.borrow() {
            return None;
        }
        match mtime(bin) {
            Some(t) => return Some(t),
            None if logged.is_none_or(|at| at.elapsed() >= NOT_BUILT_REMINDER) => {
                tracing::warn!(bin = %bin.display(), "provider binary not built yet; waiting for cargo build");
                logged = Some(tokio::time::Instant::now());
            }
            None => {}
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = stop.changed() => {}
        }
    }
}

/// Resolves once `bin`'s modification time is no longer `built` (rebuilt, or removed and rebuilt).
async fn changed(bin: &Path, built: SystemTime) {
    loop {
        tokio::time::sleep(POLL).await;
        // A linker writing the file: wait until it is there again.
        if let Some(t) = mtime(bin)
            && t != built
        {
            return;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn the_binary_is_the_packages_first_bin_in_the_target_directory() {
        let meta = json!({"target_directory": "/t", "packages": [
            {"manifest_path": "/other/Cargo.toml", "targets": [{"kind": ["bin"], "name": "other"}]},
            {"manifest_path": "/p/Cargo.toml", "targets": [
                {"kind": ["lib"], "name": "faros_provider_notes"},
                {"kind": ["bin"], "name": "faros-provider-notes"}]}]});
        assert_eq!(
            binary(&meta, Path::new("/p/Cargo.toml")),
            Some(PathBuf::from("/t/debug/faros-provider-notes"))
        );
        let lib_only = json!({"target_directory": "/t", "packages": [
            {"manifest_path": "/p/Cargo.toml", "targets": [{"kind": ["lib"], "name": "x"}]}]});
        assert_eq!(binary(&lib_only, Path::new("/p/Cargo.toml")), None);
    }

    #[test]
    fn backoff_doubles_from_one_second_to_thirty() {
        let s = Duration::from_secs;
        for (previous, want) in [
            (None, s(1)),
            (Some(s(1)), s(2)),
            (Some(s(8)), s(16)),
            (Some(s(16)), s(30)),
            (Some(s(30)), s(30)),
            (Some(Duration::ZERO), s(1)),
        ] {
            assert_eq!(backoff(previous), want, "after {previous:?}");
        }
    }

    #[test]
    fn the_environment_is_the_charts_pointed_at_faros_dev() {
        let ext = External {
            dir: "/p".into(),
            name: "my-notes".into(),
            bin: "/t/debug/x".into(),
            addr: "127.0.0.1:9000".parse().unwrap(),
        };
        let env = environment(
            &ext,
            Path::new("/s/providers/my-notes.kubeconfig"),
            "https://h",
            Path::new("/s/ca.crt"),
        );
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(
            get("FAROS_PROVIDER_KUBECONFIG"),
            Some("/s/providers/my-notes.kubeconfig")
        );
        assert_eq!(get("FAROS_SCHEMAS_DIR"), Some("/p/schemas"));
        assert_eq!(get("FAROS_CATALOGENTRY_FILE"), Some("/p/manifest.yaml"));
        assert_eq!(get("FAROS_HUB_CA_FILE"), Some("/s/ca.crt"));
        assert_eq!(get("FAROS_LISTEN"), Some("127.0.0.1:9000"));
        assert_eq!(get("MY_NOTES_URL"), Some("http://127.0.0.1:9000"));
    }
}
