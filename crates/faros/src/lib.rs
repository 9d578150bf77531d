//! `faros`: the command-line tool, and the whole platform as a library.
//!
//! [`dev::Stack`] starts everything `faros dev` runs (embedded kcp, hub API, hub reconciler, the
//! quickstart provider, a dev user with an organization and workspace) inside the calling process,
//! which is how the `e2e/` scenarios drive the real stack. [`kcp`] serves the embedded kcp alone
//! (`faros kcp`, the `faros-kcp` chart's process). [`scaffold`] is `faros provider new`, [`schema_check`] `faros provider schema check`. [`credential`] is
//! `faros credential oidc`, the exec credential plugin in the kubeconfigs the hub gives OIDC users. This crate composes the other crates;
//! it must not grow logic of its own beyond wiring and dev conveniences.

pub mod cli;
pub mod credential;
pub mod dev;
pub mod grant;
pub mod identities;
pub mod kcp;
pub mod oidc;
pub mod scaffold;
pub mod schema_check;
