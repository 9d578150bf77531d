//! `faros-embedded-kcp`: a kcp-compatible Kubernetes API server in one process.
//!
//! It serves the subset of the Kubernetes API and of kcp that faros, its providers, kube-rs and
//! kubectl use, with kcp's observable behaviour (paths, status codes, Status bodies, 403 texts).
//! It persists to one redb file and serves HTTPS with a generated CA.
//!
//! Layout: `store` (redb, resourceVersions, watch history), `schema` (structural schemas),
//! `patch` (merge, JSON, strategic, server-side apply), `selector`, `auth` (tokens, RBAC),
//! `objects` (metadata rules), `registry`/`builtin` (what is served), `api` (HTTP handlers),
//! `controllers` (namespace deletion, GC, token secrets), `server` (TLS listener, lifecycle).
//!
//! What it must not do: pretend. Anything kcp does that this server does not is refused with a
//! 4xx/5xx Status, never silently accepted. It must not depend on any faros crate other than
//! `faros-core`.

pub mod api;
pub mod auth;
pub mod bootstrap;
pub mod builtin;
pub mod client;
pub mod controllers;
pub mod kcp;
pub mod metrics;
pub mod objects;
pub mod patch;
pub mod registry;
pub mod schema;
pub mod selector;
pub mod server;
pub mod state;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tls;
pub mod write;

pub use server::{Config, Server, ServerError};
