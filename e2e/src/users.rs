//! Scenario users: appended to a static token file the platform reloads, or taken from a pool of
//! tokens the platform already knows. Either way a user is a name and a token
//! ([`faros_test_support::users::User`]); names are unique per run so scenarios can rerun against
//! the same platform.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, bail};
use faros_core::token_file::parse_token_file;
use faros_test_support::users::{User, append_token};

pub(crate) enum Users {
    /// Appends `token,name,name` lines.
    Append(PathBuf),
    /// Hands out the pool's users in file order, each once per process.
    Pool { file: PathBuf, users: Vec<User> },
}

/// Every pool handed out so far in this process, so two platforms on one pool never share a user.
static POOL_TAKEN: Mutex<usize> = Mutex::new(0);

impl Users {
    pub(crate) fn append(file: PathBuf) -> Self {
        Users::Append(file)
    }

    pub(crate) fn pool(file: &Path) -> anyhow::Result<Self> {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading the users file {}", file.display()))?;
        let users = parse_token_file(&text)
            .with_context(|| format!("the users file {}", file.display()))?
            .into_iter()
            .map(|t| User {
                name: t.user,
                token: t.token,
            })
            .collect();
        Ok(Users::Pool {
            file: file.to_path_buf(),
            users,
        })
    }

    /// Whether users are created fresh for this run (so they own nothing yet).
    pub(crate) fn fresh(&self) -> bool {
        matches!(self, Users::Append(_))
    }

    /// A new user named after `base` (appended) or the next pool user.
    pub(crate) fn take(&self, name: &str) -> anyhow::Result<User> {
        match self {
            Users::Append(file) => {
                let user = User::random(name, "e2e");
                append_token(file, &user.static_token())
                    .with_context(|| format!("appending to the token file {}", file.display()))?;
                Ok(user)
            }
            Users::Pool { file, users } => {
                let mut taken = POOL_TAKEN
                    .lock()
                    .map_err(|_| anyhow::anyhow!("user pool lock poisoned"))?;
                let Some(user) = users.get(*taken) else {
                    bail!(
                        "the users file {} has {} users and this run needs more: add lines to it (and to the \
                         platform's token file)",
                        file.display(),
                        users.len()
                    );
                };
                *taken += 1;
                Ok(user.clone())
            }
        }
    }
}
