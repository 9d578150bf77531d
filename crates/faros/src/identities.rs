//! The faros components' own kcp users on the embedded kcp (docs/install.md#kcp-identities): the
//! hub API's and the hub reconciler's tokens, made once and kept in the state directory, and the
//! token file that lists them, `<state-dir>/component-tokens.csv`.
//!
//! That file is the embedded kcp's alone (`Config::extra_token_files`): the token file people are
//! listed in is also read by the hub, which must not accept the components' own tokens as callers.
//! Like every credential in the state directory it is owner-only, and it is rewritten on every
//! start (before kcp reads it), so it never lists anything but the two components.

use std::path::{Path, PathBuf};

use anyhow::Context;
use faros_core::names::{COMPONENTS_GROUP, HUB_KCP_USER, RECONCILER_KCP_USER};
use faros_core::token_file::parse_token_file;

/// The components' token file, in the state directory.
pub const TOKEN_FILE: &str = "component-tokens.csv";
/// The reconciler's token, in the state directory.
pub const RECONCILER_TOKEN_FILE: &str = "reconciler.token";
/// The hub API's token, in the state directory.
pub const HUB_TOKEN_FILE: &str = "hub.token";

/// Explains the file to whoever opens it.
const HEADER: &str = "# The faros components' own kcp users (kcp token-file format), read by the embedded kcp only.\n\
# Rewritten on every start from reconciler.token and hub.token: edits are lost.\n";

/// The two components' tokens and the file listing them.
#[derive(Clone)]
pub struct Identities {
    pub reconciler: String,
    pub hub: String,
    /// `<state-dir>/component-tokens.csv`.
    pub token_file: PathBuf,
}

impl std::fmt::Debug for Identities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identities")
            .field("token_file", &self.token_file)
            .finish_non_exhaustive()
    }
}

/// The token-file line of a user.
pub fn line(token: &str, user: &str) -> String {
    format!("{token},{user},{user}\n")
}

/// The token-file line of a component's user: in [`COMPONENTS_GROUP`], which the hub refuses as
/// a caller.
fn component_line(token: &str, user: &str) -> String {
    format!("{token},{user},{user},\"{COMPONENTS_GROUP}\"\n")
}

/// The components' token file's text.
fn file_text(reconciler: &str, hub: &str) -> String {
    format!(
        "{HEADER}{}{}",
        component_line(reconciler, RECONCILER_KCP_USER),
        component_line(hub, HUB_KCP_USER)
    )
}

/// Reads the token kept in `path`, or makes one and keeps it there (owner-only).
pub fn load_or_create_token(path: &Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(t) if !t.trim().is_empty() => Ok(t.trim().to_string()),
        Ok(_) | Err(_) => {
            let t = faros_embedded_kcp::generate_token();
            faros_embedded_kcp::server::write_private(path, t.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
            Ok(t)
        }
    }
}

/// Loads or makes both components' tokens and (re)writes `<state-dir>/component-tokens.csv`, owner-only.
/// Call before the embedded kcp starts: it reads the file with its own.
pub fn ensure(state_dir: &Path) -> anyhow::Result<Identities> {
    let reconciler = load_or_create_token(&state_dir.join(RECONCILER_TOKEN_FILE))?;
    let hub = load_or_create_token(&state_dir.join(HUB_TOKEN_FILE))?;
    let token_file = state_dir.join(TOKEN_FILE);
    faros_embedded_kcp::server::write_private(&token_file, file_text(&reconciler, &hub).as_bytes())
        .with_context(|| format!("writing {}", token_file.display()))?;
    Ok(Identities {
        reconciler,
        hub,
        token_file,
    })
}

/// `text` without the lines whose token is one of `tokens`, or None when it has none of them.
/// Comments, blank lines and every other user are kept as they are.
fn without_tokens(text: &str, tokens: &[&str]) -> Option<String> {
    let mut kept = String::with_capacity(text.len());
    let mut removed = false;
    for raw in text.split_inclusive('\n') {
        // One line at a time: a line that does not parse is kept for the server to report.
        let listed = parse_token_file(raw)
            .ok()
            .and_then(|t| t.into_iter().next())
            .is_some_and(|t| tokens.contains(&t.token.as_str()));
        if listed {
            removed = true;
        } else {
            kept.push_str(raw);
        }
    }
    removed.then_some(kept)
}

/// Removes the components' tokens from `shared`, the token file the hub reads too (earlier `faros
/// dev` runs listed them there): kcp refuses a token listed twice, and the hub must not accept them.
/// A missing file has nothing to remove.
pub fn unshare(shared: &Path, ids: &Identities) -> anyhow::Result<()> {
    let text = match std::fs::read_to_string(shared) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", shared.display())),
    };
    if let Some(kept) = without_tokens(&text, &[&ids.reconciler, &ids.hub]) {
        faros_embedded_kcp::server::write_private(shared, kept.as_bytes())
            .with_context(|| format!("writing {}", shared.display()))?;
        tracing::info!(file = %shared.display(), "moved the faros components' own tokens out of the shared token file");
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn without_tokens_drops_only_the_listed_lines() {
        let text = "# header\nalice-token,alice,alice\nhub-t,faros-hub-api,faros-hub-api\n\nrec-t,faros-hub-reconciler,x,\"g1,g2\"\nbob-token,bob,bob";
        for (tokens, want) in [
            (
                &["hub-t", "rec-t"][..],
                Some("# header\nalice-token,alice,alice\n\nbob-token,bob,bob"),
            ),
            (
                &["rec-t"][..],
                Some("# header\nalice-token,alice,alice\nhub-t,faros-hub-api,faros-hub-api\n\nbob-token,bob,bob"),
            ),
            (&["nobody"][..], None),
            // A user named like a component but with another token is someone's own line: kept.
            (&["faros-hub-api"][..], None),
        ] {
            assert_eq!(without_tokens(text, tokens).as_deref(), want, "{tokens:?}");
        }
    }

    #[test]
    fn ensure_keeps_tokens_and_writes_an_owner_only_file() {
        let dir = tempfile::tempdir().unwrap();
        let first = ensure(dir.path()).unwrap();
        let again = ensure(dir.path()).unwrap();
        assert_eq!((&first.reconciler, &first.hub), (&again.reconciler, &again.hub));
        assert_ne!(first.reconciler, first.hub);
        let users: Vec<_> = parse_token_file(&std::fs::read_to_string(&first.token_file).unwrap())
            .unwrap()
            .into_iter()
            .map(|t| (t.token, t.user, t.groups))
            .collect();
        let components = vec![COMPONENTS_GROUP.to_string()];
        assert_eq!(
            users,
            [
                (
                    first.reconciler.clone(),
                    RECONCILER_KCP_USER.to_string(),
                    components.clone()
                ),
                (first.hub.clone(), HUB_KCP_USER.to_string(), components)
            ]
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&first.token_file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn unshare_moves_an_earlier_runs_lines_out() {
        let dir = tempfile::tempdir().unwrap();
        let ids = ensure(dir.path()).unwrap();
        let shared = dir.path().join("tokens.csv");
        unshare(&shared, &ids).unwrap();
        assert!(!shared.exists(), "a missing file stays missing");
        let before = format!(
            "dev-t,dev,dev\n{}{}",
            line(&ids.reconciler, RECONCILER_KCP_USER),
            line(&ids.hub, HUB_KCP_USER)
        );
        std::fs::write(&shared, &before).unwrap();
        unshare(&shared, &ids).unwrap();
        assert_eq!(std::fs::read_to_string(&shared).unwrap(), "dev-t,dev,dev\n");
    }
}
