//! APIResourceSchemas: resource definitions built from a schema (cached by resourceVersion), and
//! the bound copy kept in the bound-CRDs cluster.

use serde_json::{Value, json};

use super::{BOUND_CRDS_CLUSTER, Controller, GROUP, SCHEMAS, get, key, stored_rv};
use crate::objects::meta;
use crate::registry::ResourceDef;

/// Resource definitions built from one APIResourceSchema, cached by its resourceVersion.
pub(super) struct CachedDefs {
    rv: u64,
    uid: String,
    defs: Vec<ResourceDef>,
}

impl Controller {
    /// The resource definitions of schema `name` in `cluster` (served versions, storage first).
    pub(super) fn schema_defs(
        &mut self,
        cluster: &str,
        name: &str,
    ) -> Result<(String, Vec<ResourceDef>, String), String> {
        let schema_key = key(SCHEMAS, cluster, name);
        let not_found = || format!("APIResourceSchema {name:?} not found");
        // Every binding's reconcile asks for its schemas: only the stored resourceVersion is read
        // to tell the cached definitions are current, since parsing a whole schema (its OpenAPI
        // included) each time made that the controller's biggest cost.
        let Some(current_rv) = stored_rv(&self.state, &schema_key) else {
            return Err(not_found());
        };
        let k = (cluster.to_string(), name.to_string());
        if let Some(cached) = self.schema_defs.get(&k).filter(|c| c.rv == current_rv) {
            let storage = cached.defs.first().map(|d| d.version.clone()).unwrap_or_default();
            return Ok((cached.uid.clone(), cached.defs.clone(), storage));
        }
        let Some(obj) = get(&self.state, &schema_key) else {
            return Err(not_found());
        };
        let current_rv = meta::rv(&obj).unwrap_or(current_rv);
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
        // Stored objects are read as the requested version of this schema (`ResourceDef::served`);
        // kube's converter knows every version of it, served or not.
        let all_versions: std::sync::Arc<[String]> = versions
            .iter()
            .filter_map(|v| v.get("name").and_then(Value::as_str).map(String::from))
            .collect();
        let mut defs = Vec::new();
        for v in ordered {
            let mut def = ResourceDef::from_crd_like(&spec, v, "/schema").map_err(|e| e.to_string())?;
            def.schema_versions = Some(all_versions.clone());
            defs.push(def);
        }
        // Every served version shows the hash of the storage version (the first, sorted above).
        if let Some(storage) = defs
            .first()
            .map(|d| (d.group.clone(), d.version.clone(), d.kind.clone()))
        {
            let hash = crate::kcp::apis::hash::bound_storage_version_hash(&storage.0, &storage.1, &storage.2);
            for d in &mut defs {
                d.storage_version_hash = Some(hash.clone());
            }
        }
        let uid = meta::uid(&obj).unwrap_or_default().to_string();
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

    /// Whether the bound copy of the schema with `uid` exists (kcp's bound CRD is established).
    pub(super) fn bound_crd_exists(&self, uid: &str) -> bool {
        !uid.is_empty() && stored_rv(&self.state, &key(SCHEMAS, BOUND_CRDS_CLUSTER, uid)).is_some()
    }

    /// Copies schema `name` of `export_cluster` to [`BOUND_CRDS_CLUSTER`] as `uid`, once: schemas
    /// are immutable in kcp, so the copy never needs updating.
    pub(super) async fn ensure_bound_crd(&self, export_cluster: &str, name: &str, uid: &str) {
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
}
