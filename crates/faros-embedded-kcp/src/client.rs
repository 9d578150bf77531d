//! The in-process client of the controllers (`controllers`, `kcp`): creates, updates and deletes
//! through the same write pipeline (`write`) as HTTP requests — metadata rules, schema defaulting and
//! validation, namespace checks, managedFields, kcp admission, the cluster annotation — as the
//! system actor, which is in `system:masters` and so passes RBAC and kcp's permission checks, and
//! nothing else.
//!
//! What it must not do: write to the store directly, or skip a pipeline step for convenience. A
//! write the API would refuse is refused here with the same Status.

use std::sync::Arc;

use faros_core::status::Status;
use serde_json::Value;

use crate::auth::{GROUP_MASTERS, UserInfo};
use crate::objects::{CLUSTER_ANNOTATION, meta_str};
use crate::registry::ResourceDef;
use crate::state::ServerState;
use crate::write::delete::{DeleteOptions, Deleted};
use crate::write::{FieldValidation, Writer};

/// The user name the in-process controllers write as.
pub const SYSTEM_USER: &str = "system:embedded-kcp:controllers";
/// The field manager recorded for controller writes.
pub const SYSTEM_MANAGER: &str = "embedded-kcp";

/// A client for in-process writers.
pub struct Client<'a> {
    state: &'a ServerState,
    actor: UserInfo,
}

impl<'a> Client<'a> {
    /// A client acting as the system.
    pub fn system(state: &'a ServerState) -> Self {
        Self {
            state,
            actor: UserInfo {
                username: SYSTEM_USER.into(),
                groups: vec![GROUP_MASTERS.into()],
                ..Default::default()
            },
        }
    }

    fn writer<'w>(&'w self, cluster: &'w str) -> Writer<'w> {
        Writer {
            state: self.state,
            user: &self.actor,
            cluster,
            // Like a request without `fieldValidation`: unknown fields are pruned with a warning.
            field_validation: Ok(FieldValidation::Warn),
            dry_run: Ok(false),
        }
    }

    /// The storage definition of `group/resource` served in `cluster`.
    pub fn storage_def(&self, cluster: &str, group: &str, resource: &str) -> Result<Arc<ResourceDef>, Status> {
        self.state
            .registry
            .resources(cluster)
            .into_iter()
            .find(|d| d.group == group && d.resource == resource && d.conversion.is_none())
            .ok_or_else(|| {
                Status::not_found_message(format!("{resource}.{group} is not served in logical cluster {cluster}"))
            })
    }

    /// Creates `obj` in `cluster` (its namespace from `metadata.namespace`); returns the stored object.
    pub async fn create(&self, cluster: &str, group: &str, resource: &str, obj: Value) -> Result<Value, Status> {
        let def = self.storage_def(cluster, group, resource)?;
        let ns = meta_str(&obj, "namespace").map(String::from);
        let (stored, _) =
            crate::write::create::create(&self.writer(cluster), &def, ns.as_deref(), obj, Some(SYSTEM_MANAGER)).await?;
        Ok(stored)
    }

    /// Replaces the stored `old` (which carries its resourceVersion) with `new`: everything but
    /// status for kinds with a status subresource. Removes the object when that completes its deletion.
    pub async fn update(&self, group: &str, resource: &str, old: &Value, new: Value) -> Result<Value, Status> {
        self.update_part(group, resource, old, new, None).await
    }

    /// Replaces the status of `old` with that of `new` (`/status` when the kind has it).
    pub async fn update_status(&self, group: &str, resource: &str, old: &Value, new: Value) -> Result<Value, Status> {
        self.update_part(group, resource, old, new, Some("status")).await
    }

    /// Sets a namespace's `spec.finalizers` from `new` (`/finalize`).
    pub async fn finalize_namespace(&self, old: &Value, new: Value) -> Result<Value, Status> {
        self.update_part("", "namespaces", old, new, Some("finalize")).await
    }

    async fn update_part(
        &self,
        group: &str,
        resource: &str,
        old: &Value,
        new: Value,
        sub: Option<&str>,
    ) -> Result<Value, Status> {
        let cluster = cluster_of(old);
        let def = self.storage_def(&cluster, group, resource)?;
        let sub = match sub {
            Some("status") if !def.status_subresource => None,
            s => s,
        };
        let (stored, _) =
            crate::write::update::update(&self.writer(&cluster), &def, old, new, sub, false, Some(SYSTEM_MANAGER))
                .await?;
        Ok(stored)
    }

    /// Deletes the stored `obj` with `propagation` (`Background`, `Foreground`, `Orphan`, or None
    /// for the kind's default): removed at once, or marked while finalizers remain.
    pub async fn delete(
        &self,
        group: &str,
        resource: &str,
        obj: &Value,
        propagation: Option<&str>,
    ) -> Result<Deleted, Status> {
        let cluster = cluster_of(obj);
        let def = self.storage_def(&cluster, group, resource)?;
        let opts = DeleteOptions {
            propagation_policy: propagation.map(String::from),
            ..Default::default()
        };
        crate::write::delete::delete(&self.writer(&cluster), &def, obj.clone(), &opts, false).await
    }
}

/// The logical cluster a stored object lives in.
fn cluster_of(obj: &Value) -> String {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(CLUSTER_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}
