//! The API export/binding controller: one task watching APIExports, APIBindings,
//! APIResourceSchemas and APIExportEndpointSlices, reconciling what changed.
//!
//! - Exports: identity secret `kcp-system/<export>` and `status.identityHash`, `IdentityValid`, the
//!   endpoint slice named like the export (owned by it, so GC removes it with the export).
//! - Bindings: `""` → `Binding` → `Bound` with kcp's conditions, `status.boundResources`, naming
//!   conflicts, permission claims and claim labels; the consumer cluster's schema-defined resources
//!   in the registry are the bound resources of all its bindings.
//! - Binding deletion: every instance of the bound resources goes, progress in
//!   `BindingResourceDeleteSuccess`, then the finalizer; the resources leave discovery when the
//!   binding is gone.
//! - Slices: `status.endpoints` holds the virtual workspace URL while the export has a Bound binding.
//!
//! Writes go through the in-process client (the API's write pipeline), so the controller sees its own writes
//! again as events; every reconcile is idempotent and writes only on change.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use faros_core::kcp::apis::v1alpha1::{APIExportEndpoint, APIExportEndpointSlice};
use faros_core::kcp::apis::v1alpha2::{
    APIBinding, APIBindingPhase, APIExport, BoundAPIResource, BoundAPIResourceSchema,
};
use faros_core::kcp::{ANNOTATION_SKIP_ENDPOINTSLICE, Condition, ConditionStatus};
use futures::{FutureExt, Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Value, json};

use super::claims;
use super::conditions::{self, Mark, SEVERITY_ERROR, SEVERITY_INFO, SEVERITY_WARNING};
use super::view::{ClaimLabel, ExportKey, Index};
use super::{BINDING_FINALIZER, IDENTITY_NAMESPACE};
use crate::client::Client;
use crate::controllers::{landed, list_all, rv};
use crate::kcp::{BoundConsumer, ExportView};
use crate::objects;
use crate::registry::ResourceDef;
use crate::state::ServerState;
use crate::store::{Event, EventType, ObjectKey, StoreError, WatchFilter};

const GROUP: &str = "apis.kcp.io";
const EXPORTS: &str = "apiexports";
const BINDINGS: &str = "apibindings";
const SCHEMAS: &str = "apiresourceschemas";
const SLICES: &str = "apiexportendpointslices";
/// kcp's shard-internal cluster holding one copy of every bound schema ("bound CRDs", named by the
/// schema's UID), so bound resources stay served when the export's workspace goes away.
pub const BOUND_CRDS_CLUSTER: &str = "system:bound-crds";

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
    match state.store.get(key) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(error = %e, ?key, "apis controller read failed");
            None
        }
    }
}

fn typed<T: serde::de::DeserializeOwned>(obj: &Value) -> Option<T> {
    match serde_json::from_value(obj.clone()) {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::warn!(error = %e, "apis controller cannot decode a stored object");
            None
        }
    }
}

fn name_of(obj: &Value) -> String {
    objects::meta_str(obj, "name").unwrap_or_default().to_string()
}

/// Sets `labels` for every claim on `obj`: present when the claim's selector matches, absent when not.
pub fn apply_claim_labels(obj: &mut Value, claims: &[ClaimLabel]) -> bool {
    let mut changed = false;
    for c in claims {
        let wanted = claims::selects(&c.claim, obj);
        let meta = objects::meta_mut(obj);
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        let Some(labels) = labels.as_object_mut() else { continue };
        let current = labels.get(&c.label_key).and_then(Value::as_str);
        if wanted && current != Some(c.label_value.as_str()) {
            labels.insert(c.label_key.clone(), Value::String(c.label_value.clone()));
            changed = true;
        } else if !wanted && current == Some(c.label_value.as_str()) {
            labels.remove(&c.label_key);
            changed = true;
        }
        if labels.is_empty() {
            meta.remove("labels");
        }
    }
    changed
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
}

impl Dirty {
    fn is_empty(&self) -> bool {
        self.exports.is_empty()
            && self.bindings.is_empty()
            && self.slices.is_empty()
            && self.clusters.is_empty()
            && self.views.is_empty()
    }
}

/// Resource definitions built from one APIResourceSchema, cached by its resourceVersion.
struct CachedDefs {
    rv: Option<u64>,
    uid: String,
    defs: Vec<ResourceDef>,
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
    /// Slices waiting for the server URL.
    slices_waiting: BTreeSet<ExportKey>,
}

/// Runs until aborted.
pub async fn run(state: Arc<ServerState>) {
    // A restarted controller rebuilds the index from scratch.
    let index = state.apis.clone();
    index.clear();
    let mut c = Controller {
        state: state.clone(),
        index,
        dirty: Dirty::default(),
        bindings_by_export: HashMap::new(),
        export_of_binding: HashMap::new(),
        slices_by_export: HashMap::new(),
        export_of_slice: HashMap::new(),
        schema_defs: HashMap::new(),
        deleting: BTreeSet::new(),
        slices_waiting: BTreeSet::new(),
    };
    loop {
        let from = state.store.current_rv();
        let streams = match watches(&state, from) {
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
    [EXPORTS, BINDINGS, SCHEMAS, SLICES]
        .into_iter()
        .map(|resource| {
            let filter = WatchFilter {
                group: GROUP.into(),
                resource: resource.into(),
                cluster: None,
                namespace: None,
            };
            state.store.watch(from, filter).map(|s| Box::pin(s) as EventStream)
        })
        .collect()
}

impl Controller {
    /// Everything dirty (startup and after falling behind). Registrations first, so bound resources
    /// are served again as early as possible after a restart.
    async fn resync(&mut self) {
        let bindings = list_all(&self.state, GROUP, BINDINGS, None, None);
        let clusters: BTreeSet<String> = bindings.iter().map(cluster_of).collect();
        for cluster in &clusters {
            self.sync_registry(cluster);
        }
        for obj in &bindings {
            self.dirty.bindings.insert((cluster_of(obj), name_of(obj)));
        }
        for obj in list_all(&self.state, GROUP, EXPORTS, None, None) {
            self.dirty.exports.insert((cluster_of(&obj), name_of(&obj)));
        }
        for obj in list_all(&self.state, GROUP, SLICES, None, None) {
            self.dirty.slices.insert((cluster_of(&obj), name_of(&obj)));
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
            SCHEMAS => {
                self.schema_defs.remove(&k);
                // Exports of that cluster using the schema, and through them their bindings.
                for export in list_all(&self.state, GROUP, EXPORTS, Some(&k.0), None) {
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

    // ----- schemas -------------------------------------------------------------------------------

    /// The resource definitions of schema `name` in `cluster` (served versions, storage first).
    fn schema_defs(&mut self, cluster: &str, name: &str) -> Result<(String, Vec<ResourceDef>, String), String> {
        let Some(obj) = get(&self.state, &key(SCHEMAS, cluster, name)) else {
            return Err(format!("APIResourceSchema {name:?} not found"));
        };
        let k = (cluster.to_string(), name.to_string());
        let current_rv = rv(&obj);
        if let Some(cached) = self.schema_defs.get(&k).filter(|c| c.rv == current_rv) {
            let storage = cached.defs.first().map(|d| d.version.clone()).unwrap_or_default();
            return Ok((cached.uid.clone(), cached.defs.clone(), storage));
        }
        let spec = obj.get("spec").cloned().unwrap_or_default();
        let versions = spec
            .get("versions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut ordered: Vec<&Value> = versions
            .iter()
            .filter(|v| v.get("served").and_then(Value::as_bool) != Some(false))
            .collect();
        ordered.sort_by_key(|v| v.get("storage").and_then(Value::as_bool) != Some(true));
        if ordered.is_empty() {
            return Err(format!("APIResourceSchema {name:?} serves no version"));
        }
        let mut defs = Vec::new();
        for v in ordered {
            defs.push(ResourceDef::from_crd_like(&spec, v, "/schema").map_err(|e| e.to_string())?);
        }
        let uid = objects::meta_str(&obj, "uid").unwrap_or_default().to_string();
        let storage = defs.first().map(|d| d.version.clone()).unwrap_or_default();
        self.schema_defs.insert(
            k,
            CachedDefs {
                rv: current_rv,
                uid: uid.clone(),
                defs: defs.clone(),
            },
        );
        Ok((uid, defs, storage))
    }

    /// Copies schema `name` of `export_cluster` to [`BOUND_CRDS_CLUSTER`] as `uid`, once: schemas
    /// are immutable in kcp, so the copy never needs updating.
    async fn ensure_bound_crd(&self, export_cluster: &str, name: &str, uid: &str) {
        if uid.is_empty() || get(&self.state, &key(SCHEMAS, BOUND_CRDS_CLUSTER, uid)).is_some() {
            return;
        }
        let Some(schema) = get(&self.state, &key(SCHEMAS, export_cluster, name)) else {
            return;
        };
        let copy = json!({
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIResourceSchema",
            "metadata": {
                "name": uid,
                "annotations": {
                    "apis.kcp.io/bound-crd": "",
                    "apis.kcp.io/schema-cluster": export_cluster,
                    "apis.kcp.io/schema-name": name,
                },
            },
            "spec": schema.get("spec").cloned().unwrap_or_default(),
        });
        if let Err(e) = crate::client::Client::system(&self.state)
            .create(BOUND_CRDS_CLUSTER, GROUP, SCHEMAS, copy)
            .await
        {
            tracing::warn!(error = %e, schema = name, "cannot record the bound schema");
        }
    }

    // ----- exports -------------------------------------------------------------------------------

    async fn reconcile_export(&mut self, cluster: &str, name: &str) {
        let ek = (cluster.to_string(), name.to_string());
        let Some(obj) = get(&self.state, &key(EXPORTS, cluster, name)) else {
            self.index.set_export(ek.clone(), None);
            self.dirty
                .slices
                .extend(self.slices_by_export.get(&ek).cloned().unwrap_or_default());
            return;
        };
        let Some(export) = typed::<APIExport>(&obj) else { return };
        let secret_ref = export.spec.identity.as_ref().and_then(|i| i.secret_ref.clone());
        let Some(secret_ref) = secret_ref else {
            self.create_identity(cluster, name, &obj).await;
            return;
        };
        let secret_ns = secret_ref
            .namespace
            .clone()
            .unwrap_or_else(|| IDENTITY_NAMESPACE.into());
        let secret_name = secret_ref.name.clone().unwrap_or_else(|| name.to_string());
        let secret = get(
            &self.state,
            &ObjectKey {
                group: String::new(),
                resource: "secrets".into(),
                cluster: cluster.into(),
                namespace: secret_ns.clone(),
                name: secret_name.clone(),
            },
        );
        let hash = secret
            .as_ref()
            .and_then(|s| s.pointer("/data/key"))
            .and_then(Value::as_str)
            .and_then(|k| base64::engine::general_purpose::STANDARD.decode(k).ok())
            .filter(|k| !k.is_empty())
            .map(|k| super::hash::identity_hash(&k));
        let mut status = export.status.clone().unwrap_or_default();
        let mut conds = status.conditions.take().unwrap_or_default();
        let now = conditions::now();
        let current = status.identity_hash.clone().filter(|h| !h.is_empty());
        let mark = match (&hash, &current) {
            (None, _) if secret.is_none() => Mark::false_(
                IDENTITY_VALID,
                "IdentityVerificationFailed",
                SEVERITY_ERROR,
                format!("secrets \"{secret_name}\" not found"),
            ),
            (None, _) => Mark::false_(
                IDENTITY_VALID,
                "IdentityVerificationFailed",
                SEVERITY_ERROR,
                "secret is missing data.key",
            ),
            (Some(h), Some(cur)) if h != cur => Mark::false_(
                IDENTITY_VALID,
                "IdentityVerificationFailed",
                SEVERITY_ERROR,
                format!("hash mismatch: identity secret hash {h} must match status.identityHash {cur}"),
            ),
            (Some(h), _) => {
                status.identity_hash = Some(h.clone());
                Mark::true_(IDENTITY_VALID)
            }
        };
        conditions::set(&mut conds, mark, &now);
        status.conditions = Some(conds);
        self.write_status(EXPORTS, &obj, serde_json::to_value(&status).unwrap_or_default())
            .await;
        let skip = obj
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(ANNOTATION_SKIP_ENDPOINTSLICE))
            .is_some();
        if !skip && get(&self.state, &key(SLICES, cluster, name)).is_none() {
            let path = obj
                .pointer("/metadata/annotations/kcp.io~1path")
                .and_then(Value::as_str)
                .map(String::from)
                .unwrap_or_else(|| self.own_path(cluster));
            let slice = json!({
                "apiVersion": "apis.kcp.io/v1alpha1",
                "kind": "APIExportEndpointSlice",
                "metadata": {"name": name, "ownerReferences": [{
                    "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
                    "name": name, "uid": objects::meta_str(&obj, "uid").unwrap_or_default()}]},
                "spec": {"export": {"name": name, "path": path}},
            });
            if let Err(e) = crate::client::Client::system(&self.state)
                .create(cluster, GROUP, SLICES, slice)
                .await
            {
                tracing::debug!(error = %e, cluster, name, "endpoint slice not created");
            }
        }
        self.dirty.views.insert(ek);
    }

    /// kcp's first pass on an export without identity: namespace, secret with a random key, then the
    /// spec's `identity.secretRef` (the hash follows on the next pass).
    async fn create_identity(&mut self, cluster: &str, name: &str, obj: &Value) {
        let ns_key = ObjectKey {
            group: String::new(),
            resource: "namespaces".into(),
            cluster: cluster.into(),
            namespace: String::new(),
            name: IDENTITY_NAMESPACE.into(),
        };
        if get(&self.state, &ns_key).is_none() {
            let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": IDENTITY_NAMESPACE}});
            if let Err(e) = crate::client::Client::system(&self.state)
                .create(cluster, "", "namespaces", ns)
                .await
            {
                tracing::debug!(error = %e, cluster, "identity namespace not created");
            }
        }
        let secret_key = ObjectKey {
            group: String::new(),
            resource: "secrets".into(),
            cluster: cluster.into(),
            namespace: IDENTITY_NAMESPACE.into(),
            name: name.into(),
        };
        if get(&self.state, &secret_key).is_none() {
            let mut raw = [0u8; 32];
            rand::RngCore::fill_bytes(&mut rand::rng(), &mut raw);
            let key_text = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw);
            let secret = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": name, "namespace": IDENTITY_NAMESPACE},
                "data": {"key": base64::engine::general_purpose::STANDARD.encode(key_text.as_bytes())}});
            if let Err(e) = crate::client::Client::system(&self.state)
                .create(cluster, "", "secrets", secret)
                .await
            {
                tracing::warn!(error = %e, cluster, name, "identity secret not created");
                return;
            }
        }
        let mut updated = obj.clone();
        updated["spec"]["identity"] = json!({"secretRef": {"namespace": IDENTITY_NAMESPACE, "name": name}});
        let generation = obj.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
        objects::meta_mut(&mut updated).insert("generation".into(), json!(generation + 1));
        landed(self.client().update(GROUP, EXPORTS, obj, updated).await);
    }

    /// Recomputes what the virtual workspace serves for an export.
    fn refresh_view(&mut self, ek: &ExportKey) {
        let Some(obj) = get(&self.state, &key(EXPORTS, &ek.0, &ek.1)) else {
            self.index.set_export(ek.clone(), None);
            return;
        };
        let Some(export) = typed::<APIExport>(&obj) else { return };
        let Some(identity) = export.identity_hash().map(String::from) else {
            self.index.set_export(ek.clone(), None);
            return;
        };
        let mut resources = Vec::new();
        for r in export.spec.resources.clone().unwrap_or_default() {
            if !r.is_crd() {
                continue;
            }
            if let Ok((_, defs, _)) = self.schema_defs(&ek.0, &r.schema) {
                resources.extend(defs.into_iter().map(Arc::new));
            }
        }
        let own = own_resources(&export);
        let mut bindings = BTreeMap::new();
        for (bc, bn) in self.bindings_by_export.get(ek).cloned().unwrap_or_default() {
            let Some(bobj) = get(&self.state, &key(BINDINGS, &bc, &bn)) else {
                continue;
            };
            let Some(binding) = typed::<APIBinding>(&bobj) else {
                continue;
            };
            if binding.phase() != Some(&APIBindingPhase::Bound) || bindings.contains_key(&bc) {
                continue;
            }
            let eval = claims::evaluate(
                export.spec.permission_claims.as_deref().unwrap_or_default(),
                binding.spec.permission_claims.as_deref().unwrap_or_default(),
                &own,
            );
            bindings.insert(
                bc,
                BoundConsumer {
                    binding_name: bn,
                    claims: eval.accepted,
                },
            );
        }
        let had_consumers = self.index.export(ek).is_some_and(|v| !v.bindings.is_empty());
        let has_consumers = !bindings.is_empty();
        self.index.set_export(
            ek.clone(),
            Some(ExportView {
                export_cluster: ek.0.clone(),
                export_name: ek.1.clone(),
                identity_hash: identity,
                resources,
                bindings,
            }),
        );
        if had_consumers != has_consumers || self.slices_by_export.get(ek).is_none_or(BTreeSet::is_empty) {
            // The slice named like the export may not be indexed yet.
            self.dirty.slices.insert(ek.clone());
        }
        self.dirty
            .slices
            .extend(self.slices_by_export.get(ek).cloned().unwrap_or_default());
    }

    // ----- endpoint slices -----------------------------------------------------------------------

    fn forget_slice(&mut self, sk: &ExportKey) {
        if let Some(ek) = self.export_of_slice.remove(sk)
            && let Some(set) = self.slices_by_export.get_mut(&ek)
        {
            set.remove(sk);
        }
        self.slices_waiting.remove(sk);
    }

    async fn reconcile_slice(&mut self, cluster: &str, name: &str) {
        let sk = (cluster.to_string(), name.to_string());
        let Some(obj) = get(&self.state, &key(SLICES, cluster, name)) else {
            self.forget_slice(&sk);
            return;
        };
        if self.owner_export_gone(cluster, &obj) {
            // The garbage collector removes it; a status write now would only race it.
            return;
        }
        let Some(slice) = typed::<APIExportEndpointSlice>(&obj) else {
            return;
        };
        let path = slice.spec.export.path.clone().unwrap_or_default();
        let export_name = slice.spec.export.name.clone();
        let export_cluster = self.resolve(cluster, &path);
        if let Some(ec) = &export_cluster {
            let ek = (ec.clone(), export_name.clone());
            if self.export_of_slice.get(&sk) != Some(&ek) {
                self.forget_slice(&sk);
                self.export_of_slice.insert(sk.clone(), ek.clone());
                self.slices_by_export.entry(ek).or_default().insert(sk.clone());
            }
        }
        let export_exists = export_cluster
            .as_deref()
            .is_some_and(|ec| get(&self.state, &key(EXPORTS, ec, &export_name)).is_some());
        let mut status = slice.status.clone().unwrap_or_default();
        let mut conds = status.conditions.take().unwrap_or_default();
        let now = conditions::now();
        let shown_path = if path.is_empty() {
            self.own_path(cluster)
        } else {
            path.clone()
        };
        let mark = if export_exists {
            Mark::true_(API_EXPORT_VALID)
        } else {
            Mark::false_(
                API_EXPORT_VALID,
                "APIExportNotFound",
                SEVERITY_ERROR,
                format!("APIExport {shown_path}|{export_name} not found"),
            )
        };
        conditions::set(&mut conds, mark, &now);
        status.conditions = Some(conds);
        let consumers = export_cluster
            .as_ref()
            .and_then(|ec| self.index.export(&(ec.clone(), export_name.clone())))
            .is_some_and(|v| !v.bindings.is_empty());
        let url = export_cluster
            .as_deref()
            .and_then(|ec| super::virtual_workspace_url(&self.state, ec, &export_name));
        if consumers && url.is_none() {
            self.slices_waiting.insert(sk.clone());
        } else {
            self.slices_waiting.remove(&sk);
        }
        status.endpoints = match url {
            Some(url) if consumers && export_exists => Some(vec![APIExportEndpoint {
                url,
                ..Default::default()
            }]),
            _ => None,
        };
        self.write_status(SLICES, &obj, serde_json::to_value(&status).unwrap_or_default())
            .await;
    }

    fn owner_export_gone(&self, cluster: &str, obj: &Value) -> bool {
        let owners = obj
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        owners.iter().any(|o| {
            let s = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or_default();
            s("kind") == "APIExport"
                && s("apiVersion").starts_with("apis.kcp.io/")
                && get(&self.state, &key(EXPORTS, cluster, s("name")))
                    .is_none_or(|e| objects::meta_str(&e, "uid") != Some(s("uid")))
        })
    }

    // ----- bindings ------------------------------------------------------------------------------

    fn track_binding(&mut self, bk: &ExportKey, export: Option<ExportKey>) {
        let old = self.export_of_binding.get(bk).cloned();
        if old == export {
            return;
        }
        if let Some(old) = old {
            if let Some(set) = self.bindings_by_export.get_mut(&old) {
                set.remove(bk);
            }
            self.dirty.views.insert(old);
            self.export_of_binding.remove(bk);
        }
        if let Some(new) = export {
            self.bindings_by_export
                .entry(new.clone())
                .or_default()
                .insert(bk.clone());
            self.export_of_binding.insert(bk.clone(), new.clone());
            self.dirty.views.insert(new);
        }
    }

    async fn reconcile_binding(&mut self, cluster: &str, name: &str) {
        let bk = (cluster.to_string(), name.to_string());
        self.dirty.clusters.insert(cluster.to_string());
        let Some(obj) = get(&self.state, &key(BINDINGS, cluster, name)) else {
            self.track_binding(&bk, None);
            self.deleting.remove(&bk);
            return;
        };
        let Some(binding) = typed::<APIBinding>(&obj) else {
            return;
        };
        let reference = binding.spec.reference.export.clone();
        let path = reference.as_ref().and_then(|r| r.path.clone()).unwrap_or_default();
        let export_name = reference.as_ref().map(|r| r.name.clone()).unwrap_or_default();
        let export_cluster = binding
            .status
            .as_ref()
            .and_then(|s| s.api_export_cluster_name.clone())
            .filter(|c| !c.is_empty())
            .or_else(|| self.resolve(cluster, &path));
        let ek = export_cluster.clone().map(|c| (c, export_name.clone()));
        self.track_binding(&bk, ek.clone());
        if let Some(ek) = &ek {
            self.dirty.views.insert(ek.clone());
        }
        if obj.pointer("/metadata/deletionTimestamp").is_some() {
            self.reconcile_deletion(cluster, name, &obj, &binding).await;
            return;
        }
        let mut status = binding.status.clone().unwrap_or_default();
        let mut conds = status.conditions.take().unwrap_or_default();
        let now = conditions::now();
        if status.phase.is_none() {
            status.phase = Some(APIBindingPhase::Binding);
            conditions::set(
                &mut conds,
                Mark::false_(
                    INITIAL_BINDING_COMPLETED,
                    "WaitingForEstablished",
                    SEVERITY_INFO,
                    "Waiting for API(s) to be established",
                ),
                &now,
            );
        } else {
            self.bind(cluster, &binding, &mut status, &mut conds, &now).await;
        }
        conditions::summarize(&mut conds, INITIAL_BINDING_COMPLETED, &now);
        status.conditions = Some(conds);
        let status = serde_json::to_value(&status).unwrap_or_default();
        // Serve the bound resources before anyone can see the binding Bound.
        let mut next = obj.clone();
        next["status"] = status.clone();
        self.sync_registry_with(cluster, name, Some(&next));
        self.write_status(BINDINGS, &obj, status).await;
    }

    /// kcp's binding reconciler for phases Binding and Bound.
    async fn bind(
        &mut self,
        cluster: &str,
        binding: &APIBinding,
        status: &mut faros_core::kcp::apis::v1alpha2::APIBindingStatus,
        conds: &mut Vec<Condition>,
        now: &Time,
    ) {
        let initial_done = conditions::is_true(conds, INITIAL_BINDING_COMPLETED);
        let fail_binding = |conds: &mut Vec<Condition>, reason: &str, message: String| {
            conditions::set(
                conds,
                Mark::false_(BINDING_UP_TO_DATE, reason, SEVERITY_ERROR, message.clone()),
                now,
            );
            if !initial_done {
                conditions::set(
                    conds,
                    Mark::false_(INITIAL_BINDING_COMPLETED, reason, SEVERITY_ERROR, message),
                    now,
                );
            }
        };
        let Some(reference) = binding.spec.reference.export.clone() else {
            conditions::set(
                conds,
                Mark::false_(
                    API_EXPORT_VALID,
                    "APIExportInvalidReference",
                    SEVERITY_ERROR,
                    "Missing APIExport reference",
                ),
                now,
            );
            return;
        };
        let path = reference
            .path
            .clone()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| self.own_path(cluster));
        let export_cluster = self.resolve(cluster, reference.path.as_deref().unwrap_or_default());
        let export_obj = export_cluster
            .as_deref()
            .and_then(|ec| get(&self.state, &key(EXPORTS, ec, &reference.name)));
        let (Some(export_cluster), Some(export_obj)) = (export_cluster, export_obj) else {
            conditions::set(
                conds,
                Mark::false_(
                    API_EXPORT_VALID,
                    "APIExportNotFound",
                    SEVERITY_ERROR,
                    format!("APIExport {path}|{} not found", reference.name),
                ),
                now,
            );
            return;
        };
        let Some(export) = typed::<APIExport>(&export_obj) else {
            return;
        };
        status.export_permission_claims = export.spec.permission_claims.clone().filter(|c| !c.is_empty());
        let Some(identity) = export.identity_hash().map(String::from) else {
            conditions::set(
                conds,
                Mark::false_(
                    API_EXPORT_VALID,
                    "MissingIdentityHash",
                    SEVERITY_WARNING,
                    format!("APIExport {path}|{} is missing status.identityHash", reference.name),
                ),
                now,
            );
            return;
        };
        status.api_export_cluster_name = Some(export_cluster.clone());
        // Schemas of the export, then the group/resources other bindings here already hold.
        let mut wanted = Vec::new();
        for r in export.spec.resources.clone().unwrap_or_default() {
            if !r.is_crd() {
                continue;
            }
            match self.schema_defs(&export_cluster, &r.schema) {
                Ok((uid, defs, storage)) => wanted.push((r, uid, defs, storage)),
                Err(e) if e.ends_with("not found") => {
                    conditions::set(
                        conds,
                        Mark::false_(
                            API_EXPORT_VALID,
                            "InternalError",
                            SEVERITY_ERROR,
                            format!("Invalid APIExport. Please contact the APIExport owner to resolve: {e}"),
                        ),
                        now,
                    );
                    return;
                }
                Err(e) => {
                    conditions::set(conds, Mark::true_(API_EXPORT_VALID), now);
                    fail_binding(conds, "APIResourceSchemaInvalid", format!("Unable to bind APIs: {e}"));
                    return;
                }
            }
        }
        let me = binding.metadata.name.clone().unwrap_or_default();
        let mut taken: BTreeMap<(String, String), String> = BTreeMap::new();
        for other in list_all(&self.state, GROUP, BINDINGS, Some(cluster), None) {
            let other_name = name_of(&other);
            if other_name == me {
                continue;
            }
            for br in other
                .pointer("/status/boundResources")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
            {
                let g = br.get("group").and_then(Value::as_str).unwrap_or_default().to_string();
                let r = br
                    .get("resource")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                taken.entry((g, r)).or_insert_with(|| other_name.clone());
            }
        }
        let mut skipped = BTreeMap::new();
        let mut bound = Vec::new();
        for (r, uid, defs, storage) in &wanted {
            let group = defs.first().map(|d| d.group.clone()).unwrap_or_else(|| r.group.clone());
            let resource = defs
                .first()
                .map(|d| d.resource.clone())
                .unwrap_or_else(|| r.name.clone());
            if let Some(holder) = taken.get(&(group.clone(), resource.clone())) {
                skipped.insert(format!("{resource}.{group}"), holder.clone());
                continue;
            }
            bound.push(BoundAPIResource {
                group,
                resource,
                schema: BoundAPIResourceSchema {
                    name: r.schema.clone(),
                    uid: uid.clone(),
                    identity_hash: identity.clone(),
                },
                storage_versions: Some(vec![storage.clone()]),
                extra: Default::default(),
            });
        }
        for b in &bound {
            self.ensure_bound_crd(&export_cluster, &b.schema.name, &b.schema.uid)
                .await;
        }
        conditions::set(conds, Mark::true_(API_EXPORT_VALID), now);
        status.bound_resources = Some(bound).filter(|b| !b.is_empty());
        if skipped.is_empty() {
            conditions::set(conds, Mark::true_(INITIAL_BINDING_COMPLETED), now);
            conditions::set(conds, Mark::true_(BINDING_UP_TO_DATE), now);
            status.phase = Some(APIBindingPhase::Bound);
        } else {
            let locks: Vec<String> = skipped
                .iter()
                .map(|(gr, holder)| format!("{gr}:{{{holder} false}}"))
                .collect();
            fail_binding(
                conds,
                "NamingConflicts",
                format!(
                    "Unable to bind APIs because they are bound by other APIBindings or CRDs: map[{}]",
                    locks.join(" ")
                ),
            );
        }
        // Permission claims.
        let own = own_resources(&export);
        let eval = claims::evaluate(
            export.spec.permission_claims.as_deref().unwrap_or_default(),
            binding.spec.permission_claims.as_deref().unwrap_or_default(),
            &own,
        );
        conditions::set(conds, eval.valid.clone(), now);
        let previous = status.applied_permission_claims.clone().unwrap_or_default();
        let applied = eval.applied.clone();
        if previous != applied || !conditions::is_true(conds, claims::PERMISSION_CLAIMS_APPLIED) {
            let label_key = claims::label_key(&export_cluster, &reference.name);
            let mut errors = Vec::new();
            for claim in export.spec.permission_claims.clone().unwrap_or_default() {
                let accepted = eval
                    .accepted
                    .iter()
                    .find(|a| a.group == claim.group && a.resource == claim.resource)
                    .cloned();
                if let Err(e) = self
                    .relabel(
                        cluster,
                        &claim.group,
                        &claim.resource,
                        &claim.identity_hash,
                        &label_key,
                        accepted,
                    )
                    .await
                {
                    errors.push(e);
                }
            }
            if errors.is_empty() {
                conditions::set(conds, Mark::true_(claims::PERMISSION_CLAIMS_APPLIED), now);
            } else {
                conditions::set(
                    conds,
                    Mark::false_(
                        claims::PERMISSION_CLAIMS_APPLIED,
                        "InternalError",
                        SEVERITY_ERROR,
                        format!("Permission claims have not been fully applied: {}", errors.join(", ")),
                    ),
                    now,
                );
            }
        }
        status.applied_permission_claims = Some(applied).filter(|a| !a.is_empty());
    }

    /// Sets or removes the claim label on every `group/resource` object in `cluster`.
    async fn relabel(
        &self,
        cluster: &str,
        group: &str,
        resource: &str,
        identity_hash: &str,
        label_key: &str,
        accepted: Option<crate::kcp::AcceptedClaim>,
    ) -> Result<(), String> {
        if group == GROUP && resource == BINDINGS {
            return Ok(());
        }
        let served = self
            .state
            .registry
            .resources(cluster)
            .iter()
            .any(|d| d.group == group && d.resource == resource && !d.create_only);
        if !served {
            // Nothing of it exists here (yet); admission labels objects as they are created.
            return Ok(());
        }
        let label_value = claims::label_value(group, resource, identity_hash);
        for obj in list_all(&self.state, group, resource, Some(cluster), None) {
            let mut updated = obj.clone();
            let changed = match &accepted {
                Some(claim) => apply_claim_labels(
                    &mut updated,
                    &[ClaimLabel {
                        claim: claim.clone(),
                        label_key: label_key.to_string(),
                        label_value: label_value.clone(),
                    }],
                ),
                None => remove_label(&mut updated, label_key, &label_value),
            };
            if changed {
                let written = landed(self.client().update(group, resource, &obj, updated).await);
                if written.is_none() {
                    return Err(format!("error patching {resource}.{group} {cluster}|{}", name_of(&obj)));
                }
            }
        }
        Ok(())
    }

    /// kcp's APIBinding deletion controller: delete every instance of the bound resources (unless
    /// another binding here serves the same schema and identity), then drop the finalizer.
    async fn reconcile_deletion(&mut self, cluster: &str, name: &str, obj: &Value, binding: &APIBinding) {
        let bk = (cluster.to_string(), name.to_string());
        let bound = binding
            .status
            .as_ref()
            .and_then(|s| s.bound_resources.clone())
            .unwrap_or_default();
        let others: Vec<APIBinding> = list_all(&self.state, GROUP, BINDINGS, Some(cluster), None)
            .iter()
            .filter(|o| name_of(o) != name && o.pointer("/metadata/deletionTimestamp").is_none())
            .filter_map(typed::<APIBinding>)
            .collect();
        let adopted = |br: &BoundAPIResource| {
            others.iter().any(|o| {
                o.status
                    .as_ref()
                    .and_then(|s| s.bound_resources.as_ref())
                    .is_some_and(|rs| {
                        rs.iter().any(|r| {
                            r.group == br.group
                                && r.resource == br.resource
                                && r.schema.uid == br.schema.uid
                                && r.schema.identity_hash == br.schema.identity_hash
                        })
                    })
            })
        };
        let mut remaining: BTreeMap<String, usize> = BTreeMap::new();
        let mut finalizers: BTreeMap<String, usize> = BTreeMap::new();
        for br in bound.iter().filter(|br| !adopted(br)) {
            let Some(def) = self
                .state
                .registry
                .resources(cluster)
                .into_iter()
                .find(|d| d.group == br.group && d.resource == br.resource)
            else {
                continue;
            };
            for item in list_all(&self.state, &br.group, &br.resource, Some(cluster), None) {
                landed(self.client().delete(&def.group, &def.resource, &item, None).await);
            }
            let left = list_all(&self.state, &br.group, &br.resource, Some(cluster), None);
            if !left.is_empty() {
                remaining.insert(format!("{}.{}", br.resource, br.group), left.len());
            }
            for item in &left {
                for f in objects::finalizers(item) {
                    *finalizers.entry(f).or_default() += 1;
                }
            }
        }
        let now = conditions::now();
        let mut status = binding.status.clone().unwrap_or_default();
        let mut conds = status.conditions.take().unwrap_or_default();
        let mark = if !finalizers.is_empty() {
            let list: Vec<String> = finalizers
                .iter()
                .map(|(f, n)| format!("{f} in {n} resource instances"))
                .collect();
            Mark::false_(
                BINDING_RESOURCE_DELETE_SUCCESS,
                "SomeFinalizersRemain",
                SEVERITY_ERROR,
                format!(
                    "Some content in the workspace has finalizers remaining: {}",
                    list.join(", ")
                ),
            )
        } else if !remaining.is_empty() {
            let list: Vec<String> = remaining
                .iter()
                .map(|(gr, n)| format!("{gr} has {n} resource instances"))
                .collect();
            Mark::false_(
                BINDING_RESOURCE_DELETE_SUCCESS,
                "SomeResourcesRemain",
                SEVERITY_ERROR,
                format!("Some resources are remaining: {}", list.join(", ")),
            )
        } else {
            Mark::true_(BINDING_RESOURCE_DELETE_SUCCESS)
        };
        let done = mark.status == ConditionStatus::True;
        conditions::set(&mut conds, mark, &now);
        status.conditions = Some(conds);
        let written = self
            .write_status(BINDINGS, obj, serde_json::to_value(&status).unwrap_or_default())
            .await;
        if !done {
            self.deleting.insert(bk);
            return;
        }
        self.deleting.remove(&bk);
        let Some(current) = written.or_else(|| get(&self.state, &key(BINDINGS, cluster, name))) else {
            return;
        };
        let rest: Vec<String> = objects::finalizers(&current)
            .into_iter()
            .filter(|f| f != BINDING_FINALIZER)
            .collect();
        if rest.is_empty() {
            // Leave discovery before the binding is gone, so whoever sees it gone sees the APIs gone too.
            self.sync_registry_with(cluster, name, None);
        }
        // The binding goes with its last finalizer (the write pipeline removes it).
        let mut updated = current.clone();
        objects::meta_mut(&mut updated).insert("finalizers".into(), json!(rest));
        landed(self.client().update(GROUP, BINDINGS, &current, updated).await);
    }

    // ----- registry ------------------------------------------------------------------------------

    /// The schema-defined resources of `cluster`: the bound resources of all its bindings; and the
    /// claims admission labels objects of `cluster` with.
    fn sync_registry(&mut self, cluster: &str) {
        self.sync_registry_of(cluster, list_all(&self.state, GROUP, BINDINGS, Some(cluster), None));
    }

    /// Like `sync_registry`, with binding `name` replaced by `overlay` (None: as if deleted).
    fn sync_registry_with(&mut self, cluster: &str, name: &str, overlay: Option<&Value>) {
        let mut bindings: Vec<Value> = list_all(&self.state, GROUP, BINDINGS, Some(cluster), None)
            .into_iter()
            .filter(|b| name_of(b) != name)
            .collect();
        bindings.extend(overlay.cloned());
        self.sync_registry_of(cluster, bindings);
    }

    fn sync_registry_of(&mut self, cluster: &str, bindings: Vec<Value>) {
        let mut defs: Vec<ResourceDef> = Vec::new();
        let mut claim_labels = Vec::new();
        for obj in bindings {
            let Some(binding) = typed::<APIBinding>(&obj) else {
                continue;
            };
            let Some(status) = binding.status.clone() else { continue };
            let Some(export_cluster) = status.api_export_cluster_name.clone() else {
                continue;
            };
            for br in status.bound_resources.clone().unwrap_or_default() {
                // The export's schema, or once its workspace is gone, the bound copy.
                let found = self
                    .schema_defs(&export_cluster, &br.schema.name)
                    .or_else(|_| self.schema_defs(BOUND_CRDS_CLUSTER, &br.schema.uid));
                let Ok((_, schema_defs, _)) = found else {
                    continue;
                };
                for d in schema_defs {
                    if !defs
                        .iter()
                        .any(|o| o.group == d.group && o.version == d.version && o.resource == d.resource)
                    {
                        defs.push(d);
                    }
                }
            }
            if binding.phase() == Some(&APIBindingPhase::Bound) {
                let export_name = binding
                    .spec
                    .reference
                    .export
                    .as_ref()
                    .map(|r| r.name.clone())
                    .unwrap_or_default();
                let label_key = claims::label_key(&export_cluster, &export_name);
                let exported = status.export_permission_claims.clone().unwrap_or_default();
                for applied in status.applied_permission_claims.clone().unwrap_or_default() {
                    let Some(export_claim) = exported.iter().find(|c| {
                        c.group == applied.group
                            && c.resource == applied.resource
                            && c.identity_hash == applied.identity_hash
                    }) else {
                        continue;
                    };
                    claim_labels.push(ClaimLabel {
                        claim: crate::kcp::AcceptedClaim {
                            group: applied.group.clone(),
                            resource: applied.resource.clone(),
                            verbs: claims::effective_verbs(&export_claim.verbs, &applied.verbs),
                            selector: claims::selector_of(&applied.selector),
                        },
                        label_key: label_key.clone(),
                        label_value: claims::label_value(&applied.group, &applied.resource, &applied.identity_hash),
                    });
                }
            }
        }
        self.state.registry.set_cluster_resources(cluster, defs);
        self.index.set_claims(cluster, claim_labels);
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

fn cluster_of(obj: &Value) -> String {
    obj.pointer("/metadata/annotations/kcp.io~1cluster")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The group/resources an export serves itself (claims on them are ignored).
fn own_resources(export: &APIExport) -> Vec<(String, String)> {
    export
        .spec
        .resources
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|r| (r.group.clone(), r.name.clone()))
        .collect()
}

fn remove_label(obj: &mut Value, key: &str, value: &str) -> bool {
    let Some(labels) = obj.pointer_mut("/metadata/labels").and_then(Value::as_object_mut) else {
        return false;
    };
    if labels.get(key).and_then(Value::as_str) == Some(value) {
        labels.remove(key);
        true
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kcp::AcceptedClaim;

    #[test]
    fn claim_labels_follow_the_selector() {
        let selector = crate::selector::LabelSelector::parse("app=x").ok();
        let claims = [ClaimLabel {
            claim: AcceptedClaim {
                group: String::new(),
                resource: "configmaps".into(),
                verbs: vec!["get".into()],
                selector,
            },
            label_key: "claimed.internal.apis.kcp.io/abc".into(),
            label_value: "v".into(),
        }];
        let mut matching = json!({"metadata": {"name": "a", "labels": {"app": "x"}}});
        assert!(apply_claim_labels(&mut matching, &claims));
        assert_eq!(matching["metadata"]["labels"]["claimed.internal.apis.kcp.io/abc"], "v");
        assert!(!apply_claim_labels(&mut matching, &claims), "idempotent");
        let mut other =
            json!({"metadata": {"name": "b", "labels": {"app": "y", "claimed.internal.apis.kcp.io/abc": "v"}}});
        assert!(apply_claim_labels(&mut other, &claims));
        assert_eq!(other["metadata"]["labels"], json!({"app": "y"}));
        let mut unlabelled = json!({"metadata": {"name": "c"}});
        assert!(!apply_claim_labels(&mut unlabelled, &claims));
        assert_eq!(unlabelled, json!({"metadata": {"name": "c"}}));
    }
}
