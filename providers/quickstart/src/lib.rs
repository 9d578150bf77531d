//! The quickstart provider: the reference every provider author copies. It is its name, its API
//! (the Greeting resource and its reconcile), its backend routes and MCP tools; the SDK's
//! [`App`] does the rest (`init`/`serve`, identity, heartbeats, tenants, health, shutdown).

pub mod backend;
pub mod greeting;
pub mod tools;

use faros_sdk::App;
use faros_sdk::prelude::PermissionClaim;

/// The provider's name (Provider, CatalogEntry, hub routes).
pub const PROVIDER: &str = "quickstart";
/// The APIExport (and its endpoint slice).
pub const EXPORT: &str = greeting::GROUP;
/// Version reported in heartbeats.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The quickstart provider: Greetings reconciled in every tenant, the backend, two MCP tools, and
/// the claim tenants accept on Enable (read their ConfigMaps).
pub fn app() -> App {
    App::new(PROVIDER, VERSION)
        .export(EXPORT)
        .files(env!("CARGO_MANIFEST_DIR"))
        .workspace_path_env("QUICKSTART_WORKSPACE_PATH")
        .claim(PermissionClaim::new("", "configmaps", &["get", "list", "watch"]))
        .controller(greeting::api_resource(), greeting::reconcile)
        .routes(backend::routes())
        .public_routes(backend::assets())
        .tool(tools::list_greetings())
        .tool(tools::create_greeting())
        .instructions("Greetings in the caller's faros workspace.")
}
