//! The state directory holds every credential of the installation: the admin token, the
//! ServiceAccount signing key, the CA key and (in `kcp.redb`) every ServiceAccount token Secret. It is
//! the owner's alone: the directory `0700`, everything in it `0600`.
//!
//! [`secure`] creates it so and, at every start, repairs what an older version, a copy or a umask
//! left open, warning once per repaired path so an operator learns their backups may hold copies.

use std::path::{Path, PathBuf};

/// Directory mode: owner only.
pub const DIR_MODE: u32 = 0o700;
/// File mode: owner read/write only.
pub const FILE_MODE: u32 = 0o600;

/// Why the state directory could not be secured.
#[derive(Debug, thiserror::Error)]
#[error("securing the state directory: {path}: {source}")]
pub struct StateDirError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// A path whose mode was too open, and what it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repaired {
    pub path: PathBuf,
    pub was: u32,
    pub now: u32,
}

/// The mode `mode` should have: group and other bits cleared, the owner's kept (a directory the
/// owner cannot enter or a file the owner cannot read would break the server, not protect it).
pub fn tightened(mode: u32, is_dir: bool) -> u32 {
    let owner = mode & 0o700;
    if is_dir {
        owner | DIR_MODE
    } else {
        (owner | FILE_MODE) & !0o111
    }
}

/// Creates `dir` (owner only) if missing and brings it and everything under it to owner-only modes.
/// Returns what it had to repair; logs a warning for each.
pub fn secure(dir: &Path) -> Result<Vec<Repaired>, StateDirError> {
    let err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StateDirError { path, source }
    };
    create(dir).map_err(err(dir))?;
    let mut repaired = Vec::new();
    walk(dir, &mut repaired).map_err(|(path, source)| StateDirError { path, source })?;
    for r in &repaired {
        tracing::warn!(
            path = %r.path.display(),
            was = format!("{:o}", r.was),
            now = format!("{:o}", r.now),
            "state directory entry was readable by others: permissions tightened (copies made meanwhile may hold credentials)"
        );
    }
    Ok(repaired)
}

/// Creates `path` as an empty owner-only file unless it exists (for files another library creates
/// with the umask).
pub fn create_private(path: &Path) -> Result<(), StateDirError> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, FILE_MODE);
    match opts.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(source) => Err(StateDirError {
            path: path.to_path_buf(),
            source,
        }),
    }
}

#[cfg(unix)]
fn create(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir)
}

#[cfg(not(unix))]
fn create(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn walk(path: &Path, repaired: &mut Vec<Repaired>) -> Result<(), (PathBuf, std::io::Error)> {
    use std::os::unix::fs::PermissionsExt;
    let at = |source| (path.to_path_buf(), source);
    // Never follow symlinks: a link to /etc is not ours to chmod.
    let meta = std::fs::symlink_metadata(path).map_err(at)?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    let was = meta.permissions().mode() & 0o777;
    let now = tightened(was, meta.is_dir());
    if now != was {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(now)).map_err(at)?;
        repaired.push(Repaired {
            path: path.to_path_buf(),
            was,
            now,
        });
    }
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).map_err(at)? {
            walk(&entry.map_err(at)?.path(), repaired)?;
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn walk(_: &Path, _: &mut Vec<Repaired>) -> Result<(), (PathBuf, std::io::Error)> {
    Ok(())
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn modes_lose_group_and_other_bits() {
        for (mode, is_dir, want) in [
            (0o755, true, 0o700),
            (0o700, true, 0o700),
            (0o644, false, 0o600),
            (0o600, false, 0o600),
            (0o640, false, 0o600),
            (0o755, false, 0o600),
            (0o400, false, 0o600),
        ] {
            assert_eq!(tightened(mode, is_dir), want, "{mode:o} dir={is_dir}");
        }
    }

    #[test]
    fn repairs_what_is_open_and_leaves_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        assert_eq!(secure(&dir).unwrap(), vec![]);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        let db = dir.join("kcp.redb");
        std::fs::write(&db, b"x").unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
        let sub = dir.join("hub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).unwrap();
        let key = sub.join("signing.key");
        std::fs::write(&key, b"k").unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut got: Vec<(PathBuf, u32)> = secure(&dir).unwrap().into_iter().map(|r| (r.path, r.was)).collect();
        got.sort();
        assert_eq!(
            got,
            vec![(dir.clone(), 0o755), (sub.clone(), 0o755), (db.clone(), 0o644)]
        );
        assert_eq!(
            (mode(&dir), mode(&sub), mode(&db), mode(&key)),
            (0o700, 0o700, 0o600, 0o600)
        );
        assert_eq!(secure(&dir).unwrap(), vec![], "a second start repairs nothing");
    }
}
