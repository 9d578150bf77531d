//! `faros-sdk`: what a faros provider author uses.
//!
//! | module | job |
//! |---|---|
//! | [`app`] | the provider app builder: name, API, controllers, routes, tools, and one call (`init`/`serve`) |
//! | [`reconcile`] | reconcile chores: status written only when it differs, conditions, 404 tolerance |
//! | [`finalizer`] | cleanup before a tenant's object goes: `Apply` / `Cleanup` behind a finalizer |
//! | [`tenants`] | the verified caller of a backend route or tool, with a client for its workspace ([`tenants::Caller`]) |
//! | [`tools`] | MCP tools as typed async functions of the caller, without rmcp ceremony |
//! | [`bootstrap`] | `init`: schemas, APIExport, endpoint slice, bind grant, CatalogEntry |
//! | [`manifest`] | YAML files templated over the environment (one manifest for every environment) |
//! | [`heartbeat`] | `POST /api/providers/<name>/heartbeat` every 30 s, backoff, token rotation |
//! | [`identity`] | verifying the hub's signed identity assertion (axum middleware + extractor) |
//! | [`controller`] | reconcile exported resources of every tenant through the virtual workspace (on `faros-runtime`) |
//! | [`endpoints`] | the export's virtual workspace URLs, followed as kcp adds and removes shards' URLs |
//! | [`mcp`] | an rmcp streamable-HTTP server at `/mcp` whose tools see the verified identity |
//! | [`config`] | the provider kubeconfig (`FAROS_PROVIDER_KUBECONFIG`, `KUBECONFIG`, in-cluster) |
//! | [`workspace`] | where `init`/`serve` act (server, workspace, identity), refused unless it is the provider's own |
//!
//! The crates its API exposes are re-exported ([`kube`], [`axum`], [`rmcp`], [`faros_core`], …), so a
//! provider's `Cargo.toml` needs `faros-sdk` alone; derive macros then name their crate
//! (`#[serde(crate = "faros_sdk::serde")]`, `#[schemars(crate = "faros_sdk::schemars")]`).
//! [`prelude`] holds what a provider's code uses most.
//!
//! What it must not do: depend on any hub crate. It talks to the hub only over HTTP and to kcp only
//! through kube-rs.

pub mod app;
pub mod bootstrap;
pub mod config;
pub mod controller;
pub mod endpoints;
pub mod finalizer;
pub mod heartbeat;
pub mod identity;
pub mod manifest;
pub mod mcp;
pub mod reconcile;
pub mod tenants;
pub mod tools;
pub mod workspace;

pub use app::App;
pub use {
    axum, faros_core, futures, http, jiff, k8s_openapi, kube, rmcp, schemars, serde, serde_json, tokio, tower, tracing,
};

/// What a provider's code uses most: `use faros_sdk::prelude::*;`.
pub mod prelude {
    pub use crate::app::{App, Caller, ProviderInfo};
    pub use crate::controller::{Action, Tenant};
    pub use crate::identity::VerifiedIdentity;
    pub use crate::reconcile::{self, Condition, Outcome};
    pub use crate::tools::Tool;
    pub use faros_core::kcp::apis::v1alpha2::PermissionClaim;
    pub use faros_core::status::Status;
    pub use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
    pub use kube::{Client, ResourceExt};
    pub use serde_json::{Value, json};
}
