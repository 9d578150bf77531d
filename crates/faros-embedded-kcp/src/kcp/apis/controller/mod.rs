//! The API export/binding controller: one task watching APIExports, APIBindings,
//! APIResourceSchemas and APIExportEndpointSlices, reconciling what changed.
//!
//! One module per object:
//! - `export`: identity secret `kcp-system/<export>` and `status.identityHash`, `IdentityValid`, the
//!   endpoint slice named like the export (owned by it, so GC removes it with the export), the view.
//! - `binding`: `""` → `Binding` → `Bound` with kcp's conditions, `status.boundResources`, naming
//!   conflicts, permission claims and claim labels.
//! - `deletion`: every instance of the bound resources goes, progress in
//!   `BindingResourceDeleteSuccess`, then the finalizer; the resources leave discovery when the
//!   binding is gone.
//! - `slice`: `status.endpoints` holds the virtual workspace URL while the export has a Bound binding.
//! - `registry`: the consumer cluster's schema-defined resources are the bound resources of all its
//!   bindings. `schemas`: resource definitions from APIResourceSchemas, the bound copies.
//! - `decide`: the decisions of all of them, IO-free and tested as tables.
//!
//! This module holds the event loop and the shared lookups. Writes go through the in-process client
//! (the API's write pipeline), so the controller sees its own writes again as events; every
//! reconcile is idempotent and writes only on change. Nothing here writes to the store directly.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, Stream, StreamExt};
use serde_json::Value;

use super::view::{ExportKey, Index};
use crate::client::Client;
use crate::client::landed;
use crate::state::ServerState;
use crate::store::{Event, EventType, ObjectKey, StoreError, WatchFilter};

mod binding;
mod decide;
mod deletion;
mod export;
mod registry;
#[cfg(test)]
mod restart_tests;
mod schemas;
mod slice;

use crate::objects::meta;
use schemas::CachedDefs;

const GROUP: &str = "apis.kcp.io";
const EXPORTS: &str = "apiexports";
const BINDINGS: &str = "apibindings";
const SCHEMAS: &str = "apiresourceschemas";
const SLICES: &str = "apiexportendpointslices";
/// kcp's shard-internal cluster holding one copy of every bound schema ("bound CRDs", named by the
/// schema's UID), so bound resources stay served when the export's workspace goes away.
pub use crate::names::BOUND_CRDS_CLUSTER;

const API_EXPORT_VALID: &str = "APIExportValid";
const INITIAL_BINDING_COMPLETED: &str = "InitialBindingCompleted";
const BINDING_UP_TO_DATE: &str = "BindingUpToDate";
const BINDING_RESOURCE_DELETE_SUCCESS: &str = "BindingResourceDeleteSuccess";
const IDENTITY_VALID: &str = "IdentityValid";

/// How often deletions blocked by foreign finalizers and slices waiting for the server URL are
/// re-checked (kcp re-checks blocked binding deletions every ~5 s).
const RECHECK: Duration = Duration::from_secs(1);

/// The storage key of a cluster-scoped `apis.kcp.io` object.
pub fn key(resource: &str, cluster: &str, name: &str) -> ObjectKey {
    ObjectKey {
        group: GROUP.into(),
        resource: resource.into(),
        cluster: cluster.into(),
        namespace: String::new(),
        name: name.into(),
    }
}

fn get(state: &ServerState, key: &ObjectKey) -> Option<Value> {
    logged(key, state.store.get(key))
}

/// The stored resourceVersion of `key`, without parsing the object.
fn stored_rv(state: &ServerState, key: &ObjectKey) -> Option<u64> {
    logged(key, state.store.resource_version(key))
}

/// A read's answer; a failed read is logged and treated as absent.
fn logged<T>(key: &ObjectKey, read: Result<Option<T>, StoreError>) -> Option<T> {
    read.unwrap_or_else(|e| {
        tracing::warn!(error = %e, ?key, "apis controller read failed");
        None
    })
}

fn typed<T: serde::de::DeserializeOwned>(obj: &Value) -> Option<T> {
    // From the borrowed value: no copy of the object first.
    match T::deserialize(obj) {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::warn!(error = %e, "apis controller cannot decode a stored object");
            None
        }
    }
}

fn name_of(obj: &Value) -> String {
    meta::name(obj).unwrap_or_default().to_string()
}

/// Objects to reconcile, collected from a batch of events.
#[derive(Default)]
struct Dirty {
    exports: BTreeSet<ExportKey>,
    bindings: BTreeSet<ExportKey>,
    slices: BTreeSet<ExportKey>,
    /// Consumer clusters whose registry entry must be recomputed.
    clusters: BTreeSet<String>,
    /// Exports whose view (consumers, claims) must be recomputed.
    views: BTreeSet<ExportKey>,
    /// One consumer cluster's entry of an export's view (a binding of it changed).
    consumers: BTreeSet<(ExportKey, String)>,
}

impl Dirty {
    fn is_empty(&self) -> bool {
        self.exports.is_empty()
            && self.bindings.is_empty()
            && self.slices.is_empty()
            && self.clusters.is_empty()
            && self.views.is_empty()
            && self.consumers.is_empty()
    }
}

struct Controller {
    state: Arc<ServerState>,
    index: Arc<Index>,
    dirty: Dirty,
    /// Export → bindings referring to it (by resolved export cluster).
    bindings_by_export: HashMap<ExportKey, BTreeSet<ExportKey>>,
    export_of_binding: HashMap<ExportKey, ExportKey>,
    /// Export → endpoint slices pointing at it.
    slices_by_export: HashMap<ExportKey, BTreeSet<ExportKey>>,
    export_of_slice: HashMap<ExportKey, ExportKey>,
    schema_defs: HashMap<ExportKey, CachedDefs>,
    /// Bindings whose deletion waits for foreign finalizers.
    deleting: BTreeSet<ExportKey>,
    /// Bindings waiting for the bound copy of a schema, reconciled again when one is written.
    establishing: BTreeSet<ExportKey>,
    /// Slices waiting for the server URL.
    slices_waiting: BTreeSet<ExportKey>,
}

/// Builds the controller and restores what requests read from it, every consumer cluster's bound
/// resources and claim labels, before returning: a request served before that would find a bound
/// resource missing (404) or write an object without its claim labels. Then runs it until aborted.
pub fn start(state: Arc<ServerState>) -> tokio::task::JoinHandle<()> {
    let mut c = Controller::new(state);
    c.register_all();
    tokio::spawn(run(c))
}

impl Controller {
    fn new(state: Arc<ServerState>) -> Self {
        // A restarted controller rebuilds the index from scratch.
        let index = state.apis.clone();
        index.clear();
        Controller {
            state,
            index,
            dirty: Dirty::default(),
            bindings_by_export: HashMap::new(),
            export_of_binding: HashMap::new(),
            slices_by_export: HashMap::new(),
            export_of_slice: HashMap::new(),
            schema_defs: HashMap::new(),
            deleting: BTreeSet::new(),
            establishing: BTreeSet::new(),
            slices_waiting: BTreeSet::new(),
        }
    }
}

/// Watches and reconciles until aborted, relisting everything when it falls behind.
async fn run(mut c: Controller) {
    loop {
        let from = c.state.store.current_rv();
        let streams = match watches(&c.state, from) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "apis controller cannot watch; retrying");
                tokio::time::sleep(RECHECK).await;
                continue;
            }
        };
        c.resync().await;
        let mut events = futures::stream::select_all(streams);
        let mut tick = tokio::time::interval(RECHECK);
        loop {
            let waiting = !c.deleting.is_empty() || !c.slices_waiting.is_empty() || !c.dirty.is_empty();
            tokio::select! {
                event = events.next() => {
                    let mut healthy = match event {
                        Some(Ok(e)) => { c.observe(&e); true }
                        _ => false,
                    };
                    // Fold everything already queued into one pass.
                    while healthy {
                        match events.next().now_or_never() {
                            Some(Some(Ok(e))) => c.observe(&e),
                            Some(_) => healthy = false,
                            None => break,
                        }
                    }
                    c.process().await;
                    if !healthy {
                        // Fell behind the history (or the store closed): relist everything.
                        break;
                    }
                }
                _ = tick.tick(), if waiting => {
                    c.dirty.bindings.extend(c.deleting.iter().cloned());
                    c.dirty.slices.extend(c.slices_waiting.iter().cloned());
                    c.process().await;
                }
            }
        }
    }
}

type EventStream = std::pin::Pin<Box<dyn Stream<Item = Result<Arc<Event>, StoreError>> + Send>>;

fn watches(state: &ServerState, from: u64) -> Result<Vec<EventStream>, StoreError> {
    // Secrets: an export whose identity Secret appears later is reconciled then (kcp requeues it).
    [
        (GROUP, EXPORTS),
        (GROUP, BINDINGS),
        (GROUP, SCHEMAS),
        (GROUP, SLICES),
        ("", "secrets"),
    ]
    .into_iter()
    .map(|(group, resource)| {
        let filter = WatchFilter {
            group: group.into(),
            resource: resource.into(),
            cluster: None,
            namespace: None,
        };
        state.store.watch(from, filter).map(|s| Box::pin(s) as EventStream)
    })
    .collect()
}

impl Controller {
    /// Every consumer cluster's bound resources and claim labels, from the stored bindings; returns them.
    fn register_all(&mut self) -> Vec<Value> {
        let bindings = self.state.list_all(GROUP, BINDINGS, None, None);
        let clusters: BTreeSet<String> = bindings.iter().map(|b| meta::cluster(b).to_string()).collect();
        for cluster in &clusters {
            self.sync_registry(cluster);
        }
        bindings
    }

    /// Everything dirty (startup and after falling behind). Registrations first, so bound resources
    /// are served again as early as possible after a restart.
    async fn resync(&mut self) {
        let bindings = self.register_all();
        for obj in &bindings {
            self.dirty
                .bindings
                .insert((meta::cluster(obj).to_string(), name_of(obj)));
        }
        for obj in self.state.list_all(GROUP, EXPORTS, None, None) {
            self.dirty
                .exports
                .insert((meta::cluster(&obj).to_string(), name_of(&obj)));
        }
        for obj in self.state.list_all(GROUP, SLICES, None, None) {
            self.dirty
                .slices
                .insert((meta::cluster(&obj).to_string(), name_of(&obj)));
        }
        self.process().await;
    }

    fn observe(&mut self, event: &Event) {
        let k = (event.key.cluster.clone(), event.key.name.clone());
        match event.key.resource.as_str() {
            EXPORTS => {
                self.dirty.exports.insert(k.clone());
                if let Some(bindings) = self.bindings_by_export.get(&k) {
                    self.dirty.bindings.extend(bindings.iter().cloned());
                }
            }
            BINDINGS => {
                self.dirty.bindings.insert(k);
            }
            SCHEMAS if k.0 == BOUND_CRDS_CLUSTER => {
                self.dirty.bindings.extend(self.establishing.iter().cloned());
            }
            SCHEMAS => {
                self.schema_defs.remove(&k);
                // Exports of that cluster using the schema, and through them their bindings.
                for export in self.state.list_all(GROUP, EXPORTS, Some(&k.0), None) {
                    let uses = export
                        .pointer("/spec/resources")
                        .and_then(Value::as_array)
                        .is_some_and(|r| r.iter().any(|r| r.get("schema").and_then(Value::as_str) == Some(&k.1)));
                    if uses {
                        let ek = (k.0.clone(), name_of(&export));
                        if let Some(bindings) = self.bindings_by_export.get(&ek) {
                            self.dirty.bindings.extend(bindings.iter().cloned());
                        }
                        self.dirty.exports.insert(ek);
                    }
                }
            }
            "secrets" if event.key.group.is_empty() => {
                for export in self.state.list_all(GROUP, EXPORTS, Some(&k.0), None) {
                    let Some(reference) = export.pointer("/spec/identity/secretRef") else {
                        continue;
                    };
                    let export_name = name_of(&export);
                    let named = |f: &str| reference.get(f).and_then(Value::as_str);
                    let (name, ns) = (
                        named("name").unwrap_or(export_name.as_str()),
                        named("namespace").unwrap_or(crate::kcp::apis::IDENTITY_NAMESPACE),
                    );
                    if name == k.1 && ns == event.key.namespace {
                        self.dirty.exports.insert((k.0.clone(), name_of(&export)));
                    }
                }
            }
            SLICES => {
                if event.event_type == EventType::Deleted {
                    self.forget_slice(&k);
                } else {
                    self.dirty.slices.insert(k);
                }
            }
            _ => {}
        }
    }

    async fn process(&mut self) {
        // A pass can dirty more (a binding bound → its export's view → its slices); a few rounds
        // settle it, and anything left waits for the next event or tick.
        for _ in 0..8 {
            if self.dirty.is_empty() {
                return;
            }
            let dirty = std::mem::take(&mut self.dirty);
            for (cluster, name) in &dirty.exports {
                self.reconcile_export(cluster, name).await;
            }
            for (cluster, name) in &dirty.bindings {
                self.reconcile_binding(cluster, name).await;
            }
            for cluster in &dirty.clusters {
                self.sync_registry(cluster);
            }
            for export in &dirty.views {
                self.refresh_view(export);
            }
            for (export, cluster) in &dirty.consumers {
                if !dirty.views.contains(export) {
                    self.refresh_consumer(export, cluster, None);
                }
            }
            for (cluster, name) in &dirty.slices {
                self.reconcile_slice(cluster, name).await;
            }
        }
    }

    fn client(&self) -> Client<'_> {
        Client::system(&self.state)
    }

    fn own_path(&self, cluster: &str) -> String {
        self.state
            .clusters
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(cluster)
            .map(|c| c.path.clone())
            .unwrap_or_else(|| cluster.to_string())
    }

    /// The logical cluster of an export reference made from `cluster`.
    fn resolve(&self, cluster: &str, path: &str) -> Option<String> {
        if path.is_empty() {
            return Some(cluster.to_string());
        }
        self.state
            .clusters
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .resolve(path)
            .map(String::from)
    }

    // ----- writes --------------------------------------------------------------------------------

    /// Replaces `status` of a stored object when it differs; returns the stored result.
    async fn write_status(&self, resource: &str, obj: &Value, status: Value) -> Option<Value> {
        let status = match status {
            Value::Object(m) if m.is_empty() => Value::Null,
            s => s,
        };
        if obj.get("status").cloned().unwrap_or(Value::Null) == status {
            return None;
        }
        let mut updated = obj.clone();
        if let Some(map) = updated.as_object_mut() {
            if status.is_null() {
                map.remove("status");
            } else {
                map.insert("status".into(), status);
            }
        }
        landed(self.client().update_status(GROUP, resource, obj, updated).await)
    }
}
