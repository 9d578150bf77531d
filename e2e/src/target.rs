//! Where the scenarios run, read from `FAROS_E2E_*` environment variables (what `cargo xtask e2e`
//! sets from its flags). Parsing is IO-free so the rules are tested as a table.
//!
//! - unset or `FAROS_E2E_TARGET=in-process`: the whole stack in the test process (the default);
//! - `FAROS_E2E_TARGET=external`: an installed platform, known only by what a real user has: a kcp
//!   admin kubeconfig (`FAROS_E2E_KUBECONFIG`), the hub's URL (`FAROS_E2E_HUB_URL`) and the CA of
//!   its certificate (`FAROS_E2E_CA`), plus one way to get user tokens: a static token file the
//!   platform reloads, which scenarios append users to (`FAROS_E2E_TOKEN_FILE`), or a file of
//!   pre-provisioned static tokens in the same format, which scenarios take users from
//!   (`FAROS_E2E_USERS_FILE`). `FAROS_E2E_DESTRUCTIVE=1` allows the scenarios that change what other
//!   users of the platform see (deleting the quickstart Provider). `FAROS_E2E_REGISTRAR_KUBECONFIG`
//!   (optional) is the platform's GitOps registrar kubeconfig, which the GitOps scenario applies
//!   Providers with; without it, the admin kubeconfig pointed at `root:faros:system:providers`.

use std::path::PathBuf;

use anyhow::bail;

pub const ENV_TARGET: &str = "FAROS_E2E_TARGET";
pub const ENV_KUBECONFIG: &str = "FAROS_E2E_KUBECONFIG";
pub const ENV_HUB_URL: &str = "FAROS_E2E_HUB_URL";
pub const ENV_CA: &str = "FAROS_E2E_CA";
pub const ENV_TOKEN_FILE: &str = "FAROS_E2E_TOKEN_FILE";
pub const ENV_USERS_FILE: &str = "FAROS_E2E_USERS_FILE";
pub const ENV_DESTRUCTIVE: &str = "FAROS_E2E_DESTRUCTIVE";
pub const ENV_REGISTRAR_KUBECONFIG: &str = "FAROS_E2E_REGISTRAR_KUBECONFIG";

/// The platform under test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `faros dev`'s stack started by the test itself.
    InProcess,
    External(External),
}

/// An installed platform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct External {
    /// kcp admin kubeconfig (front-proxy for real kcp).
    pub kubeconfig: PathBuf,
    /// Hub base URL, e.g. `https://localhost:8444`.
    pub hub_url: String,
    /// PEM CA bundle the hub's serving certificate chains to.
    pub ca: PathBuf,
    pub users: UserSource,
    /// May scenarios delete shared things (the quickstart Provider)?
    pub destructive: bool,
    /// The GitOps registrar kubeconfig (Providers in `root:faros:system:providers` only), when
    /// known and reachable from here; `None`: the admin kubeconfig stands in for it.
    pub registrar_kubeconfig: Option<PathBuf>,
}

/// Where scenario users come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserSource {
    /// A static token file read by kcp and the hub and reloaded on edit: users are appended.
    TokenFile(PathBuf),
    /// Static tokens already known to kcp and the hub (kcp's token-file format): users are taken in order.
    Pool(PathBuf),
}

impl Target {
    /// The target described by the process environment.
    pub fn from_env() -> anyhow::Result<Self> {
        Self::from_lookup(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// The target described by `lookup` (an environment).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> anyhow::Result<Self> {
        match lookup(ENV_TARGET).as_deref() {
            None | Some("in-process") => Ok(Target::InProcess),
            Some("external") => {
                let need = |key: &str| lookup(key).ok_or_else(|| anyhow::anyhow!("{ENV_TARGET}=external needs {key}"));
                let hub_url = need(ENV_HUB_URL)?.trim_end_matches('/').to_string();
                if !hub_url.starts_with("https://") {
                    bail!("{ENV_HUB_URL}={hub_url:?} must be an https:// URL (the hub serves TLS only)");
                }
                let users = match (lookup(ENV_TOKEN_FILE), lookup(ENV_USERS_FILE)) {
                    (Some(file), None) => UserSource::TokenFile(file.into()),
                    (None, Some(file)) => UserSource::Pool(file.into()),
                    (Some(_), Some(_)) => bail!("set one of {ENV_TOKEN_FILE} and {ENV_USERS_FILE}, not both"),
                    (None, None) => bail!(
                        "{ENV_TARGET}=external needs user tokens: {ENV_TOKEN_FILE} (a static token file the \
                         platform reloads) or {ENV_USERS_FILE} (pre-provisioned static tokens)"
                    ),
                };
                let destructive = match lookup(ENV_DESTRUCTIVE).as_deref() {
                    None | Some("0") | Some("false") => false,
                    Some("1") | Some("true") => true,
                    Some(other) => bail!("{ENV_DESTRUCTIVE}={other:?}: use 1 or 0"),
                };
                Ok(Target::External(External {
                    kubeconfig: need(ENV_KUBECONFIG)?.into(),
                    hub_url,
                    ca: need(ENV_CA)?.into(),
                    users,
                    destructive,
                    registrar_kubeconfig: lookup(ENV_REGISTRAR_KUBECONFIG).map(PathBuf::from),
                }))
            }
            Some(other) => bail!("{ENV_TARGET}={other:?}: use `in-process` or `external`"),
        }
    }
}

#[cfg(test)]
mod tests;
