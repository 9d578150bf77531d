//! The plugin's token cache: one JSON file per issuer, client and scopes in the user's cache
//! directory, readable by the user alone (0600 in a 0700 directory), replaced whole by rename so a
//! concurrent kubectl never reads half a file. [`next_step`] decides, IO-free, whether a cached
//! token is used, renewed with its refresh token, or a new sign-in is needed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;
use sha2::{Digest, Sha256};

/// What is kept between runs.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub issuer: String,
    pub client_id: String,
    pub id_token: String,
    pub refresh_token: Option<String>,
    /// The ID token's `exp`.
    pub expires: Timestamp,
}

// Never print a token, not even in a debug log.
impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("has_refresh_token", &self.refresh_token.is_some())
            .field("expires", &self.expires)
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("no cache directory: set --cache-dir (FAROS_CREDENTIAL_CACHE_DIR), XDG_CACHE_HOME or HOME")]
    NoDirectory,
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CacheError + '_ {
    move |source| CacheError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// `$XDG_CACHE_HOME/faros/oidc`, else `$HOME/.cache/faros/oidc` (`env` reads the environment).
pub fn default_dir(env: impl Fn(&str) -> Option<String>) -> Result<PathBuf, CacheError> {
    let set = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    set("XDG_CACHE_HOME")
        .or_else(|| set("HOME").map(|h| h.join(".cache")))
        .map(|base| base.join("faros").join("oidc"))
        .ok_or(CacheError::NoDirectory)
}

/// The file for one issuer, client and scope list: a digest, so no URL character reaches a path.
pub fn file_name(issuer: &str, client_id: &str, scopes: &[String]) -> String {
    let mut h = Sha256::new();
    for part in [issuer, client_id, &scopes.join(" ")] {
        h.update(part.as_bytes());
        // A separator no part can contain, so ("a", "bc") and ("ab", "c") differ.
        h.update([0u8]);
    }
    let digest = h.finalize();
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}.json")
}

/// The cached entry, or `None` when there is none or it cannot be used (a corrupt file is
/// replaced by the next sign-in).
pub fn read(path: &Path) -> Result<Option<Entry>, CacheError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(path)(e)),
    };
    match serde_json::from_str(&text) {
        Ok(entry) => Ok(Some(entry)),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "ignoring an unreadable token cache file");
            Ok(None)
        }
    }
}

/// Writes `entry` to `path` atomically: a new 0600 file beside it, synced, then renamed over.
pub fn write(path: &Path, entry: &Entry) -> Result<(), CacheError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("cache"),
        std::process::id()
    ));
    let text = serde_json::to_vec(entry).map_err(|e| io(path)(std::io::Error::other(e)))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let result = (|| {
        let mut file = options.open(&tmp)?;
        // A file left by an earlier run keeps its mode through open(); make sure.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        file.write_all(&text)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io(path))
}

/// Forgets the entry (its refresh token was refused).
pub fn remove(path: &Path) -> Result<(), CacheError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(path)(e)),
        _ => Ok(()),
    }
}

fn create_private_dir(dir: &Path) -> Result<(), CacheError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(io(dir))
}

/// What to do with the cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// The cached ID token is good for longer than the margin.
    Use,
    /// Expiring (or expired): renew it with this refresh token.
    Refresh(String),
    /// Nothing usable: sign in.
    SignIn,
}

/// The decision for `entry` at `now`, renewing `margin` before the ID token's expiry (so kubectl
/// never sends a token that expires in flight). An entry of another issuer or client (a digest
/// collision, or a hand-edited file) is never used.
pub fn next_step(entry: Option<&Entry>, issuer: &str, client_id: &str, now: Timestamp, margin: Duration) -> Step {
    let Some(entry) = entry.filter(|e| e.issuer == issuer && e.client_id == client_id) else {
        return Step::SignIn;
    };
    let fresh_until = entry
        .expires
        .checked_sub(jiff::SignedDuration::try_from(margin).unwrap_or(jiff::SignedDuration::MAX))
        .unwrap_or(Timestamp::MIN);
    if now < fresh_until {
        return Step::Use;
    }
    match &entry.refresh_token {
        Some(rt) if !rt.is_empty() => Step::Refresh(rt.clone()),
        _ => Step::SignIn,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn entry(expires: &str, refresh: Option<&str>) -> Entry {
        Entry {
            issuer: "https://idp".into(),
            client_id: "faros".into(),
            id_token: "id".into(),
            refresh_token: refresh.map(String::from),
            expires: expires.parse().unwrap(),
        }
    }

    #[test]
    fn next_steps() {
        let now: Timestamp = "2026-12-02T06:00:00Z".parse().unwrap();
        let margin = Duration::from_secs(10);
        let other_client = Entry {
            client_id: "other".into(),
            ..entry("2026-12-02T07:00:00Z", Some("rt"))
        };
        let cases = [
            (None, Step::SignIn),
            (Some(entry("2026-12-02T07:00:00Z", Some("rt"))), Step::Use),
            (Some(entry("2026-12-02T06:00:11Z", None)), Step::Use),
            // Within the margin: renewed before it expires.
            (
                Some(entry("2026-12-02T06:00:10Z", Some("rt"))),
                Step::Refresh("rt".into()),
            ),
            (
                Some(entry("2026-12-02T05:00:00Z", Some("rt"))),
                Step::Refresh("rt".into()),
            ),
            (Some(entry("2026-12-02T06:00:05Z", None)), Step::SignIn),
            (Some(entry("2026-12-02T05:00:00Z", Some(""))), Step::SignIn),
            (Some(other_client), Step::SignIn),
        ];
        for (e, want) in cases {
            assert_eq!(
                next_step(e.as_ref(), "https://idp", "faros", now, margin),
                want,
                "{e:?}"
            );
        }
    }

    #[test]
    fn file_names_and_directories() {
        let scopes = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let a = file_name("https://idp", "faros", &scopes(&["openid"]));
        assert!(a.ends_with(".json") && a.len() == 37, "{a}");
        assert_eq!(a, file_name("https://idp", "faros", &scopes(&["openid"])));
        assert_ne!(a, file_name("https://idp", "faros", &scopes(&["openid", "groups"])));
        assert_ne!(a, file_name("https://idp", "farosx", &scopes(&["openid"])));
        assert_ne!(
            file_name("https://idp", "ab", &scopes(&["c"])),
            file_name("https://idp", "a", &scopes(&["bc"]))
        );
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        for (vars, want) in [
            (&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")][..], Some("/x/faros/oidc")),
            (
                &[("XDG_CACHE_HOME", ""), ("HOME", "/h")][..],
                Some("/h/.cache/faros/oidc"),
            ),
            (&[][..], None),
        ] {
            let got = default_dir(env(vars)).ok();
            assert_eq!(got, want.map(PathBuf::from), "{vars:?}");
        }
    }

    /// Written whole, 0600 in a 0700 directory, read back; a corrupt file reads as none.
    #[test]
    fn files_are_private_and_replaced_whole() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache/oidc/x.json");
        let e = entry("2026-12-02T07:00:00Z", Some("rt"));
        write(&path, &e).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        assert_eq!(read(&path).unwrap(), Some(e.clone()));
        let newer = entry("2026-12-02T08:00:00Z", None);
        write(&path, &newer).unwrap();
        assert_eq!(read(&path).unwrap(), Some(newer));
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1,
            "no temporary file left"
        );
        std::fs::write(&path, "{").unwrap();
        assert_eq!(read(&path).unwrap(), None);
        remove(&path).unwrap();
        remove(&path).unwrap();
        assert_eq!(read(&path).unwrap(), None);
        let debug = format!("{e:?}");
        assert!(
            !debug.contains("\"rt\"") && !debug.contains("\"id\""),
            "Debug shows no token: {debug}"
        );
    }
}
