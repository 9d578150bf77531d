//! Cleanup before a tenant's object goes: faros-runtime's finalizer helper
//! ([`faros_runtime::finalizer`]) with the tenant's client, for a controller's reconcile.
//!
//! ```no_run
//! use std::sync::Arc;
//! use faros_sdk::finalizer::{Event, finalizer};
//! use faros_sdk::prelude::*;
//!
//! async fn reconcile(
//!     obj: Arc<DynamicObject>,
//!     tenant: Tenant,
//! ) -> Result<Action, faros_sdk::finalizer::Error<kube::Error>> {
//!     finalizer(&tenant, "example.providers.faros.sh/cleanup", obj, |event| async move {
//!         match event {
//!             Event::Apply(_obj) => Ok(Action::AwaitChange),
//!             // Release what the object holds outside kcp; the finalizer goes once this is Ok.
//!             Event::Cleanup(_obj) => Ok(Action::AwaitChange),
//!         }
//!     })
//!     .await
//! }
//! ```
//!
//! Only for objects that hold something outside kcp: a finalizer outlives its controller. Once the
//! provider is deleted nothing removes it, and the tenant's Disable (deleting the APIBinding, which
//! waits for the bound objects to go) hangs on every object that carries it.
//!
//! What it must not do: decide what a cleanup is; that is the provider's reconcile.

use std::future::Future;
use std::sync::Arc;

use kube::ResourceExt;
use kube::api::{Api, DynamicObject};

use crate::controller::{Action, Tenant};

pub use faros_runtime::finalizer::{Error, Event};

/// Runs `reconcile` for `obj` behind the finalizer `name` in `tenant`'s workspace: the finalizer is
/// added before the first [`Event::Apply`], and removed after [`Event::Cleanup`] succeeded once
/// the object is being deleted.
pub async fn finalizer<E, F, Fut>(
    tenant: &Tenant,
    name: &str,
    obj: Arc<DynamicObject>,
    reconcile: F,
) -> Result<Action, Error<E>>
where
    E: std::error::Error + 'static,
    F: FnOnce(Event<DynamicObject>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
{
    let api: Api<DynamicObject> = match obj.namespace() {
        Some(ns) => Api::namespaced_with(tenant.client.clone(), &ns, &tenant.resource),
        None => Api::all_with(tenant.client.clone(), &tenant.resource),
    };
    faros_runtime::finalizer::finalizer(&api, name, obj, reconcile).await
}
