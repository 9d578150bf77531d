//! The in-process client of the controllers (`controllers`, `kcp`): creates, updates and deletes
//! through the same write pipeline (`write`) as HTTP requests — metadata rules, schema defaulting and
//! validation, namespace checks, managedFields, kcp admission, the cluster annotation — as the
//! system actor, which is in `system:masters` and so passes RBAC and kcp's permission checks, and
//! nothing else — or, for a step kcp takes on a user's behalf, as that user ([`Client::acting_as`]).
//!
//! What it must not do: write to the store directly, or skip a pipeline step for convenience. A
//! write the API would refuse is refused here with the same Status.

use std::sync::Arc;

use faros_core::status::Status;
use serde_json::Value;

use crate::auth::{GROUP_MASTERS, UserInfo};
use crate::objects::meta;
use crate::registry::ResourceDef;
use crate::state::ServerState;
use crate::write::delete::{DeleteOptions, Deleted};
use crate::write::update::Updated;
use crate::write::{FieldValidation, Writer};

/// The user name the in-process controllers write as.
pub const SYSTEM_USER: &str = "system:embedded-kcp:controllers";
/// The field manager recorded for controller writes: kcp's, whose controllers write with its
/// user agent (`kcp/<version>`), so managedFields and apply conflicts name the same owner on both.
pub const SYSTEM_MANAGER: &str = "kcp";

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

    /// A client acting as `user`, for what kcp does on a user's behalf: its `system:apibindings`
    /// initializer binds a workspace's default APIs as the workspace's recorded creator, so kcp
    /// admission's checks (`bind` on the export) are that user's, not the system's.
    pub fn acting_as(state: &'a ServerState, user: UserInfo) -> Self {
        Self { state, actor: user }
    }

    fn writer<'w>(&'w self, cluster: &'w str) -> Writer<'w> {
        Writer {
            state: self.state,
            user: &self.actor,
            cluster,
            // Like a request without `fieldValidation`: unknown fields are pruned with a warning.
            field_validation: Ok(FieldValidation::Warn),
            dry_run: Ok(false),
            claim: None,
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
        let ns = meta::namespace(&obj).map(String::from);
        let (stored, _) =
            crate::write::create::create(&self.writer(cluster), &def, ns.as_deref(), obj, Some(SYSTEM_MANAGER)).await?;
        Ok(stored.into_value())
    }

    /// Replaces the stored `old` (which carries its resourceVersion) with `new`, like a controller
    /// calling the API: the object, then — for kinds with a status subresource whose status changed —
    /// `/status`, as a second write. Returns the stored result (the object removed when the update
    /// completed its deletion).
    pub async fn update(&self, group: &str, resource: &str, old: &Value, new: Value) -> Result<Value, Status> {
        let def = self.storage_def(meta::cluster(old), group, resource)?;
        if !def.status_subresource || old.get("status") == new.get("status") {
            return Ok(self.write_part(&def, old, new, None).await?.object.into_value());
        }
        let without_status = |v: &Value| {
            let mut v = v.clone();
            if let Some(m) = v.as_object_mut() {
                m.remove("status");
            }
            if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
            }
            v
        };
        let current = if without_status(old) == without_status(&new) {
            old.clone()
        } else {
            let updated = self.write_part(&def, old, new.clone(), None).await?;
            if updated.removed {
                // The deletion completed: no status left to write.
                return Ok(updated.object.into_value());
            }
            updated.object.into_value()
        };
        let mut status_write = new;
        if let Some(rv) = meta::resource_version(&current).map(|rv| Value::String(rv.to_string())) {
            meta::meta_mut(&mut status_write).insert("resourceVersion".into(), rv);
        }
        Ok(self
            .write_part(&def, &current, status_write, Some("status"))
            .await?
            .object
            .into_value())
    }

    /// Replaces the labels of `old` with those of `new` without recording a field manager: kcp's
    /// claim labels are set by its admission on an empty merge patch, which owns no field.
    pub async fn relabel(&self, group: &str, resource: &str, old: &Value, new: Value) -> Result<Value, Status> {
        let def = self.storage_def(meta::cluster(old), group, resource)?;
        let cluster = meta::cluster(old).to_string();
        let mut next = old.clone();
        if let Some(labels) = new.pointer("/metadata/labels") {
            meta::meta_mut(&mut next).insert("labels".into(), labels.clone());
        }
        let written = crate::write::update::update(&self.writer(&cluster), &def, old, next, None, false, None).await?;
        Ok(written.object.into_value())
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
        let def = self.storage_def(meta::cluster(old), group, resource)?;
        let sub = match sub {
            Some("status") if !def.status_subresource => None,
            s => s,
        };
        Ok(self.write_part(&def, old, new, sub).await?.object.into_value())
    }

    async fn write_part(
        &self,
        def: &ResourceDef,
        old: &Value,
        new: Value,
        sub: Option<&str>,
    ) -> Result<Updated, Status> {
        let cluster = meta::cluster(old).to_string();
        crate::write::update::update(&self.writer(&cluster), def, old, new, sub, false, Some(SYSTEM_MANAGER)).await
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
        let cluster = meta::cluster(obj).to_string();
        let def = self.storage_def(&cluster, group, resource)?;
        let opts = DeleteOptions {
            propagation_policy: propagation.map(String::from),
            ..Default::default()
        };
        crate::write::delete::delete(&self.writer(&cluster), &def, obj.clone(), &opts, false).await
    }
}

/// The result of a controller write, logged when it did not land: conflicts and not-found are
/// expected races, and the next event brings the controller back.
pub fn landed<T>(result: Result<T, Status>) -> Option<T> {
    match result {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::debug!(code = e.code, reason = %e.reason, message = %e.message, "controller write lost a race");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use serde_json::json;

    use super::*;
    use crate::{Config, Server};

    /// POSTs `obj` as admin and returns the refusal.
    async fn refused_over_http(server: &Server, path: &str, obj: &Value) -> Status {
        let ca = reqwest::Certificate::from_pem(server.ca_pem().as_bytes()).unwrap();
        let http = reqwest::Client::builder().add_root_certificate(ca).build().unwrap();
        let resp = http
            .post(format!("{}{path}", server.url()))
            .bearer_auth(server.admin_token())
            .json(obj)
            .send()
            .await
            .unwrap();
        assert!(!resp.status().is_success(), "{path} accepted over HTTP");
        resp.json::<Status>().await.unwrap()
    }

    /// A controller's write is admitted exactly like the same write over HTTP: what schema
    /// validation or kcp admission refuses over HTTP, the in-process client is refused with the
    /// same Status — the system actor skips RBAC only.
    #[tokio::test]
    async fn controller_writes_are_refused_like_api_writes() {
        faros_core::telemetry::install_crypto_provider();
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(Config::new(dir.path())).await.unwrap();
        let client = Client::system(server.state());

        // Schema validation: ConfigMap data values are strings.
        let bad_configmap = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "bad", "namespace": "default"}, "data": {"count": 1}});
        let http = refused_over_http(
            &server,
            "/clusters/root/api/v1/namespaces/default/configmaps",
            &bad_configmap,
        )
        .await;
        let in_process = client
            .create("root", "", "configmaps", bad_configmap)
            .await
            .unwrap_err();
        assert_eq!(http.code, 422, "{http:?}");
        assert_eq!(in_process, http);

        // kcp admission: binding to an export in a workspace that does not exist is forbidden,
        // even for system:masters.
        let bad_binding = json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIBinding",
            "metadata": {"name": "nowhere"},
            "spec": {"reference": {"export": {"path": "root:missing", "name": "widgets"}}}});
        let http = refused_over_http(
            &server,
            "/clusters/root/apis/apis.kcp.io/v1alpha2/apibindings",
            &bad_binding,
        )
        .await;
        let in_process = client
            .create("root", "apis.kcp.io", "apibindings", bad_binding)
            .await
            .unwrap_err();
        assert_eq!(http.code, 403, "{http:?}");
        assert_eq!(in_process, http);

        // Updates go through the same checks: an invalid label is refused on the way in.
        let ns = server
            .state()
            .store
            .get(&crate::store::ObjectKey::new("", "namespaces", "root", "", "default"))
            .unwrap()
            .unwrap();
        let mut labelled = ns.clone();
        labelled["metadata"]["labels"] = json!({"bad key!": "x"});
        let err = client.update("", "namespaces", &ns, labelled).await.unwrap_err();
        assert_eq!(err.code, 422, "{err:?}");
        server.shutdown().await;
    }
}
