//! Garbage collection by ownerReferences within one logical cluster (kcp runs the collector per
//! workspace): Background deletion of dependents whose owners are all gone, plus the `orphan` and
//! `foregroundDeletion` finalizers.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use crate::client::Client;
use crate::client::landed;
use crate::objects::meta;
use crate::registry::ResourceDef;
use crate::state::ServerState;
use crate::store::{Event, EventType, ObjectKey};

/// Owner (cluster, uid) → dependents' keys.
#[derive(Default)]
pub struct Collector {
    dependents: HashMap<(String, String), BTreeSet<ObjectKey>>,
}

/// How often a collection is retried when the dependent changed between its read and its delete.
const COLLECT_ATTEMPTS: usize = 5;

fn owner_uids(obj: &Value) -> Vec<String> {
    meta::owner_references(obj)
        .iter()
        .filter_map(|r| r.get("uid").and_then(Value::as_str).map(String::from))
        .collect()
}

impl Collector {
    fn index(&mut self, key: &ObjectKey, obj: Option<&Value>, prev: Option<&Value>) {
        for uid in prev.map(owner_uids).unwrap_or_default() {
            if let Some(set) = self.dependents.get_mut(&(key.cluster.clone(), uid.clone())) {
                set.remove(key);
                if set.is_empty() {
                    self.dependents.remove(&(key.cluster.clone(), uid));
                }
            }
        }
        for uid in obj.map(owner_uids).unwrap_or_default() {
            self.dependents
                .entry((key.cluster.clone(), uid))
                .or_default()
                .insert(key.clone());
        }
    }

    /// Indexes every stored object that has owners (startup).
    pub fn rebuild(&mut self, state: &ServerState) {
        for def in all_defs(state) {
            for obj in objects_with(state, &def, None, "\"ownerReferences\"") {
                if !owner_uids(&obj).is_empty() {
                    let key = meta::key_of(&def.group, &def.resource, &obj);
                    self.index(&key, Some(&obj), None);
                }
            }
        }
    }

    /// Finishes collection interrupted by a restart.
    pub async fn resume(&mut self, state: &ServerState) {
        let dependents: Vec<ObjectKey> = self.dependents.values().flatten().cloned().collect();
        for key in dependents {
            self.collect_if_orphaned(state, &key).await;
        }
        for def in all_defs(state) {
            for obj in objects_with(state, &def, None, "\"deletionTimestamp\"") {
                if meta::is_deleting(&obj) {
                    let key = meta::key_of(&def.group, &def.resource, &obj);
                    self.process_finalizers(state, &key, &obj).await;
                }
            }
        }
    }

    pub async fn observe(&mut self, state: &ServerState, event: &Arc<Event>) {
        let key = &event.key;
        match event.event_type {
            EventType::Deleted => {
                self.index(key, None, event.prev.as_deref().or(Some(&event.object)));
                let uid = meta::uid(&event.object).unwrap_or_default().to_string();
                let deps: Vec<ObjectKey> = self
                    .dependents
                    .get(&(key.cluster.clone(), uid))
                    .map(|s| s.iter().cloned().collect())
                    .unwrap_or_default();
                for dep in deps {
                    self.collect_if_orphaned(state, &dep).await;
                }
                // A foreground-deleting owner may have been waiting for this dependent.
                for owner_uid in owner_uids(&event.object) {
                    self.recheck_owner(state, &key.cluster, &owner_uid).await;
                }
            }
            _ => {
                self.index(key, Some(&event.object), event.prev.as_deref());
                // A dependent written with owners that are already gone (a dangling reference) is
                // collected as Kubernetes' collector does when it first sees it.
                let owners = owner_uids(&event.object);
                if !owners.is_empty() && event.prev.as_deref().map(owner_uids) != Some(owners) {
                    self.collect_if_orphaned(state, key).await;
                }
                if meta::is_deleting(&event.object) {
                    self.process_finalizers(state, key, &event.object).await;
                }
            }
        }
    }

    /// Deletes `dep` when none of its owners exist any more.
    ///
    /// The delete is conditional on the state read, so a dependent another writer changed in
    /// between (a controller updating its status as the owner goes) is read and judged again:
    /// nothing else would bring it back here, since later events of a dependent whose owners did
    /// not change do not look at its owners.
    async fn collect_if_orphaned(&mut self, state: &ServerState, dep: &ObjectKey) {
        for _ in 0..COLLECT_ATTEMPTS {
            let Ok(Some(obj)) = state.store.get(dep) else { return };
            let refs = meta::owner_references(&obj);
            if refs.is_empty() || refs.iter().any(|r| owner_exists(state, dep, r)) {
                return;
            }
            match Client::system(state)
                .delete(&dep.group, &dep.resource, &obj, Some("Background"))
                .await
            {
                Err(e) if e.code == 409 => continue,
                other => {
                    landed(other);
                    return;
                }
            }
        }
        tracing::warn!(cluster = %dep.cluster, resource = %dep.resource, name = %dep.name, "orphaned dependent kept changing; not collected");
    }

    async fn recheck_owner(&mut self, state: &ServerState, cluster: &str, owner_uid: &str) {
        // Owners are found through their dependents' references; scan the few kinds with deletion pending.
        for def in all_defs(state) {
            for obj in objects_with(state, &def, Some(cluster), "\"deletionTimestamp\"") {
                if meta::uid(&obj) == Some(owner_uid) && meta::is_deleting(&obj) {
                    let key = meta::key_of(&def.group, &def.resource, &obj);
                    self.process_finalizers(state, &key, &obj).await;
                    return;
                }
            }
        }
    }

    /// Handles `orphan` and `foregroundDeletion` on an object being deleted.
    async fn process_finalizers(&mut self, state: &ServerState, key: &ObjectKey, obj: &Value) {
        let finalizers = meta::finalizers(obj);
        let uid = meta::uid(obj).unwrap_or_default().to_string();
        let deps: Vec<ObjectKey> = self
            .dependents
            .get(&(key.cluster.clone(), uid.clone()))
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        let drop_finalizer = |name: &str| {
            let mut updated = obj.clone();
            let remaining: Vec<String> = finalizers.iter().filter(|f| *f != name).cloned().collect();
            updated["metadata"]["finalizers"] = serde_json::json!(remaining);
            updated
        };
        if finalizers.iter().any(|f| f == "orphan") {
            for dep in &deps {
                let Ok(Some(d)) = state.store.get(dep) else { continue };
                let mut updated = d.clone();
                if let Some(refs) = updated
                    .pointer_mut("/metadata/ownerReferences")
                    .and_then(Value::as_array_mut)
                {
                    refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid.as_str()));
                }
                landed(
                    Client::system(state)
                        .update(&dep.group, &dep.resource, &d, updated)
                        .await,
                );
            }
            let updated = drop_finalizer("orphan");
            landed(
                Client::system(state)
                    .update(&key.group, &key.resource, obj, updated)
                    .await,
            );
        } else if finalizers.iter().any(|f| f == "foregroundDeletion") {
            let mut waiting = false;
            for dep in &deps {
                let Ok(Some(d)) = state.store.get(dep) else { continue };
                waiting = true;
                landed(
                    Client::system(state)
                        .delete(&dep.group, &dep.resource, &d, Some("Background"))
                        .await,
                );
            }
            if !waiting {
                let updated = drop_finalizer("foregroundDeletion");
                landed(
                    Client::system(state)
                        .update(&key.group, &key.resource, obj, updated)
                        .await,
                );
            }
        }
    }
}

/// The stored objects of `def` whose text holds `member` (a quoted JSON member name): the scans here
/// look for a few objects among all of them, and parsing only those keeps a restart with many
/// stored objects from parsing every one of them twice. A storage failure reads as none, as for
/// `ServerState::list_all`.
fn objects_with(state: &ServerState, def: &ResourceDef, cluster: Option<&str>, member: &str) -> Vec<Value> {
    state
        .store
        .objects_containing(&def.group, &def.resource, cluster, member)
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, group = %def.group, resource = %def.resource, "listing stored objects failed");
            Vec::new()
        })
}

fn all_defs(state: &ServerState) -> Vec<Arc<ResourceDef>> {
    state
        .registry
        .all_resources()
        .iter()
        .filter(|d| !d.create_only)
        .cloned()
        .collect()
}

/// Whether the owner an ownerReference names still exists with that uid.
fn owner_exists(state: &ServerState, dep: &ObjectKey, reference: &Value) -> bool {
    let s = |k: &str| reference.get(k).and_then(Value::as_str).unwrap_or_default();
    let group = s("apiVersion").rsplit_once('/').map(|(g, _)| g).unwrap_or_default();
    let Some(def) = state
        .registry
        .resources(&dep.cluster)
        .into_iter()
        .find(|d| d.group == group && d.kind == s("kind"))
    else {
        // An owner of a kind this cluster does not serve cannot be verified; keep the dependent.
        return true;
    };
    let key = ObjectKey {
        group: def.group.clone(),
        resource: def.resource.clone(),
        cluster: dep.cluster.clone(),
        namespace: if def.namespaced {
            dep.namespace.clone()
        } else {
            String::new()
        },
        name: s("name").into(),
    };
    match state.store.get(&key) {
        Ok(Some(owner)) => meta::uid(&owner) == Some(s("uid")),
        Ok(None) => false,
        Err(_) => true,
    }
}
