//! kube-apiserver's / kcp's `--token-auth-file` format.
//!
//! One CSV record per line: `token,user,uid[,"group1,group2"]`. Like Go's `encoding/csv` with
//! `TrimLeadingSpace`, a field may be quoted (`""` escapes a quote) and columns past the fourth are
//! ignored. Blank lines and lines starting with `#` are skipped. Where kube-apiserver only warns
//! (empty or duplicate tokens), this parser refuses: a server should fail loudly at start, and a
//! reloading server keeps its previous tokens rather than apply half a file.
//!
//! The one parser of the format: the embedded kcp and the hub API both read the same file, so a user's
//! token works against both. IO-free; callers read the file.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;

/// One line of a token file. `Debug` never prints the token.
#[derive(Clone, PartialEq, Eq)]
pub struct StaticToken {
    pub token: String,
    pub user: String,
    pub uid: String,
    pub groups: Vec<String>,
}

impl fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticToken")
            .field("token", &"<redacted>")
            .field("user", &self.user)
            .field("uid", &self.uid)
            .field("groups", &self.groups)
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenFileError {
    #[error("token file line {line}: {detail}")]
    Csv { line: usize, detail: &'static str },
    #[error("token file line {line}: must have at least 3 columns (token, user name, user uid), found {found}")]
    TooFewColumns { line: usize, found: usize },
    #[error("token file line {line}: the token (column 1) is empty")]
    EmptyToken { line: usize },
    #[error("token file line {line}: the user name (column 2) is empty")]
    EmptyUser { line: usize },
    #[error("token file line {line}: the group list (column 4) contains an empty group name")]
    EmptyGroup { line: usize },
    #[error("token file line {line}: duplicate token, already defined on line {first}")]
    DuplicateToken { line: usize, first: usize },
}

/// Parses a whole token file. Line numbers in errors are 1-based.
pub fn parse_token_file(text: &str) -> Result<Vec<StaticToken>, TokenFileError> {
    let mut tokens = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let content = raw.strip_suffix('\r').unwrap_or(raw);
        let trimmed = content.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fields = split_csv_line(content).map_err(|detail| TokenFileError::Csv { line, detail })?;
        if fields.len() < 3 {
            return Err(TokenFileError::TooFewColumns {
                line,
                found: fields.len(),
            });
        }
        let mut fields = fields.into_iter();
        // The length check above guarantees three items; `unwrap_or_default` only satisfies the lint.
        let token = fields.next().unwrap_or_default();
        let user = fields.next().unwrap_or_default();
        let uid = fields.next().unwrap_or_default();
        let groups = match fields.next() {
            Some(list) if !list.is_empty() => {
                let groups: Vec<String> = list.split(',').map(str::to_string).collect();
                if groups.iter().any(String::is_empty) {
                    return Err(TokenFileError::EmptyGroup { line });
                }
                groups
            }
            _ => Vec::new(),
        };
        if token.is_empty() {
            return Err(TokenFileError::EmptyToken { line });
        }
        if user.is_empty() {
            return Err(TokenFileError::EmptyUser { line });
        }
        if let Some(&first) = seen.get(&token) {
            return Err(TokenFileError::DuplicateToken { line, first });
        }
        seen.insert(token.clone(), line);
        tokens.push(StaticToken {
            token,
            user,
            uid,
            groups,
        });
    }
    Ok(tokens)
}

/// Why a re-read token file was not applied: the servers that reload it keep the previous tokens.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReloadRefused {
    #[error(transparent)]
    Parse(#[from] TokenFileError),
    /// An editor truncates before it writes; an empty file is a write in progress, not "no users".
    #[error("the token file is empty (a write in progress?)")]
    Empty,
}

/// Parses a token file re-read while serving. Stricter than [`parse_token_file`] in one way: an
/// empty file is refused, so a save caught half-way never locks every user out.
pub fn parse_reloaded(text: &str) -> Result<Vec<StaticToken>, ReloadRefused> {
    if text.is_empty() {
        return Err(ReloadRefused::Empty);
    }
    Ok(parse_token_file(text)?)
}

/// Identifies one version of a file: its modification time and length; `None` when unreadable.
/// Servers compare stamps to notice an edited token file without re-reading it every time.
pub type FileStamp = Option<(SystemTime, u64)>;

/// The stamp of the file at `path` now.
pub fn file_stamp(path: &Path) -> FileStamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// How many token-file reloads were applied and refused since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReloadCounts {
    pub applied: u64,
    pub rejected: u64,
}

/// Counts reloads as they happen; [`ReloadCounter::counts`] reads them.
#[derive(Debug, Default)]
pub struct ReloadCounter {
    applied: AtomicU64,
    rejected: AtomicU64,
}

impl ReloadCounter {
    pub fn applied(&self) {
        self.applied.fetch_add(1, Ordering::Relaxed);
    }

    pub fn rejected(&self) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
    }

    pub fn counts(&self) -> ReloadCounts {
        ReloadCounts {
            applied: self.applied.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
        }
    }
}

/// A new random token: 256 bits, URL-safe base64 without padding (43 characters).
pub fn generate_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Splits one CSV record the way Go's `encoding/csv` does with `TrimLeadingSpace` (no multi-line
/// quoted fields: a token file never needs them).
fn split_csv_line(line: &str) -> Result<Vec<String>, &'static str> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err("quoted field is not terminated"),
                    Some('"') => match chars.peek() {
                        Some('"') => {
                            chars.next();
                            field.push('"');
                        }
                        None | Some(',') => break,
                        Some(_) => return Err("extraneous or missing \" in quoted-field"),
                    },
                    Some(c) => field.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                if c == '"' {
                    return Err("bare \" in non-quoted-field");
                }
                field.push(c);
                chars.next();
            }
        }
        fields.push(field);
        match chars.next() {
            Some(',') => continue,
            // Both branches above stop only at a comma or the end of the line.
            _ => return Ok(fields),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn generated_tokens_are_256_bit_url_safe_and_distinct() {
        let a = generate_token();
        assert_eq!(a.len(), 43);
        assert_eq!(URL_SAFE_NO_PAD.decode(&a).unwrap().len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert_ne!(a, generate_token());
    }

    #[test]
    fn a_reloaded_file_must_not_be_empty() {
        assert_eq!(parse_reloaded(""), Err(ReloadRefused::Empty));
        assert_eq!(
            parse_reloaded("t,u"),
            Err(ReloadRefused::Parse(TokenFileError::TooFewColumns {
                line: 1,
                found: 2
            }))
        );
        assert_eq!(parse_reloaded("# nobody\n"), Ok(vec![]));
        assert_eq!(parse_reloaded("t,u,1").unwrap().len(), 1);
    }

    #[test]
    fn stamps_change_with_the_file_and_counters_count() {
        let dir = std::env::temp_dir().join(format!("faros-stamp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens.csv");
        assert_eq!(file_stamp(&path), None);
        std::fs::write(&path, "a,b,c\n").unwrap();
        let first = file_stamp(&path);
        assert!(first.is_some());
        std::fs::write(&path, "a,b,c\nd,e,f\n").unwrap();
        assert_ne!(file_stamp(&path), first, "the length changed");
        std::fs::remove_dir_all(&dir).unwrap();

        let counter = ReloadCounter::default();
        counter.applied();
        counter.applied();
        counter.rejected();
        assert_eq!(
            counter.counts(),
            ReloadCounts {
                applied: 2,
                rejected: 1
            }
        );
    }

    fn tok(token: &str, user: &str, uid: &str, groups: &[&str]) -> StaticToken {
        StaticToken {
            token: token.into(),
            user: user.into(),
            uid: uid.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    #[test]
    fn good_lines() {
        let cases: Vec<(&str, Vec<StaticToken>)> = vec![
            ("t1,alice,uid-1", vec![tok("t1", "alice", "uid-1", &[])]),
            (
                "t1,alice,uid-1,\"g1,g2\"",
                vec![tok("t1", "alice", "uid-1", &["g1", "g2"])],
            ),
            ("t1,alice,uid-1,g1", vec![tok("t1", "alice", "uid-1", &["g1"])]),
            ("t1,alice,,", vec![tok("t1", "alice", "", &[])]),
            ("t1, alice, uid-1, \"g1\"", vec![tok("t1", "alice", "uid-1", &["g1"])]),
            (
                "t1,alice,uid-1,\"g1\",ignored,columns",
                vec![tok("t1", "alice", "uid-1", &["g1"])],
            ),
            ("\"t,1\",\"al\"\"ice\",u", vec![tok("t,1", "al\"ice", "u", &[])]),
            ("t1,alice,uid-1\r\n", vec![tok("t1", "alice", "uid-1", &[])]),
            (
                "# admin tokens\n\n   \nt1,alice,1\n  # indented comment\nt2,bob,2,\"system:masters\"\n",
                vec![tok("t1", "alice", "1", &[]), tok("t2", "bob", "2", &["system:masters"])],
            ),
            ("", vec![]),
        ];
        for (input, want) in cases {
            assert_eq!(parse_token_file(input), Ok(want), "input {input:?}");
        }
    }

    #[test]
    fn bad_lines() {
        let cases = [
            ("t1,alice", TokenFileError::TooFewColumns { line: 1, found: 2 }),
            ("# c\nt1", TokenFileError::TooFewColumns { line: 2, found: 1 }),
            (",alice,1", TokenFileError::EmptyToken { line: 1 }),
            ("t1,,1", TokenFileError::EmptyUser { line: 1 }),
            ("t1,a,1,\"g1,,g2\"", TokenFileError::EmptyGroup { line: 1 }),
            (
                "t1,a,1\nt2,b,2\nt1,c,3",
                TokenFileError::DuplicateToken { line: 3, first: 1 },
            ),
            (
                "t1,\"alice,1",
                TokenFileError::Csv {
                    line: 1,
                    detail: "quoted field is not terminated",
                },
            ),
            (
                "t1,\"alice\"x,1",
                TokenFileError::Csv {
                    line: 1,
                    detail: "extraneous or missing \" in quoted-field",
                },
            ),
            (
                "t1,al\"ice,1",
                TokenFileError::Csv {
                    line: 1,
                    detail: "bare \" in non-quoted-field",
                },
            ),
        ];
        for (input, want) in cases {
            assert_eq!(parse_token_file(input), Err(want), "input {input:?}");
        }
    }

    #[test]
    fn error_messages_name_line_and_problem() {
        let err = parse_token_file("\n\nt1,alice").unwrap_err();
        assert_eq!(
            err.to_string(),
            "token file line 3: must have at least 3 columns (token, user name, user uid), found 2"
        );
        let err = parse_token_file("t1,a,1\nt1,b,2").unwrap_err();
        assert_eq!(
            err.to_string(),
            "token file line 2: duplicate token, already defined on line 1"
        );
    }

    #[test]
    fn debug_hides_the_token() {
        let t = tok("s3cr3t", "alice", "1", &["dev"]);
        assert_eq!(
            format!("{t:?}"),
            "StaticToken { token: \"<redacted>\", user: \"alice\", uid: \"1\", groups: [\"dev\"] }"
        );
    }
}
