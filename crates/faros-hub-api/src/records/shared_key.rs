//! One secret every replica shares, kept as a record: the key of the hub's signed cookies
//! ([`crate::portal::signed`]). It is made once, by whichever replica needs it first (a second
//! replica racing to make it reads the winner's), and read once per process; it never expires. Like
//! every record it is readable only by kcp admins and the hub.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;

use super::{Kind, Records, StoreError};

/// The record's handle (fixed: every replica must find the same record).
const HANDLE: &str = "faros-hub-cookie-key";

/// The key's lifetime as a record: practically for ever (the garbage collector keeps it).
const LIFETIME: jiff::SignedDuration = jiff::SignedDuration::from_hours(24 * 365 * 100);

/// Why the shared key could not be had.
#[derive(Debug, thiserror::Error)]
pub enum SharedKeyError {
    #[error("no randomness for the hub's cookie key")]
    Random,
    #[error("the hub's cookie key record: {0}")]
    Store(#[from] StoreError),
    #[error("the hub's cookie key record holds no 32-byte key")]
    Invalid,
}

fn decode(stored: &str) -> Result<[u8; 32], SharedKeyError> {
    B64.decode(stored)
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok())
        .ok_or(SharedKeyError::Invalid)
}

/// The shared key, made when no replica has made it yet.
pub async fn load_or_create(records: &Records) -> Result<[u8; 32], SharedKeyError> {
    if let Some((stored, _)) = records.get::<String>(Kind::Key, HANDLE).await? {
        return decode(&stored);
    }
    let mut key = [0u8; 32];
    aws_lc_rs::rand::fill(&mut key).map_err(|_| SharedKeyError::Random)?;
    let expires = records.now().checked_add(LIFETIME).unwrap_or(jiff::Timestamp::MAX);
    match records.put(Kind::Key, HANDLE, &B64.encode(key), expires).await {
        Ok(()) => Ok(key),
        // Another replica made it first (its create won): use that one.
        Err(e) => match records.get::<String>(Kind::Key, HANDLE).await? {
            Some((stored, _)) => decode(&stored),
            None => Err(e.into()),
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::catalog::clock::ManualClock;

    #[tokio::test]
    async fn made_once_and_read_back() {
        let clock = Arc::new(ManualClock::new("2026-01-01T00:00:00Z".parse().unwrap()));
        let records = Records::in_process(clock.clone());
        let first = load_or_create(&records).await.unwrap();
        let again = load_or_create(&records).await.unwrap();
        assert_eq!(first, again);
        clock.advance(std::time::Duration::from_secs(10 * 365 * 24 * 3600));
        assert_eq!(load_or_create(&records).await.unwrap(), first, "it does not expire");
    }
}
