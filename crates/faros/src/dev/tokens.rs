//! The dev user and the shared static token file.
//!
//! `faros dev` authenticates people with one kcp token file (default `<state-dir>/tokens.csv`),
//! read by the embedded kcp and the hub alike and reloaded when edited, so adding a line adds a user
//! everywhere. The dev user's token is generated once, kept in `<state-dir>/dev-user.token`, and
//! (re)added to the token file when missing so the printed token always works. The components' own
//! kcp users are not in it: the hub reads it too ([`crate::identities`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use faros_core::token_file::parse_token_file;

/// The dev user's name.
pub const DEV_USER: &str = "dev";

/// Explains the format to whoever opens the file.
const HEADER: &str = "# Static tokens for faros dev (kcp token-file format), one user per line:\n\
# token,username,uid,\"group1,group2\"\n\
# Edits are picked up while faros dev runs.\n";

/// The dev user's credentials.
#[derive(Clone)]
pub struct DevUser {
    pub name: String,
    pub token: String,
    /// `<state-dir>/dev-user.token`.
    pub token_path: PathBuf,
}

impl std::fmt::Debug for DevUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevUser")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

pub use crate::identities::line;

/// Loads or creates the dev token and makes sure `token_file` lists it. A token file that does not
/// parse is an error naming the file and line; nothing is overwritten.
pub fn ensure_dev_user(state_dir: &Path, token_file: &Path) -> anyhow::Result<DevUser> {
    let token_path = state_dir.join("dev-user.token");
    let token = ensure_user(&token_path, token_file, DEV_USER)?;
    Ok(DevUser {
        name: DEV_USER.to_string(),
        token,
        token_path,
    })
}

/// Loads or creates `user`'s token in `token_path` and (re)adds its line to `token_file` when
/// missing, keeping every other line.
fn ensure_user(token_path: &Path, token_file: &Path, user: &str) -> anyhow::Result<String> {
    let token = crate::identities::load_or_create_token(token_path)?;
    let existing = match std::fs::read_to_string(token_file) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", token_file.display())),
    };
    match existing {
        None => {
            let body = format!("{HEADER}{}", line(&token, user));
            faros_embedded_kcp::server::write_private(token_file, body.as_bytes())
                .with_context(|| format!("writing {}", token_file.display()))?;
        }
        Some(text) => {
            let tokens = parse_token_file(&text).with_context(|| format!("{}", token_file.display()))?;
            if !tokens.iter().any(|t| t.token == token) {
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(token_file)
                    .with_context(|| format!("opening {}", token_file.display()))?;
                let sep = if text.is_empty() || text.ends_with('\n') {
                    ""
                } else {
                    "\n"
                };
                write!(f, "{sep}{}", line(&token, user))
                    .with_context(|| format!("appending to {}", token_file.display()))?;
            }
        }
    }
    Ok(token)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn creates_then_reuses_and_keeps_other_users() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.csv");
        let first = ensure_dev_user(dir.path(), &file).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with('#'));
        assert_eq!(parse_token_file(&text).unwrap().len(), 1);

        // Another user added by hand, without a trailing newline, survives a restart.
        std::fs::write(&file, format!("{text}alice-token,alice,1001")).unwrap();
        let again = ensure_dev_user(dir.path(), &file).unwrap();
        assert_eq!(again.token, first.token);
        let users: Vec<_> = parse_token_file(&std::fs::read_to_string(&file).unwrap())
            .unwrap()
            .into_iter()
            .map(|t| t.user)
            .collect();
        assert_eq!(users, ["dev", "alice"]);

        // The dev line removed by hand comes back, once.
        std::fs::write(&file, "alice-token,alice,1001\n").unwrap();
        ensure_dev_user(dir.path(), &file).unwrap();
        ensure_dev_user(dir.path(), &file).unwrap();
        let users: Vec<_> = parse_token_file(&std::fs::read_to_string(&file).unwrap())
            .unwrap()
            .into_iter()
            .map(|t| t.user)
            .collect();
        assert_eq!(users, ["alice", "dev"]);
    }

    #[test]
    fn a_broken_token_file_is_reported_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.csv");
        std::fs::write(&file, "only-a-token\n").unwrap();
        let err = format!("{:#}", ensure_dev_user(dir.path(), &file).unwrap_err());
        assert!(err.contains("tokens.csv") && err.contains("line 1"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "only-a-token\n");
    }
}
