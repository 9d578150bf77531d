//! `faros-embedded-kcp`: a kcp-compatible Kubernetes API server in one process.
//!
//! It serves the subset of the Kubernetes API and of kcp that faros, its providers, kube-rs and
//! kubectl use, with kcp's observable behaviour (paths, status codes, Status bodies, 403 texts).
//! It persists to one redb file and serves HTTPS with a generated CA.
//!
//! Public surface: [`Server`] and [`Config`] (start, URLs, TLS, kubeconfigs, inspection for
//! tests), [`names`] (names kcp derives), [`write_private`], and the `testing` feature's
//! throwaway server. Everything else is internal.
//!
//! Layout, from the bottom up:
//! - `store` (redb, resourceVersions, watch history), `schema` (structural schemas), `patch`
//!   (merge, JSON, strategic, server-side apply), `selector`, `objects` (metadata rules),
//!   `registry`/`builtin` (what is served), `clusters` (the logical cluster index: name ⇄ path, phase).
//! - `auth` (tokens, RBAC, the authorization decision), `state` (the shared server state and its
//!   commit hook), `item_cache` (representations derived per stored object state, for lists).
//! - `write` (the one write pipeline: metadata rules, schema, managedFields, kcp admission, commit)
//!   and `client` (the in-process client controllers write through, as the system). kcp admission
//!   (`kcp::admission`, one plugin per resource family) is the one part of `kcp` below `write`: it
//!   reads the state and imports nothing that writes.
//! - `kcp` (logical clusters, workspaces, exports and bindings) and `controllers` (namespace
//!   deletion, GC, token secrets, each namespace's defaults): they write through `client` only.
//! - `oidc` (the HTTPS fetches behind faros-core's OIDC token verifier).
//! - `api` (the HTTP layer: parsing, authentication, dispatch, responses) and `server` (TLS
//!   listener, lifecycle). Nothing below `api` imports from it.
//!
//! What it must not do: pretend. Anything kcp does that this server does not is refused with a
//! 4xx/5xx Status, never silently accepted. It must not depend on any faros crate other than
//! `faros-core`.

pub(crate) mod api;
pub(crate) mod auth;
pub(crate) mod bootstrap;
pub(crate) mod builtin;
pub(crate) mod client;
pub(crate) mod clusters;
pub(crate) mod controllers;
pub(crate) mod item_cache;
pub(crate) mod kcp;
pub(crate) mod metrics;
pub mod names;
pub(crate) mod objects;
pub(crate) mod oidc;
pub(crate) mod patch;
#[cfg(any(test, feature = "fuzzing"))]
pub mod properties;
#[cfg(test)]
mod proptests;
pub(crate) mod registry;
pub(crate) mod schema;
pub(crate) mod selector;
pub mod server;
pub(crate) mod state;
pub mod state_dir;
pub(crate) mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub(crate) mod tls;
pub(crate) mod write;

pub use auth::{ReloadCounts, generate_token};
pub use server::{ClaimSummary, Config, ConsumerSummary, ExportSummary, Server, ServerError, write_private};
pub use store::ObjectKey;
