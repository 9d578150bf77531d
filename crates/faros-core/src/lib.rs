//! `faros-core`: the one place for what every faros component shares.
//!
//! Types (faros' own `Provider` and `CatalogEntry`, kcp's API types written by hand), names and
//! constants, kcp logical-cluster addressing, condition helpers, the kube client factory and the
//! wait-for-condition helper, the servers' TLS policy, and the `Status` error body; with feature
//! `axum`, `Status` as a response, the request-body drain servers use for early HTTP/2 answers, and
//! the write coalescing they put under their HTTP/2 connections.
//!
//! What it must not do: depend on any other faros crate, or perform IO outside the client
//! factory, the wait helpers, the body drain and the transport wrapper of `coalesce` (`oidc` verifies
//! tokens and caches keys, but its fetches are the caller's, handed in as a `FetchJson`).

pub mod bearer;
pub mod catalog;
pub mod client;
#[cfg(feature = "axum")]
pub mod coalesce;
pub mod conditions;
#[cfg(feature = "axum")]
pub mod drain;
pub mod identity;
pub mod kcp;
pub mod membership;
pub mod metrics;
pub mod names;
pub mod oidc;
pub mod path;
#[cfg(any(test, feature = "fuzzing"))]
pub mod properties;
#[cfg(test)]
mod proptests;
pub mod provider;
pub mod provider_revision;
pub mod revision;
pub mod schema_gen;
pub mod schema_revision;
pub mod server_tls;
pub mod status;
pub mod structural;
pub mod telemetry;
pub mod token_file;
pub mod user;
pub mod wait;
