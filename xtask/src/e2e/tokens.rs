//! The static tokens of a kind platform: one token file, loaded by kcp (real kcp's chart, or the
//! faros-kcp chart) and the hub from the start, because real kcp reads its token file once. It
//! holds kcp's admin (for the host's admin kubeconfig), a user the readiness gates call the hub as,
//! and a pool of users the scenarios take (`users.csv`, `FAROS_E2E_USERS_FILE`).
//!
//! Tokens are generated on the first run, kept in `target/e2e/kind/tokens.csv` (mode 0600) and
//! reused after, so `--reuse` keeps working against a cluster that already loaded them. Never
//! printed: `--dry-run` renders [`Tokens::placeholder`].

use std::io::Read;
use std::path::Path;

use anyhow::{Context, bail};
use faros_core::token_file::parse_token_file;

/// kcp's admin: group `system:kcp:admin`, as in kcp's own kind setup.
pub(crate) const ADMIN_USER: &str = "e2e-admin";
const ADMIN_GROUP: &str = "system:kcp:admin";
/// The user the readiness gates read the catalog as.
pub(crate) const GATE_USER: &str = "e2e-gate";
/// The hub API's and the hub reconciler's own kcp users (docs/install.md, "kcp identities"), in
/// the kcp target's token file only: it grants them with `faros grant` and runs each component on
/// its own kubeconfig.
pub(crate) const HUB_USER: &str = faros_core::names::HUB_KCP_USER;
pub(crate) const RECONCILER_USER: &str = faros_core::names::RECONCILER_KCP_USER;
/// Scenario users: more than one run of every scenario takes.
const POOL: usize = 16;

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    user: String,
    token: String,
    group: Option<&'static str>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tokens {
    entries: Vec<Entry>,
}

/// Whose tokens a token file holds: the kcp target's also has the components' own users.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Holders {
    Kind,
    Kcp,
}

fn users(holders: Holders) -> Vec<(String, Option<&'static str>)> {
    let mut users = vec![
        (ADMIN_USER.to_string(), Some(ADMIN_GROUP)),
        (GATE_USER.to_string(), None),
    ];
    if holders == Holders::Kcp {
        users.push((HUB_USER.to_string(), Some(faros_core::names::COMPONENTS_GROUP)));
        users.push((RECONCILER_USER.to_string(), Some(faros_core::names::COMPONENTS_GROUP)));
    }
    users.extend((1..=POOL).map(|i| (format!("e2e-user-{i:02}"), None)));
    users
}

impl Tokens {
    fn with(holders: Holders, token: impl Fn(&str) -> anyhow::Result<String>) -> anyhow::Result<Self> {
        let entries = users(holders)
            .into_iter()
            .map(|(user, group)| {
                Ok(Entry {
                    token: token(&user)?,
                    user,
                    group,
                })
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Self { entries })
    }

    /// Stand-ins for printing a plan.
    pub(crate) fn placeholder(holders: Holders) -> Self {
        Self {
            entries: users(holders)
                .into_iter()
                .map(|(user, group)| Entry {
                    token: format!("<token-of-{user}>"),
                    user,
                    group,
                })
                .collect(),
        }
    }

    /// Fresh random tokens.
    pub(crate) fn generate(holders: Holders) -> anyhow::Result<Self> {
        Self::with(holders, |_| random_hex(24))
    }

    /// The kind target's tokens kept in `file` by an earlier run, or fresh ones when there is none.
    pub(crate) fn load_or_generate(file: &Path) -> anyhow::Result<Self> {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Self::generate(Holders::Kind),
            Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
        };
        let parsed = parse_token_file(&text).with_context(|| format!("{}", file.display()))?;
        Self::with(Holders::Kind, |user| match parsed.iter().find(|t| t.user == user) {
            Some(t) => Ok(t.token.clone()),
            None => bail!(
                "{} has no token for {user}: delete the file to generate a new set",
                file.display()
            ),
        })
    }

    /// The shared token file (kcp's format).
    pub(crate) fn token_file(&self) -> String {
        let mut out = String::from("# faros e2e static tokens (kcp token-file format): token,user,uid,\"groups\"\n");
        for e in &self.entries {
            out.push_str(&line(e));
        }
        out
    }

    /// The scenario pool only (for `FAROS_E2E_USERS_FILE`).
    pub(crate) fn users_file(&self) -> String {
        self.entries
            .iter()
            .filter(|e| e.user.starts_with("e2e-user-"))
            .map(line)
            .collect()
    }

    /// Whether any token occurs in `text`.
    #[cfg(test)]
    pub(crate) fn appear_in(&self, text: &str) -> bool {
        self.entries.iter().any(|e| text.contains(&e.token))
    }
}

fn line(e: &Entry) -> String {
    match e.group {
        Some(g) => format!("{},{},{},\"{g}\"\n", e.token, e.user, e.user),
        None => format!("{},{},{}\n", e.token, e.user, e.user),
    }
}

pub(crate) fn random_hex(n: usize) -> anyhow::Result<String> {
    let mut bytes = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading /dev/urandom")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_files_parse_and_round_trip() {
        let tokens = Tokens::generate(Holders::Kind).unwrap();
        let parsed = parse_token_file(&tokens.token_file()).unwrap();
        assert_eq!(parsed.len(), POOL + 2);
        let kcp = parse_token_file(&Tokens::generate(Holders::Kcp).unwrap().token_file()).unwrap();
        assert_eq!(kcp.len(), POOL + 4);
        assert!(kcp.iter().any(|t| t.user == HUB_USER) && kcp.iter().any(|t| t.user == RECONCILER_USER));
        let admin = parsed.iter().find(|t| t.user == ADMIN_USER).unwrap();
        assert_eq!(admin.groups, vec![ADMIN_GROUP.to_string()]);
        assert_eq!(parse_token_file(&tokens.users_file()).unwrap().len(), POOL);

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.csv");
        std::fs::write(&file, tokens.token_file()).unwrap();
        assert_eq!(Tokens::load_or_generate(&file).unwrap(), tokens);
        std::fs::write(&file, "t,someone,someone\n").unwrap();
        let err = Tokens::load_or_generate(&file).unwrap_err().to_string();
        assert!(err.contains("has no token for e2e-admin"), "{err}");
        assert_ne!(Tokens::load_or_generate(&dir.path().join("none")).unwrap(), tokens);
    }
}
