//! Sealing a record under the secret handle that names it (IO-free).
//!
//! A record is found by a digest of its handle (the cookie value, the OIDC `state`, the MCP
//! session id) and encrypted with AES-256-GCM under a second, independent digest of the same
//! handle. Whoever reads the stored records (a kcp admin, a backup) learns neither the handles nor
//! what the records hold, and cannot make a record that opens: only a request presenting the handle
//! can. The record's name is the additional authenticated data, so a sealed value moved under
//! another name does not open either.

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use sha2::{Digest, Sha256};

use super::kind::Kind;

/// Why a record could not be sealed or opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("no randomness for a record nonce")]
    Random,
    #[error("the record does not open with this handle (tampered, moved or not this handle's)")]
    Open,
}

fn digest(domain: &[u8], handle: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(domain);
    h.update([0u8]);
    h.update(handle.as_bytes());
    h.finalize().into()
}

/// The stored name of `kind`'s record for `handle`: `<kind>-<hex digest>` (a valid object name).
pub fn name(kind: Kind, handle: &str) -> String {
    let d = digest(b"faros-record-name", handle);
    let mut out = String::with_capacity(kind.as_str().len() + 1 + 64);
    out.push_str(kind.as_str());
    out.push('-');
    for b in d {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

fn key(handle: &str) -> LessSafeKey {
    let k = digest(b"faros-record-key", handle);
    // A 32-byte key is always valid for AES-256.
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &k).unwrap_or_else(|_| unreachable!("AES-256 key of 32 bytes")))
}

/// `nonce ‖ ciphertext ‖ tag` of `plain`, bound to `name`.
pub fn seal(handle: &str, name: &str, plain: &[u8]) -> Result<Vec<u8>, SealError> {
    let mut nonce = [0u8; NONCE_LEN];
    aws_lc_rs::rand::fill(&mut nonce).map_err(|_| SealError::Random)?;
    let mut body = plain.to_vec();
    key(handle)
        .seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(name.as_bytes()),
            &mut body,
        )
        .map_err(|_| SealError::Random)?;
    let mut out = Vec::with_capacity(NONCE_LEN + body.len());
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&body);
    Ok(out)
}

/// The plaintext [`seal`] sealed, if `handle` and `name` are the ones it was sealed with.
pub fn open(handle: &str, name: &str, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
    if sealed.len() < NONCE_LEN {
        return Err(SealError::Open);
    }
    let (nonce, body) = sealed.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| SealError::Open)?;
    let mut body = body.to_vec();
    let plain = key(handle)
        .open_in_place(nonce, Aad::from(name.as_bytes()), &mut body)
        .map_err(|_| SealError::Open)?;
    Ok(plain.to_vec())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_are_object_names_that_hide_the_handle() {
        let n = name(Kind::Session, "cookie-value");
        assert!(n.starts_with("session-"), "{n}");
        assert_eq!(n.len(), "session-".len() + 64);
        assert!(!n.contains("cookie"));
        assert!(
            n.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        );
        assert_eq!(n, name(Kind::Session, "cookie-value"), "stable across replicas");
        assert_ne!(n, name(Kind::Session, "cookie-valuf"));
        assert_eq!(
            n.trim_start_matches("session-"),
            name(Kind::Mcp, "cookie-value").trim_start_matches("mcp-"),
            "a kind's name differs only in its prefix"
        );
        // The name is not the encryption key's digest.
        assert_ne!(
            &n["session-".len()..],
            hex(&digest(b"faros-record-key", "cookie-value"))
        );
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn only_the_handle_and_name_it_was_sealed_with_open_a_record() {
        let sealed = seal("h1", "session-a", b"credential").unwrap();
        assert!(!sealed.windows(10).any(|w| w == b"credential"), "not in the clear");
        assert_ne!(sealed, seal("h1", "session-a", b"credential").unwrap(), "fresh nonce");
        let mut flipped = sealed.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        for (handle, name, bytes, want) in [
            ("h1", "session-a", sealed.clone(), Ok(b"credential".to_vec())),
            ("h2", "session-a", sealed.clone(), Err(SealError::Open)),
            ("h1", "session-b", sealed.clone(), Err(SealError::Open)),
            ("h1", "session-a", flipped, Err(SealError::Open)),
            ("h1", "session-a", sealed[..5].to_vec(), Err(SealError::Open)),
            ("h1", "session-a", Vec::new(), Err(SealError::Open)),
        ] {
            assert_eq!(open(handle, name, &bytes), want, "{handle} {name}");
        }
    }
}
