//! Records every hub replica shares and that outlive a replica: portal sessions, OIDC sign-ins in
//! flight, MCP sessions.
//!
//! With [`Placement::Kcp`] (the default) each record is a Secret in the [`names::SYSTEM_NAMESPACE`]
//! namespace of [`names::SYSTEM_CONTROLLERS_PATH`] (the reconciler bootstraps both; only kcp admins
//! and the hub read them), labelled [`RECORD_LABEL`]. Every replica watches them into a cache
//! ([`kcp`]), so a sign-out on one replica ends the session on all of them within the watch's
//! delay (milliseconds), and a record another replica made a moment ago that is not cached yet is
//! read from kcp directly. [`Placement::Process`] keeps them in this process only (one replica,
//! tests without kcp).
//!
//! A record is named by a digest of its secret handle and sealed under another digest of it
//! ([`seal`]): what kcp stores is neither the cookie nor the credential behind it. The expiry is
//! sealed with the value (authoritative) and also written in the clear as an annotation, so any
//! replica can delete expired records without opening them.

pub mod backend;
pub mod kcp;
pub mod kind;
pub mod memory;
pub mod owners;
pub mod seal;
pub mod shared_key;

use std::sync::Arc;

use faros_core::names;
use jiff::Timestamp;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use backend::{Backend, DATA_KEY, EXPIRES_ANNOTATION, RECORD_LABEL, Raw, StoreError};
pub use kind::Kind;

use crate::catalog::clock::Clock;

/// Where the records live.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// In kcp, shared by every replica and kept across restarts.
    #[default]
    Kcp,
    /// In this process's memory: lost on restart, unknown to other replicas.
    Process,
}

/// A record's value with its expiry and the version a [`Records::replace`] must name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versioned<T> {
    pub value: T,
    pub expires: Timestamp,
    pub version: String,
}

/// The sealed JSON of a record: the value and its authoritative expiry.
#[derive(serde::Serialize, serde::Deserialize)]
struct Envelope<T> {
    expires: Timestamp,
    value: T,
}

/// Typed, sealed records over a [`Backend`].
#[derive(Clone)]
pub struct Records {
    backend: Arc<dyn Backend>,
    clock: Arc<dyn Clock>,
    /// Who made which records through this replica ([`Records::put_owned`]).
    owners: Arc<std::sync::Mutex<owners::Owners>>,
    /// The shared key, once read ([`Records::shared_key`]).
    key: Arc<tokio::sync::OnceCell<[u8; 32]>>,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Records")
    }
}

impl Records {
    pub fn new(backend: Arc<dyn Backend>, clock: Arc<dyn Clock>) -> Self {
        Self {
            backend,
            clock,
            owners: Arc::default(),
            key: Arc::default(),
        }
    }

    /// The secret every replica shares ([`shared_key`]), read from the store once per process.
    pub async fn shared_key(&self) -> Result<[u8; 32], shared_key::SharedKeyError> {
        self.key
            .get_or_try_init(|| shared_key::load_or_create(self))
            .await
            .copied()
    }

    /// [`Records::put`] of a record that `owner` made: `owner`'s oldest records of `kind` beyond
    /// [`Kind::cap_per_owner`] are deleted ([`owners`]).
    pub async fn put_owned<T: Serialize>(
        &self,
        kind: Kind,
        handle: &str,
        owner: &str,
        value: &T,
        expires: Timestamp,
    ) -> Result<(), StoreError> {
        self.put(kind, handle, value, expires).await?;
        let evicted = self.owners.lock().unwrap_or_else(|p| p.into_inner()).add(
            kind,
            owner,
            &seal::name(kind, handle),
            expires,
            self.now(),
            kind.cap_per_owner(),
        );
        for name in evicted {
            self.backend.delete(&name).await?;
        }
        Ok(())
    }

    /// Records in this process only.
    pub fn in_process(clock: Arc<dyn Clock>) -> Self {
        Self::new(Arc::new(memory::MemoryBackend::new(clock.clone())), clock)
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Stores `value` for `handle` until `expires`.
    pub async fn put<T: Serialize>(
        &self,
        kind: Kind,
        handle: &str,
        value: &T,
        expires: Timestamp,
    ) -> Result<(), StoreError> {
        let name = seal::name(kind, handle);
        let plain = serde_json::to_vec(&Envelope { expires, value })?;
        let sealed = seal::seal(handle, &name, &plain)?;
        self.backend.put(kind, &name, Raw { sealed, expires }).await
    }

    fn unseal<T: DeserializeOwned>(&self, handle: &str, name: &str, raw: Option<Raw>) -> Option<(T, Timestamp)> {
        let raw = raw?;
        // A record that does not open or decode is treated as absent: only its handle's holder
        // could have made a valid one.
        let plain = seal::open(handle, name, &raw.sealed).ok()?;
        let env: Envelope<T> = serde_json::from_slice(&plain).ok()?;
        (env.expires > self.clock.now()).then_some((env.value, env.expires))
    }

    /// The live value stored for `handle`, with its expiry.
    pub async fn get<T: DeserializeOwned>(
        &self,
        kind: Kind,
        handle: &str,
    ) -> Result<Option<(T, Timestamp)>, StoreError> {
        let name = seal::name(kind, handle);
        let raw = self.backend.get(&name).await?;
        Ok(self.unseal(handle, &name, raw))
    }

    /// The live value stored for `handle`, removed: a second `take` anywhere gets `None`.
    pub async fn take<T: DeserializeOwned>(
        &self,
        kind: Kind,
        handle: &str,
    ) -> Result<Option<(T, Timestamp)>, StoreError> {
        let name = seal::name(kind, handle);
        let raw = self.backend.take(&name).await?;
        Ok(self.unseal(handle, &name, raw))
    }

    /// The live value stored for `handle` as the store of record holds it now, with its version.
    pub async fn get_versioned<T: DeserializeOwned>(
        &self,
        kind: Kind,
        handle: &str,
    ) -> Result<Option<Versioned<T>>, StoreError> {
        let name = seal::name(kind, handle);
        let Some((raw, version)) = self.backend.get_versioned(&name).await? else {
            return Ok(None);
        };
        Ok(self.unseal(handle, &name, Some(raw)).map(|(value, expires)| Versioned {
            value,
            expires,
            version,
        }))
    }

    /// Replaces the value for `handle` if the record is still at `version` (compare-and-swap):
    /// the new version, or `None` when another writer changed or removed it first.
    pub async fn replace<T: Serialize>(
        &self,
        kind: Kind,
        handle: &str,
        value: &T,
        expires: Timestamp,
        version: &str,
    ) -> Result<Option<String>, StoreError> {
        let name = seal::name(kind, handle);
        let plain = serde_json::to_vec(&Envelope { expires, value })?;
        let sealed = seal::seal(handle, &name, &plain)?;
        self.backend
            .replace(kind, &name, Raw { sealed, expires }, version)
            .await
    }

    /// Removes the record for `handle`.
    pub async fn delete(&self, kind: Kind, handle: &str) -> Result<(), StoreError> {
        self.delete_named(&seal::name(kind, handle)).await
    }

    /// Removes the record `name` (as [`seal::name`] made it).
    pub async fn delete_named(&self, name: &str) -> Result<(), StoreError> {
        self.owners.lock().unwrap_or_else(|p| p.into_inner()).remove(name);
        self.backend.delete(name).await
    }
}

/// Where [`Placement::Kcp`] keeps the records.
pub fn kcp_location() -> (&'static str, &'static str) {
    (names::SYSTEM_CONTROLLERS_PATH, names::SYSTEM_NAMESPACE)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::time::Duration;

    use super::*;
    use crate::catalog::clock::ManualClock;

    #[tokio::test]
    async fn records_are_sealed_expire_and_are_taken_once() {
        let clock = Arc::new(ManualClock::new("2026-01-01T00:00:00Z".parse().unwrap()));
        let backend = Arc::new(memory::MemoryBackend::new(clock.clone()));
        let records = Records::new(backend.clone(), clock.clone());
        let later = clock.now() + jiff::SignedDuration::from_secs(60);
        records
            .put(Kind::Session, "h", &"secret".to_string(), later)
            .await
            .unwrap();
        let raw = backend.get(&seal::name(Kind::Session, "h")).await.unwrap().unwrap();
        assert_eq!(raw.expires, later);
        assert!(!raw.sealed.windows(6).any(|w| w == b"secret"));
        assert_eq!(
            records.get::<String>(Kind::Session, "h").await.unwrap(),
            Some(("secret".to_string(), later))
        );
        assert_eq!(
            records.get::<String>(Kind::Mcp, "h").await.unwrap(),
            None,
            "another kind"
        );
        assert_eq!(records.get::<String>(Kind::Session, "g").await.unwrap(), None);
        assert_eq!(
            records.take::<String>(Kind::Session, "h").await.unwrap().map(|v| v.0),
            Some("secret".into())
        );
        assert_eq!(records.take::<String>(Kind::Session, "h").await.unwrap(), None, "once");
        records.put(Kind::Session, "h", &"v".to_string(), later).await.unwrap();
        clock.advance(Duration::from_secs(61));
        assert_eq!(
            records.get::<String>(Kind::Session, "h").await.unwrap(),
            None,
            "expired"
        );
        records.delete(Kind::Session, "h").await.unwrap();
        records.delete(Kind::Session, "h").await.unwrap();
    }

    #[tokio::test]
    async fn an_owner_keeps_at_most_the_cap() {
        let clock = Arc::new(ManualClock::new("2026-01-01T00:00:00Z".parse().unwrap()));
        let records = Records::in_process(clock.clone());
        let later = clock.now() + jiff::SignedDuration::from_secs(60);
        let cap = Kind::Session.cap_per_owner();
        for i in 0..=cap {
            records
                .put_owned(Kind::Session, &format!("h{i}"), "alice", &i, later)
                .await
                .unwrap();
        }
        records.put_owned(Kind::Session, "b", "bob", &0, later).await.unwrap();
        assert_eq!(
            records.get::<usize>(Kind::Session, "h0").await.unwrap(),
            None,
            "the oldest went"
        );
        for i in 1..=cap {
            assert!(
                records
                    .get::<usize>(Kind::Session, &format!("h{i}"))
                    .await
                    .unwrap()
                    .is_some()
            );
        }
        assert!(records.get::<usize>(Kind::Session, "b").await.unwrap().is_some());
    }

    #[tokio::test]
    async fn replace_is_compare_and_swap() {
        let clock = Arc::new(ManualClock::new("2026-01-01T00:00:00Z".parse().unwrap()));
        let records = Records::in_process(clock.clone());
        let later = clock.now() + jiff::SignedDuration::from_secs(60);
        assert_eq!(records.get_versioned::<String>(Kind::Session, "h").await.unwrap(), None);
        records.put(Kind::Session, "h", &"v1".to_string(), later).await.unwrap();
        let v1 = records
            .get_versioned::<String>(Kind::Session, "h")
            .await
            .unwrap()
            .unwrap();
        assert_eq!((v1.value.as_str(), v1.expires), ("v1", later));
        // Two writers read v1; the first replace wins, the second sees the conflict.
        let v2 = records
            .replace(Kind::Session, "h", &"v2".to_string(), later, &v1.version)
            .await
            .unwrap()
            .unwrap();
        assert_ne!(v2, v1.version);
        assert_eq!(
            records
                .replace(Kind::Session, "h", &"lost".to_string(), later, &v1.version)
                .await
                .unwrap(),
            None
        );
        let now = records
            .get_versioned::<String>(Kind::Session, "h")
            .await
            .unwrap()
            .unwrap();
        assert_eq!((now.value.as_str(), now.version), ("v2", v2.clone()));
        assert_eq!(
            records.get::<String>(Kind::Session, "h").await.unwrap().unwrap().0,
            "v2"
        );
        records.delete(Kind::Session, "h").await.unwrap();
        assert_eq!(
            records
                .replace(Kind::Session, "h", &"gone".to_string(), later, &v2)
                .await
                .unwrap(),
            None,
            "a removed record is not brought back"
        );
    }
}
