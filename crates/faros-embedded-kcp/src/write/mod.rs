//! The one write pipeline: every create, update and delete, whether it comes over HTTP (`api`) or
//! from an in-process controller (`client`), runs the same steps in the same order — metadata rules
//! (`objects`), the unknown-field policy, pruning, schema defaulting and validation, namespace
//! checks, managedFields, kcp admission, the cluster annotation — and commits through the store
//! with a resourceVersion precondition, so concurrent writers get 409 Conflict instead of lost
//! updates. The commit hook of [`ServerState::committed`] then runs for every committed event.
//!
//! - `checks`: the checks and defaults applied to an object before it is stored (schema pruning and
//!   validation, the namespace check, the call into kcp admission, the cluster annotation).
//! - `create`, `update`, `delete`: one verb each.
//! - `claim`: the label selector of a permission claim, for writes through a virtual workspace.
//!
//! What it must not do: authorize (callers do: RBAC for HTTP requests; in-process writers act as the
//! system), or know about HTTP (bodies, content types, responses belong to `api`).

pub(crate) mod checks;
pub(crate) mod claim;
pub(crate) mod create;
pub(crate) mod delete;
pub(crate) mod update;

use std::sync::Arc;

use bytes::Bytes;

use faros_core::status::Status;
use serde_json::Value;

use crate::auth::UserInfo;
use crate::registry::ResourceDef;
use crate::state::ServerState;
use crate::store::{Event, ObjectKey, StoreError, WriteOp};

/// What to do with fields the schema does not know (`fieldValidation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

/// Who writes where, and how.
pub struct Writer<'a> {
    pub state: &'a ServerState,
    /// The actor: kcp admission checks (bind permission, workspace types) are made for this user.
    pub user: &'a UserInfo,
    /// The logical cluster name.
    pub cluster: &'a str,
    /// Unknown-field policy. An invalid request parameter fails the write only where the policy is
    /// consulted (when unknown fields are present), like kube-apiserver.
    pub field_validation: Result<FieldValidation, Status>,
    /// Dry run: everything but the commit. An invalid parameter fails the write where it is consulted.
    pub dry_run: Result<bool, Status>,
    /// Set for writes through an APIExport virtual workspace under a claim with a selector.
    pub claim: Option<&'a claim::ClaimGuard>,
}

impl Writer<'_> {
    /// The storage key of `name` of `def` in the writer's cluster.
    pub fn key(&self, def: &ResourceDef, namespace: Option<&str>, name: &str) -> ObjectKey {
        def.key(self.cluster, namespace, name)
    }

    /// The stored object, or 404.
    pub fn load(&self, def: &ResourceDef, ns: Option<&str>, name: &str) -> Result<Value, Status> {
        let key = self.key(def, ns, name);
        self.state
            .store
            .get(&key)
            .map_err(|e| store_status(e, def, name))?
            .ok_or_else(|| Status::not_found(&def.group, &def.resource, name))
    }

    /// Commits one write and runs the commit hook; returns the stored object.
    async fn commit(&self, def: &ResourceDef, name: &str, op: WriteOp) -> Result<Stored, Status> {
        let committed = self
            .state
            .store
            .write_committed(vec![op])
            .await
            .map_err(|e| store_status(e, def, name))?;
        let stored = match committed.first() {
            Some(c) => Stored {
                object: c.event.object.clone(),
                json: c.json(),
            },
            None => Stored::new(Value::Null),
        };
        let events: Vec<Event> = committed.into_iter().map(|c| c.event).collect();
        self.state.committed(&events);
        Ok(stored)
    }
}

/// An object as a write left it: parsed, shared with its event (an answer used to deep-copy every
/// object written), and, when the write stored it, the JSON text it was stored as, which an answer
/// sends as it is instead of serializing the same object again.
#[derive(Clone, Debug)]
pub struct Stored {
    pub object: Arc<Value>,
    json: Option<Bytes>,
}

impl Stored {
    /// An object no commit wrote (a dry run's, a deletion's last state).
    pub fn new(object: Value) -> Self {
        Self {
            object: Arc::new(object),
            json: None,
        }
    }

    /// The object's JSON text: as stored, or serialized.
    pub fn json(&self) -> Bytes {
        match &self.json {
            Some(json) => json.clone(),
            None => serde_json::to_vec(&*self.object).unwrap_or_default().into(),
        }
    }

    /// The object, copied unless this was its last holder.
    pub fn into_value(self) -> Value {
        Arc::unwrap_or_clone(self.object)
    }
}

impl std::ops::Deref for Stored {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.object
    }
}

/// Maps a store error onto the Kubernetes Status for this resource.
pub fn store_status(err: StoreError, def: &ResourceDef, name: &str) -> Status {
    match err {
        StoreError::AlreadyExists(k) => Status::already_exists(&def.group, &def.resource, &k.name),
        StoreError::NotFound(k) => Status::not_found(&def.group, &def.resource, &k.name),
        StoreError::Conflict { key, .. } => Status::conflict(&def.group, &def.resource, &key.name),
        StoreError::Expired { .. } => Status::expired(
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
        ),
        StoreError::TooOld { requested, oldest } => {
            Status::expired(format!("too old resource version: {requested} ({oldest})"))
        }
        StoreError::InvalidContinue(m) => Status::bad_request(format!("invalid continue token: {m}")),
        other => {
            tracing::error!(error = %other, resource = %def.resource, name, "storage failure");
            Status::internal(format!("storage failure: {other}"))
        }
    }
}
