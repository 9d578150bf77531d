//! One `faros dev` per state directory: an exclusive advisory lock on `<state-dir>/dev.lock`, taken
//! before anything in the directory is touched and held for the life of the stack.
//!
//! The embedded kcp's store refuses a second opener too, but only after a second run has already
//! removed the first one's `hub.url` and `kcp.url` and rewritten its token files. The lock is the
//! first thing a run does, so a second run changes nothing and says who holds the directory.

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The lock file's name in the state directory.
pub const LOCK_FILE: &str = "dev.lock";

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "another faros dev is running on the state directory {dir} (it holds {dir}/{LOCK_FILE}): stop it, or \
         start this one with another --state-dir"
    )]
    Busy { dir: PathBuf },
    #[error("locking {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Held while the stack runs; the lock goes with the file when this is dropped (or the process ends,
/// however it ends: the kernel releases it, so a crash leaves no stale lock behind).
#[derive(Debug)]
pub struct StateLock {
    _file: File,
}

impl StateLock {
    /// Takes the lock on `dir` (which must exist), or says who holds it.
    pub fn acquire(dir: &Path) -> Result<Self, LockError> {
        let path = dir.join(LOCK_FILE);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            // Owner-only like everything in the state directory (its check would warn otherwise).
            .mode(faros_embedded_kcp::state_dir::FILE_MODE)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => Ok(Self { _file: file }),
            Err(TryLockError::WouldBlock) => Err(LockError::Busy { dir: dir.to_path_buf() }),
            Err(TryLockError::Error(e)) => Err(io(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = StateLock::acquire(dir.path()).unwrap();
        let second = StateLock::acquire(dir.path()).unwrap_err();
        assert!(matches!(second, LockError::Busy { .. }), "{second}");
        assert!(second.to_string().contains("another faros dev is running"), "{second}");
        drop(first);
        StateLock::acquire(dir.path()).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(dir.path().join(LOCK_FILE)).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
    }
}
