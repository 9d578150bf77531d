//! What a record store keeps and how ([`Backend`]), below the store ([`super::Records`]) and its two
//! backends ([`super::kcp`], [`super::memory`]).

use futures::future::BoxFuture;
use jiff::Timestamp;

use super::kind::Kind;
use super::seal::SealError;

/// The label every record carries; its value is the record's [`Kind`].
pub const RECORD_LABEL: &str = "faros.sh/hub-record";
/// The annotation with a record's expiry (RFC 3339), for garbage collection.
pub const EXPIRES_ANNOTATION: &str = "faros.sh/expires";
/// The Secret data key of the sealed value.
pub const DATA_KEY: &str = "sealed";

/// Why the record store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("kcp: {0}")]
    Kube(#[from] kube::Error),
    #[error("kcp client: {0}")]
    Client(#[from] faros_core::client::ClientError),
    #[error(transparent)]
    Seal(#[from] SealError),
    #[error("record encoding: {0}")]
    Encode(#[from] serde_json::Error),
}

/// A stored record as the backend sees it: sealed bytes and the expiry in the clear.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Raw {
    pub sealed: Vec<u8>,
    pub expires: Timestamp,
}

/// Where raw records are kept. `name`s come from [`super::seal::name`].
pub trait Backend: Send + Sync + 'static {
    /// Stores a new record.
    fn put<'a>(&'a self, kind: Kind, name: &'a str, raw: Raw) -> BoxFuture<'a, Result<(), StoreError>>;
    /// The record `name`, if it exists.
    fn get<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Raw>, StoreError>>;
    /// The record `name`, removed so that no other caller (on any replica) also gets it.
    fn take<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Raw>, StoreError>>;
    /// Removes the record `name` (no error if it is gone already).
    fn delete<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
    /// The record `name` as the store of record holds it now (never a cache: a caller about to
    /// [`Backend::replace`] it must see the latest version), with that version.
    fn get_versioned<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<(Raw, String)>, StoreError>>;
    /// Replaces the record `name` if it is still at `version`: the new version, or `None` when it
    /// changed meanwhile or is gone (another replica won; re-read and decide again).
    fn replace<'a>(
        &'a self,
        kind: Kind,
        name: &'a str,
        raw: Raw,
        version: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>>;
}
