//! Scenario users: appended to a static token file the platform reloads, or taken from a pool of
//! tokens the platform already knows. Either way a user is a name and a token; names are unique per
//! run so scenarios can rerun against the same platform.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, bail};
use faros_core::token_file::parse_token_file;

/// A user a scenario acts as.
#[derive(Clone)]
pub struct User {
    pub name: String,
    pub token: String,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print tokens.
        f.debug_struct("User").field("name", &self.name).finish_non_exhaustive()
    }
}

impl std::ops::Deref for User {
    type Target = str;
    /// A user stands for its token where a call needs one.
    fn deref(&self) -> &str {
        &self.token
    }
}

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
                let token = format!("e2e-{}", random_hex(16)?);
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(file)
                    .with_context(|| format!("opening the token file {}", file.display()))?;
                writeln!(f, "{token},{name},{name}").with_context(|| format!("appending to {}", file.display()))?;
                Ok(User {
                    name: name.to_string(),
                    token,
                })
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

/// `n` random bytes from the OS, hex-encoded.
pub(crate) fn random_hex(n: usize) -> anyhow::Result<String> {
    let mut bytes = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("reading /dev/urandom")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A short lowercase id (DNS-label safe) for this run's names.
pub(crate) fn run_id() -> anyhow::Result<String> {
    let hex = random_hex(4)?;
    let n = u32::from_str_radix(&hex, 16).context("run id")?;
    let alphabet = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut n = n;
    let mut id = String::new();
    for _ in 0..5 {
        id.push(char::from(alphabet[(n % 36) as usize]));
        n /= 36;
    }
    Ok(id)
}
