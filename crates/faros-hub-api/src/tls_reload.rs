//! A serving certificate that follows its PEM files: cert-manager renews into the mounted Secret,
//! the kubelet swaps the files, and new connections get the new pair without a restart.
//!
//! The files are looked at during a handshake, at most once per check interval, so an idle hub
//! does no work and a busy one at most a `stat` of two files every few seconds. A new pair that
//! does not load (half written, a key that does not match the certificate) is not served: the
//! previous pair stays, a warning says why, and the same broken version is not retried until
//! the files change again.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// How often a handshake may look at the files. cert-manager renews weeks ahead and the kubelet
/// takes up to a minute to update a mounted Secret, so a few seconds more go unnoticed.
pub const CHECK_INTERVAL: Duration = Duration::from_secs(5);

/// Errors loading a certificate and key.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// One version of a file: modification time, length and inode. The kubelet replaces a Secret's
/// files by swapping a symlink to a new directory, so the inode changes even when a renewal
/// happens to keep the length and lands in the same timestamp granule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
}

impl Stamp {
    /// The stamp of `path` now (following symlinks); `None` when it cannot be read.
    pub fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Self {
            modified: meta.modified().ok(),
            len: meta.len(),
            inode: meta.ino(),
        })
    }
}

/// The stamps of the certificate and the key file.
pub type Stamps = (Option<Stamp>, Option<Stamp>);

/// What a check decides, given the stamps of the pair being served, of the last pair that failed
/// to load, and of the files now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Nothing new: keep serving.
    Keep,
    /// The files changed: load them.
    Reload,
}

/// Decides whether the files need loading. A missing file is a replacement in progress (or a
/// Secret key removed by mistake), never a reason to stop serving; a version that already failed
/// is not retried (nor warned about) again until it changes.
pub fn decide(serving: Stamps, failed: Option<Stamps>, now: Stamps) -> Decision {
    if now.0.is_none() || now.1.is_none() || now == serving || Some(now) == failed {
        Decision::Keep
    } else {
        Decision::Reload
    }
}

fn provider() -> Arc<CryptoProvider> {
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
}

/// Loads a certificate chain and its private key from PEM files, checking that they belong together.
pub fn load_pair(cert: &Path, key: &Path) -> Result<CertifiedKey, TlsError> {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|source| TlsError::Read {
            path: p.display().to_string(),
            source,
        })
    };
    let invalid = |p: &Path, message: String| TlsError::Invalid {
        path: p.display().to_string(),
        message,
    };
    let cert_pem = read(cert)?;
    let key_pem = read(key)?;
    let certs: Vec<_> = rustls_pemfile::certs(&mut cert_pem.as_slice())
        .collect::<Result<_, _>>()
        .map_err(|e| invalid(cert, e.to_string()))?;
    if certs.is_empty() {
        return Err(invalid(cert, "no certificate found".into()));
    }
    let key_der = rustls_pemfile::private_key(&mut key_pem.as_slice())
        .map_err(|e| invalid(key, e.to_string()))?
        .ok_or_else(|| invalid(key, "no private key found".into()))?;
    CertifiedKey::from_der(certs, key_der, &provider())
        .map_err(|e| invalid(key, format!("does not fit the certificate in {}: {e}", cert.display())))
}

struct State {
    current: Arc<CertifiedKey>,
    serving: Stamps,
    failed: Option<Stamps>,
    checked: Instant,
}

/// Resolves every handshake to the pair last loaded from `cert` and `key`, re-reading them when
/// they change (see the module documentation).
pub struct ReloadingCert {
    cert: PathBuf,
    key: PathBuf,
    interval: Duration,
    state: Mutex<State>,
}

impl std::fmt::Debug for ReloadingCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReloadingCert")
            .field("cert", &self.cert)
            .field("key", &self.key)
            .field("interval", &self.interval)
            .finish()
    }
}

impl ReloadingCert {
    /// Loads the pair now (an error if it does not load: a hub must not start without one) and
    /// looks for changes at most every `interval`.
    pub fn new(cert: &Path, key: &Path, interval: Duration) -> Result<Self, TlsError> {
        // Stamps first: a replacement landing between stamp and read is then seen as a change.
        let serving = (Stamp::of(cert), Stamp::of(key));
        let current = Arc::new(load_pair(cert, key)?);
        Ok(Self {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            interval,
            state: Mutex::new(State {
                current,
                serving,
                failed: None,
                checked: Instant::now(),
            }),
        })
    }

    /// The pair to serve now, reloaded first if the files changed and the interval has passed.
    pub fn current(&self) -> Arc<CertifiedKey> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.checked.elapsed() < self.interval {
            return state.current.clone();
        }
        state.checked = Instant::now();
        let now = (Stamp::of(&self.cert), Stamp::of(&self.key));
        if decide(state.serving, state.failed, now) == Decision::Reload {
            match load_pair(&self.cert, &self.key) {
                Ok(pair) => {
                    tracing::info!(cert = %self.cert.display(), "serving certificate reloaded");
                    state.current = Arc::new(pair);
                    state.serving = now;
                    state.failed = None;
                }
                Err(error) => {
                    tracing::warn!(%error, "the changed serving certificate does not load; still serving the previous one");
                    state.failed = Some(now);
                }
            }
        }
        state.current.clone()
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(len: u64, inode: u64) -> Option<Stamp> {
        Some(Stamp {
            modified: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(len)),
            len,
            inode,
        })
    }

    #[test]
    fn decisions() {
        let a = (stamp(1, 1), stamp(2, 2));
        let b = (stamp(1, 3), stamp(2, 2));
        let c = (stamp(1, 3), stamp(2, 4));
        let cases = [
            ("unchanged", a, None, a, Decision::Keep),
            ("certificate replaced", a, None, b, Decision::Reload),
            ("both replaced", a, None, c, Decision::Reload),
            ("certificate gone", a, None, (None, stamp(2, 2)), Decision::Keep),
            ("key gone", a, None, (stamp(1, 1), None), Decision::Keep),
            ("the version that failed", a, Some(b), b, Decision::Keep),
            ("a fix after a failure", a, Some(b), c, Decision::Reload),
            (
                "back to the served files after a failure",
                a,
                Some(b),
                a,
                Decision::Keep,
            ),
            (
                "unreadable at start, readable now",
                (None, None),
                None,
                a,
                Decision::Reload,
            ),
        ];
        for (name, serving, failed, now, want) in cases {
            assert_eq!(decide(serving, failed, now), want, "{name}");
        }
    }
}
