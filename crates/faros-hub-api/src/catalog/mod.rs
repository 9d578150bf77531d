//! The catalog feature: which providers exist, which entry is authoritative, and whether each
//! provider is alive.
//!
//! - [`registry`]: the in-memory catalog (IO-free): candidates, the elected entry per name, liveness
//!   and health; [`authority`] elects, [`record`] derives readiness and the desired status.
//! - [`watch`]: feeds the registry from kcp (the CatalogEntry watch through the
//!   `providers.faros.sh` virtual workspace) and writes status back.
//! - [`heartbeat`] (the provider's own ServiceAccount only) and [`probe`] (backend health) decide
//!   liveness, against the injected [`clock`].
//! - [`list`]: `GET /api/providers`, the catalog as the portal sees it.

pub mod authority;
pub mod clock;
pub mod heartbeat;
pub mod list;
pub mod probe;
pub mod record;
pub mod registry;
pub mod watch;

pub use registry::{Registry, RegistrySettings};
pub use watch::CatalogSettings;
