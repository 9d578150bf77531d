//! APIExports: identity secret and hash (`IdentityValid`), the endpoint slice named like the
//! export, and the export's view for the virtual workspace.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use base64::Engine;
use faros_core::kcp::ANNOTATION_SKIP_ENDPOINTSLICE;
use faros_core::kcp::apis::v1alpha2::{APIBinding, APIBindingPhase, APIExport};
use serde_json::{Value, json};

use super::{BINDINGS, Controller, EXPORTS, GROUP, SLICES, get, key, typed};
use crate::client::landed;
use crate::clusters::PATH_ANNOTATION;
use crate::kcp::apis::IDENTITY_NAMESPACE;
use crate::kcp::apis::claims;
use crate::kcp::apis::conditions::{self};
use crate::kcp::apis::view::ExportKey;
use crate::kcp::apis::view::{BoundConsumer, ExportView};
use crate::objects::meta;
use crate::store::ObjectKey;

impl Controller {
    pub(super) async fn reconcile_export(&mut self, cluster: &str, name: &str) {
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
            .map(|k| crate::kcp::apis::hash::identity_hash(&k));
        let mut status = export.status.clone().unwrap_or_default();
        let mut conds = status.conditions.take().unwrap_or_default();
        let now = conditions::now();
        let current = status.identity_hash.clone().filter(|h| !h.is_empty());
        let (mark, recorded) =
            super::decide::identity(&secret_name, secret.is_some(), hash.as_deref(), current.as_deref());
        if recorded.is_some() {
            status.identity_hash = recorded;
        }
        conditions::set(&mut conds, mark, &now);
        status.conditions = Some(conds);
        self.write_status(EXPORTS, &obj, serde_json::to_value(&status).unwrap_or_default())
            .await;
        let skip = meta::annotations(&obj).is_some_and(|a| a.contains_key(ANNOTATION_SKIP_ENDPOINTSLICE));
        if !skip && get(&self.state, &key(SLICES, cluster, name)).is_none() {
            let path = meta::annotation(&obj, PATH_ANNOTATION)
                .map(String::from)
                .unwrap_or_else(|| self.own_path(cluster));
            let slice = json!({
                "apiVersion": "apis.kcp.io/v1alpha1",
                "kind": "APIExportEndpointSlice",
                "metadata": {"name": name, "ownerReferences": [{
                    "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
                    "name": name, "uid": meta::uid(&obj).unwrap_or_default()}]},
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
    pub(super) async fn create_identity(&mut self, cluster: &str, name: &str, obj: &Value) {
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
        let generation = meta::generation(obj).unwrap_or(1);
        meta::meta_mut(&mut updated).insert("generation".into(), json!(generation + 1));
        landed(self.client().update(GROUP, EXPORTS, obj, updated).await);
    }

    /// Recomputes what the virtual workspace serves for an export.
    pub(super) fn refresh_view(&mut self, ek: &ExportKey) {
        self.refresh_view_with(ek, None);
    }

    /// [`Self::refresh_view`], with `pending` (cluster, name, object) standing for that binding as
    /// it is about to be written: a binding is served through the virtual workspace before anyone
    /// can see it Bound, as its resources are in the workspace (`sync_registry_with`).
    pub(super) fn refresh_view_with(&mut self, ek: &ExportKey, pending: Option<(&str, &str, &Value)>) {
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
            if bindings.contains_key(&bc) {
                continue;
            }
            let pending = pending.filter(|(pc, _, _)| *pc == bc).map(|(_, pn, obj)| (pn, obj));
            if let Some(consumer) = self.consumer_of(&export, &own, &bc, &bn, pending) {
                bindings.insert(bc, consumer);
            }
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
        self.view_changed(ek, had_consumers != has_consumers);
    }

    /// Recomputes one consumer cluster's entry of the export's view after a binding of `cluster`
    /// changed (`pending` as in [`Self::refresh_view_with`]). The other consumers are not read
    /// again: root's exports are bound in every workspace, and rebuilding their whole view for each
    /// binding made creating workspaces quadratic. Without a view yet, the whole view is built.
    pub(super) fn refresh_consumer(&mut self, ek: &ExportKey, cluster: &str, pending: Option<(&str, &Value)>) {
        let whole = pending.map(|(name, obj)| (cluster, name, obj));
        let export = self
            .index
            .export(ek)
            .and_then(|_| get(&self.state, &key(EXPORTS, &ek.0, &ek.1)))
            .and_then(|o| typed::<APIExport>(&o));
        let Some(export) = export else {
            self.refresh_view_with(ek, whole);
            return;
        };
        let own = own_resources(&export);
        // A cluster's first Bound binding (by name) is its consumer, as in the whole view.
        let consumer = self.bindings_by_export.get(ek).and_then(|set| {
            set.range((cluster.to_string(), String::new())..)
                .take_while(|(bc, _)| bc == cluster)
                .find_map(|(_, bn)| self.consumer_of(&export, &own, cluster, bn, pending))
        });
        match self.index.set_consumer(ek, cluster, consumer) {
            Some(flipped) => self.view_changed(ek, flipped),
            // Removed meanwhile: build it whole.
            None => self.refresh_view_with(ek, whole),
        }
    }

    /// Binding `cluster/name` (or `pending`, standing for it when it names the same binding) as a
    /// consumer of `export`, if it is Bound.
    fn consumer_of(
        &self,
        export: &APIExport,
        own: &[(String, String)],
        cluster: &str,
        name: &str,
        pending: Option<(&str, &Value)>,
    ) -> Option<BoundConsumer> {
        let stored;
        let bobj = match pending {
            Some((pn, obj)) if pn == name => obj,
            _ => {
                stored = get(&self.state, &key(BINDINGS, cluster, name))?;
                &stored
            }
        };
        let binding = typed::<APIBinding>(bobj)?;
        if binding.phase() != Some(&APIBindingPhase::Bound) {
            return None;
        }
        let eval = claims::evaluate(
            export.spec.permission_claims.as_deref().unwrap_or_default(),
            binding.spec.permission_claims.as_deref().unwrap_or_default(),
            own,
        );
        Some(BoundConsumer {
            binding_name: name.to_string(),
            claims: eval.accepted,
        })
    }

    /// The export's slices follow its view; `flipped` when it gained its first consumer or lost
    /// its last.
    fn view_changed(&mut self, ek: &ExportKey, flipped: bool) {
        if flipped || self.slices_by_export.get(ek).is_none_or(BTreeSet::is_empty) {
            // The slice named like the export may not be indexed yet.
            self.dirty.slices.insert(ek.clone());
        }
        self.dirty
            .slices
            .extend(self.slices_by_export.get(ek).cloned().unwrap_or_default());
    }
}

/// The group/resources an export serves itself (claims on them are ignored).
pub(super) fn own_resources(export: &APIExport) -> Vec<(String, String)> {
    export
        .spec
        .resources
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|r| (r.group.clone(), r.name.clone()))
        .collect()
}
