//! `faros dev` as a separate process, for running the scenarios through the external target
//! against a platform the tests share nothing with but files and sockets: the shared launcher
//! (`faros_test_support::devproc`) with the binary found here, and the [`External`] target it is.
//!
//! The binary is the one `cargo build -p faros` (or `cargo test --workspace`) put next to the test
//! executable; this module never builds it.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
pub use faros_test_support::devproc::DevProcess;
use faros_test_support::devproc::Launch;

use crate::target::{External, UserSource};

/// Overrides where the `faros` binary is looked for.
pub const ENV_FAROS_BIN: &str = "FAROS_E2E_FAROS_BIN";

/// Starts `faros dev` with every port picked by the OS and state in `state_dir`, and waits until
/// it has announced itself (written `hub.url`: the tenant flow works by then).
pub async fn start(state_dir: &Path) -> anyhow::Result<DevProcess> {
    Ok(Launch::new(faros_binary()?, state_dir).start().await?)
}

/// The external target `dev` is: its admin kubeconfig, hub URL and CA, its token file for new
/// users (kcp and the hub reload it), and its GitOps registrar kubeconfig when it wrote one.
pub fn target(dev: &DevProcess, destructive: bool) -> External {
    External {
        kubeconfig: dev.kubeconfig.clone(),
        hub_url: dev.hub.clone(),
        ca: dev.ca_path(),
        users: UserSource::TokenFile(dev.token_file.clone()),
        destructive,
        registrar_kubeconfig: Some(dev.state_dir.join(faros::dev::registrar::KUBECONFIG_FILE)).filter(|p| p.is_file()),
    }
}

/// `target/<profile>/faros`: the test executable lives in `target/<profile>/deps/`.
fn faros_binary() -> anyhow::Result<PathBuf> {
    workspace_binary("faros", ENV_FAROS_BIN, "faros")
}

/// `target/<profile>/<name>` (or `$env`): a binary of package `package` that `cargo build -p
/// <package>` (or `cargo test --workspace`) built next to the test executable's `deps/`.
pub fn workspace_binary(name: &str, env: &str, package: &str) -> anyhow::Result<PathBuf> {
    if let Some(bin) = std::env::var_os(env) {
        return Ok(PathBuf::from(bin));
    }
    let exe = std::env::current_exe().context("locating the test executable")?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .context("the test executable is not in target/<profile>/deps")?;
    let bin = profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if !bin.is_file() {
        bail!(
            "{} is not built: run `cargo build -p {package}` (or `cargo test --workspace`) first, or set {env}",
            bin.display()
        );
    }
    Ok(bin)
}
