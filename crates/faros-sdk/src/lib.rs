//! `faros-sdk`: what a faros provider author uses.
//!
//! | module | job |
//! |---|---|
//! | [`bootstrap`] | `init`: schemas, APIExport, endpoint slice, bind grant, CatalogEntry |
//! | [`manifest`] | YAML files templated over the environment (one manifest for every environment) |
//! | [`heartbeat`] | `POST /api/providers/<name>/heartbeat` every 30 s, backoff, token rotation |
//! | [`identity`] | verifying the hub's signed identity assertion (axum middleware + extractor) |
//! | [`controller`] | reconcile exported resources of every tenant through the virtual workspace (on `faros-runtime`) |
//! | [`mcp`] | an rmcp streamable-HTTP server at `/mcp` whose tools see the verified identity |
//! | [`config`] | the provider kubeconfig (`FAROS_PROVIDER_KUBECONFIG`, `KUBECONFIG`, in-cluster) |
//! | [`workspace`] | where `init`/`serve` act (server, workspace, identity), refused unless it is the provider's own |
//!
//! What it must not do: depend on any hub crate. It talks to the hub only over HTTP and to kcp only
//! through kube-rs.

pub mod bootstrap;
pub mod config;
pub mod controller;
pub mod heartbeat;
pub mod identity;
pub mod manifest;
pub mod mcp;
pub mod workspace;
