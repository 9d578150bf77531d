//! The hub's identity-assertion signing key, persisted and rotatable.
//!
//! The backend proxy signs a short-lived assertion per request ([`faros_core::identity`]); providers
//! verify it against the JWKS the hub serves at [`faros_core::identity::JWKS_PATH`]. The key file
//! survives restarts (so providers' cached JWKS stay valid), and is shared by replicas when mounted
//! from one Secret. Rotation publishes the new key and keeps the previous public keys in the JWKS,
//! so assertions signed just before a rotation still verify until they expire.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use aws_lc_rs::signature::Ed25519KeyPair;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use faros_core::identity::{self, Claims, Identity, IdentityError, Jwk, Jwks, SigningKey};
use foldhash::fast::RandomState;
use http::HeaderValue;
use serde::{Deserialize, Serialize};

/// How many retired public keys stay published.
pub const RETAINED_KEYS: usize = 2;

/// Errors loading, creating or rotating the key.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("signing key {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("signing key {path} is not valid: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error(transparent)]
    Identity(#[from] IdentityError),
}

#[derive(Serialize, Deserialize)]
struct KeyFile {
    current: StoredKey,
    #[serde(default)]
    previous: Vec<Jwk>,
}

#[derive(Serialize, Deserialize)]
struct StoredKey {
    kid: String,
    /// PKCS#8 DER, base64.
    pkcs8: String,
}

struct Keys {
    current: Arc<SigningKey>,
    previous: Vec<Jwk>,
}

/// The signing key and the published key set.
pub struct KeyStore {
    keys: RwLock<Keys>,
    path: Option<PathBuf>,
    /// Recently signed assertions, reused while they have at least half their lifetime left: signing
    /// is the most expensive step of a proxied request, and a caller repeats the same identity.
    /// Keyed by a hash of (key ID, identity, audience); a hit counts only when all three are equal.
    /// A seeded foldhash rather than SipHash: the lookup runs on every proxied request.
    recent: std::sync::Mutex<HashMap<u64, Recent, RandomState>>,
    hasher: RandomState,
}

struct Recent {
    kid: String,
    identity: Identity,
    provider: String,
    revision: Option<String>,
    issued: i64,
    token: HeaderValue,
}

/// Bound on cached assertions; the cache is cleared when it grows past it.
const RECENT_MAX: usize = 4096;

impl std::fmt::Debug for KeyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyStore").field("path", &self.path).finish()
    }
}

fn new_kid() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

impl KeyStore {
    /// A key that lives as long as the process (tests; a single dev hub).
    pub fn ephemeral() -> Result<Self, KeyError> {
        Ok(Self {
            recent: Default::default(),
            hasher: RandomState::default(),
            keys: RwLock::new(Keys {
                current: Arc::new(SigningKey::generate(new_kid())?),
                previous: Vec::new(),
            }),
            path: None,
        })
    }

    /// Loads the key file at `path`, creating it (mode 0600) when absent.
    pub fn load_or_create(path: &Path) -> Result<Self, KeyError> {
        let io = |source| KeyError::Io {
            path: path.to_path_buf(),
            source,
        };
        match std::fs::read(path) {
            Ok(bytes) => {
                let invalid = |message: String| KeyError::Invalid {
                    path: path.to_path_buf(),
                    message,
                };
                let file: KeyFile = serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
                let der = B64.decode(&file.current.pkcs8).map_err(|e| invalid(e.to_string()))?;
                if Ed25519KeyPair::from_pkcs8(&der).is_ok() {
                    return Self::replace_legacy(path);
                }
                let key = SigningKey::from_pkcs8(file.current.kid, &der).map_err(|e| invalid(e.to_string()))?;
                Ok(Self {
                    recent: Default::default(),
                    hasher: RandomState::default(),
                    keys: RwLock::new(Keys {
                        current: Arc::new(key),
                        previous: file.previous,
                    }),
                    path: Some(path.to_path_buf()),
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let store = Self {
                    path: Some(path.to_path_buf()),
                    ..Self::ephemeral()?
                };
                store.persist()?;
                Ok(store)
            }
            Err(e) => Err(io(e)),
        }
    }

    /// Earlier versions signed with Ed25519; assertions are ES256 now. The old file is kept next to
    /// the new one (nothing is lost), and a new key is made: assertions live a minute, so no
    /// provider holds one the old key signed for long.
    fn replace_legacy(path: &Path) -> Result<Self, KeyError> {
        let kept = path.with_extension("ed25519.bak");
        std::fs::rename(path, &kept).map_err(|source| KeyError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        tracing::warn!(path = %path.display(), kept = %kept.display(), "the signing key was an Ed25519 key of an earlier version; made a new ES256 key");
        Self::load_or_create(path)
    }

    fn persist(&self) -> Result<(), KeyError> {
        let Some(path) = &self.path else { return Ok(()) };
        let file = {
            let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
            KeyFile {
                current: StoredKey {
                    kid: keys.current.kid().to_string(),
                    pkcs8: B64.encode(keys.current.to_pkcs8()?),
                },
                previous: keys.previous.clone(),
            }
        };
        // Serializing strings and JWKs cannot fail.
        let bytes = serde_json::to_vec_pretty(&file).unwrap_or_default();
        write_private(path, &bytes).map_err(|source| KeyError::Io {
            path: path.clone(),
            source,
        })
    }

    /// Signs with a new key from now on; the old public key stays published.
    pub fn rotate(&self) -> Result<String, KeyError> {
        let new = Arc::new(SigningKey::generate(new_kid())?);
        let kid = new.kid().to_string();
        {
            let mut keys = self.keys.write().unwrap_or_else(|p| p.into_inner());
            let old = keys.current.public_jwk();
            keys.previous.insert(0, old);
            keys.previous.truncate(RETAINED_KEYS);
            keys.current = new;
        }
        self.persist()?;
        tracing::info!(kid = %kid, "rotated the identity assertion signing key");
        Ok(kid)
    }

    /// A compact JWS asserting `identity` to `provider`, valid for [`identity::DEFAULT_TTL`], as
    /// the header value it travels in. One is reused for half its lifetime, so a busy caller costs
    /// a hash lookup per request instead of a signature.
    pub fn sign(
        &self,
        identity: &Identity,
        provider: &str,
        revision: Option<&str>,
        now_unix: i64,
    ) -> Result<HeaderValue, IdentityError> {
        let key = self.keys.read().unwrap_or_else(|p| p.into_inner()).current.clone();
        // Keyed by signing key, identity, audience and revision: a rotation, any identity change or
        // a switch to another revision signs anew.
        let hash = self.hasher.hash_one((key.kid(), identity, provider, revision));
        let reuse_for = (identity::DEFAULT_TTL.as_secs() / 2) as i64;
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = recent.get(&hash)
            && now_unix >= r.issued
            && now_unix - r.issued < reuse_for
            && r.kid == key.kid()
            && r.provider == provider
            && r.revision.as_deref() == revision
            && r.identity == *identity
        {
            return Ok(r.token.clone());
        }
        let jws = key
            .sign(&Claims::new(identity.clone(), provider, now_unix, identity::DEFAULT_TTL).with_revision(revision))?;
        // A compact JWS is base64url and dots: always a valid header value.
        let token = HeaderValue::try_from(jws).unwrap_or_else(|_| HeaderValue::from_static(""));
        if recent.len() >= RECENT_MAX {
            recent.clear();
        }
        recent.insert(
            hash,
            Recent {
                kid: key.kid().to_string(),
                identity: identity.clone(),
                provider: provider.to_string(),
                revision: revision.map(String::from),
                issued: now_unix,
                token: token.clone(),
            },
        );
        Ok(token)
    }

    /// The published keys: current first.
    pub fn jwks(&self) -> Jwks {
        let keys = self.keys.read().unwrap_or_else(|p| p.into_inner());
        let mut out = vec![keys.current.public_jwk()];
        out.extend(keys.previous.iter().cloned());
        Jwks { keys: out }
    }
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("tmp");
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    opts.mode(0o600);
    let mut f = opts.open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use faros_core::identity::verify;
    use pretty_assertions::assert_eq;

    const NOW: i64 = 1_800_000_000;

    fn alice() -> Identity {
        Identity {
            user: "alice".into(),
            ..Default::default()
        }
    }

    #[test]
    fn assertions_are_reused_only_for_half_their_lifetime_and_the_same_caller() {
        let store = KeyStore::ephemeral().unwrap();
        let first = store.sign(&alice(), "q", None, NOW).unwrap();
        assert_eq!(store.sign(&alice(), "q", None, NOW + 29).unwrap(), first);
        assert_ne!(
            store.sign(&alice(), "q", None, NOW + 30).unwrap(),
            first,
            "re-signed after half the TTL"
        );
        assert_ne!(
            store.sign(&alice(), "other", None, NOW).unwrap(),
            first,
            "another audience"
        );
        let revised = store.sign(&alice(), "q", Some("q-0123456789"), NOW).unwrap();
        assert_ne!(revised, first, "another revision");
        let claims = identity::verify(revised.to_str().unwrap(), &store.jwks(), "q", NOW).unwrap();
        assert_eq!(
            claims.revision.as_deref(),
            Some("q-0123456789"),
            "the assertion names it"
        );
        let bob = Identity {
            user: "bob".into(),
            ..Default::default()
        };
        assert_ne!(store.sign(&bob, "q", None, NOW).unwrap(), first, "another caller");
        store.rotate().unwrap();
        assert_ne!(
            store.sign(&alice(), "q", None, NOW).unwrap(),
            first,
            "a rotated key signs anew"
        );
    }

    #[test]
    fn persisted_key_survives_restart_and_rotation_keeps_old_tokens_valid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys/signing.json");
        let store = KeyStore::load_or_create(&path).unwrap();
        let before = store.sign(&alice(), "q", None, NOW).unwrap();
        let again = KeyStore::load_or_create(&path).unwrap();
        assert_eq!(again.jwks(), store.jwks());
        assert_eq!(
            verify(before.to_str().unwrap(), &again.jwks(), "q", NOW)
                .unwrap()
                .identity
                .user,
            "alice"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }

        let kid = again.rotate().unwrap();
        let after = again.sign(&alice(), "q", None, NOW).unwrap();
        assert_eq!(identity::token_kid(after.to_str().unwrap()).unwrap(), kid);
        let reloaded = KeyStore::load_or_create(&path).unwrap();
        let jwks = reloaded.jwks();
        assert_eq!(jwks.keys.len(), 2);
        assert_eq!(jwks.keys[0].kid, kid);
        assert!(verify(before.to_str().unwrap(), &jwks, "q", NOW).is_ok());
        assert!(verify(after.to_str().unwrap(), &jwks, "q", NOW).is_ok());
        // Only RETAINED_KEYS old keys stay published.
        for _ in 0..3 {
            reloaded.rotate().unwrap();
        }
        assert_eq!(reloaded.jwks().keys.len(), 1 + RETAINED_KEYS);
        assert!(verify(before.to_str().unwrap(), &reloaded.jwks(), "q", NOW).is_err());
    }

    #[test]
    fn an_ed25519_key_of_an_earlier_version_is_kept_aside_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("signing.json");
        let legacy = aws_lc_rs::signature::Ed25519KeyPair::generate()
            .unwrap()
            .to_pkcs8()
            .unwrap();
        let old = serde_json::json!({"current": {"kid": "old", "pkcs8": B64.encode(legacy.as_ref())}, "previous": []});
        std::fs::write(&path, old.to_string()).unwrap();
        let store = KeyStore::load_or_create(&path).unwrap();
        assert_eq!(store.jwks().keys[0].kty, "EC");
        let kept = dir.path().join("signing.ed25519.bak");
        assert_eq!(std::fs::read_to_string(kept).unwrap(), old.to_string());
        // The new key is what a restart loads.
        assert_eq!(KeyStore::load_or_create(&path).unwrap().jwks(), store.jwks());
    }

    #[test]
    fn corrupt_key_file_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.json");
        std::fs::write(&path, "{}").unwrap();
        let err = KeyStore::load_or_create(&path).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("signing key {} is not valid", path.display())),
            "{err}"
        );
    }
}
