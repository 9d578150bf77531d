//! Test users and the static token files kcp and the hub read (`token,user,uid[,"group1,group2"]`,
//! [`faros_core::token_file`]); both reload the file on edit, so appending a line adds a user to a
//! running platform.

use std::io::Write;
use std::path::Path;

use faros_core::token_file::StaticToken;
use rand::RngCore;

/// A user a test acts as: a name and a bearer token.
#[derive(Clone, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub token: String,
}

impl User {
    /// A user named `name` with a fresh random token starting with `prefix` (so a token in a log
    /// says which suite made it).
    pub fn random(name: &str, prefix: &str) -> Self {
        Self {
            name: name.to_string(),
            token: random_token(prefix),
        }
    }

    /// The token-file line of this user: uid = name, no groups.
    pub fn static_token(&self) -> StaticToken {
        StaticToken {
            token: self.token.clone(),
            user: self.name.clone(),
            uid: self.name.clone(),
            groups: Vec::new(),
        }
    }
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

/// `<prefix>-<a token as faros generates them>` ([`faros_core::token_file::generate_token`]).
pub fn random_token(prefix: &str) -> String {
    format!("{prefix}-{}", faros_core::token_file::generate_token())
}

/// A short lowercase id (DNS-label safe) for the names one test run creates, so reruns against the
/// same platform never collide.
pub fn run_id() -> String {
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut n = rand::rng().next_u32();
    let mut id = String::new();
    for _ in 0..5 {
        id.push(char::from(ALPHABET[(n % 36) as usize]));
        n /= 36;
    }
    id
}

/// The token-file entry of a user with a token the test chose (a constant it also sends, a token
/// it revokes by rewriting the file): `token,user,uid` and `groups`.
pub fn static_token(token: &str, user: &str, uid: &str, groups: &[&str]) -> StaticToken {
    StaticToken {
        token: token.into(),
        user: user.into(),
        uid: uid.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
    }
}

/// One token-file line for `t`, quoted so [`faros_core::token_file::parse_token_file`] reads it
/// back as `t`.
pub fn token_line(t: &StaticToken) -> String {
    let field = |s: &str| {
        if s.contains([',', '"']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut line = format!("{},{},{}", field(&t.token), field(&t.user), field(&t.uid));
    if !t.groups.is_empty() {
        line.push_str(&format!(",\"{}\"", t.groups.join(",").replace('"', "\"\"")));
    }
    line
}

/// Writes a token file holding exactly `tokens`.
pub fn write_token_file(path: &Path, tokens: &[StaticToken]) -> std::io::Result<()> {
    let text: String = tokens.iter().map(|t| token_line(t) + "\n").collect();
    std::fs::write(path, text)
}

/// Appends `t` to the token file at `path` (which must exist: it is the platform's).
pub fn append_token(path: &Path, t: &StaticToken) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().append(true).open(path)?;
    writeln!(file, "{}", token_line(t))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
