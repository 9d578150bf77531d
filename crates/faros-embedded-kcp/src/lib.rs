//! `faros-embedded-kcp`: a kcp-compatible Kubernetes API server in one process.
//!
//! It serves the subset of the Kubernetes API and of kcp that faros, its providers, kube-rs and
//! kubectl use, with kcp's observable behaviour (paths, status codes, Status bodies, 403 texts).
//! It persists to one redb file and serves HTTPS with a generated CA.
//!
//! What it must not do: pretend. Anything kcp does that this server does not is refused with a
//! 4xx/5xx Status, never silently accepted. It must not depend on any faros crate other than
//! `faros-core`.

pub mod schema;
pub mod selector;
pub mod patch;
pub mod store;
pub mod auth;
