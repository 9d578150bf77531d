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
//!   users of the platform see (deleting the quickstart Provider).

use std::path::PathBuf;

use anyhow::bail;

pub const ENV_TARGET: &str = "FAROS_E2E_TARGET";
pub const ENV_KUBECONFIG: &str = "FAROS_E2E_KUBECONFIG";
pub const ENV_HUB_URL: &str = "FAROS_E2E_HUB_URL";
pub const ENV_CA: &str = "FAROS_E2E_CA";
pub const ENV_TOKEN_FILE: &str = "FAROS_E2E_TOKEN_FILE";
pub const ENV_USERS_FILE: &str = "FAROS_E2E_USERS_FILE";
pub const ENV_DESTRUCTIVE: &str = "FAROS_E2E_DESTRUCTIVE";

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
                }))
            }
            Some(other) => bail!("{ENV_TARGET}={other:?}: use `in-process` or `external`"),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::HashMap;

    use super::*;

    fn parse(pairs: &[(&str, &str)]) -> Result<Target, String> {
        let env: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Target::from_lookup(|k| env.get(k).cloned()).map_err(|e| e.to_string())
    }

    const BASE: [(&str, &str); 4] = [
        (ENV_TARGET, "external"),
        (ENV_KUBECONFIG, "/k"),
        (ENV_HUB_URL, "https://localhost:8444/"),
        (ENV_CA, "/ca.crt"),
    ];

    fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        BASE.iter().copied().chain(extra.iter().copied()).collect()
    }

    #[test]
    fn targets_from_the_environment() {
        let external = |users, destructive| {
            Ok(Target::External(External {
                kubeconfig: "/k".into(),
                hub_url: "https://localhost:8444".into(),
                ca: "/ca.crt".into(),
                users,
                destructive,
            }))
        };
        type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Result<Target, String>);
        let cases: Vec<Case> = vec![
            ("default", vec![], Ok(Target::InProcess)),
            ("explicit", vec![(ENV_TARGET, "in-process")], Ok(Target::InProcess)),
            (
                "token file",
                with(&[(ENV_TOKEN_FILE, "/t.csv")]),
                external(UserSource::TokenFile("/t.csv".into()), false),
            ),
            (
                "pool, destructive",
                with(&[(ENV_USERS_FILE, "/u.csv"), (ENV_DESTRUCTIVE, "1")]),
                external(UserSource::Pool("/u.csv".into()), true),
            ),
            (
                "unknown target",
                vec![(ENV_TARGET, "kind")],
                Err("FAROS_E2E_TARGET=\"kind\": use `in-process` or `external`".into()),
            ),
            (
                "no users",
                with(&[]),
                Err(
                    "FAROS_E2E_TARGET=external needs user tokens: FAROS_E2E_TOKEN_FILE (a static token file \
                     the platform reloads) or FAROS_E2E_USERS_FILE (pre-provisioned static tokens)"
                        .into(),
                ),
            ),
            (
                "both user sources",
                with(&[(ENV_TOKEN_FILE, "/t"), (ENV_USERS_FILE, "/u")]),
                Err("set one of FAROS_E2E_TOKEN_FILE and FAROS_E2E_USERS_FILE, not both".into()),
            ),
            (
                "missing CA",
                vec![
                    (ENV_TARGET, "external"),
                    (ENV_KUBECONFIG, "/k"),
                    (ENV_HUB_URL, "https://h"),
                    (ENV_TOKEN_FILE, "/t"),
                ],
                Err("FAROS_E2E_TARGET=external needs FAROS_E2E_CA".into()),
            ),
            (
                "plain http hub",
                vec![(ENV_TARGET, "external"), (ENV_HUB_URL, "http://h")],
                Err("FAROS_E2E_HUB_URL=\"http://h\" must be an https:// URL (the hub serves TLS only)".into()),
            ),
            (
                "bad destructive",
                with(&[(ENV_TOKEN_FILE, "/t"), (ENV_DESTRUCTIVE, "yes")]),
                Err("FAROS_E2E_DESTRUCTIVE=\"yes\": use 1 or 0".into()),
            ),
        ];
        for (name, env, want) in cases {
            assert_eq!(parse(&env), want, "{name}");
        }
    }
}
