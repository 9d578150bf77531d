//! APIExportEndpointSlices: `APIExportValid` and the virtual workspace URL while the export has a
//! Bound binding that names the export as the slice does (kcp 0.32's index key).

use faros_core::kcp::apis::v1alpha1::{APIExportEndpoint, APIExportEndpointSlice};
use faros_core::kcp::apis::v1alpha2::APIBinding;
use serde_json::Value;

use super::{BINDINGS, Controller, EXPORTS, SLICES, get, key, typed};
use crate::kcp::apis::conditions::{self};
use crate::kcp::apis::view::ExportKey;
use crate::objects::meta;

impl Controller {
    pub(super) fn forget_slice(&mut self, sk: &ExportKey) {
        if let Some(ek) = self.export_of_slice.remove(sk)
            && let Some(set) = self.slices_by_export.get_mut(&ek)
        {
            set.remove(sk);
        }
        self.slices_waiting.remove(sk);
    }

    pub(super) async fn reconcile_slice(&mut self, cluster: &str, name: &str) {
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
        // Only Bound tenants that name the export as this slice does count (see
        // `decide::export_key`): kcp never enqueues the slice for the others.
        let slice_key = super::decide::export_key(Some(&path), cluster, &export_name);
        let consumers = export_cluster
            .as_ref()
            .and_then(|ec| self.index.export(&(ec.clone(), export_name.clone())))
            .is_some_and(|v| {
                v.bindings.iter().any(|(bc, consumer)| {
                    get(&self.state, &key(BINDINGS, bc, &consumer.binding_name))
                        .and_then(|b| typed::<APIBinding>(&b))
                        .and_then(|b| b.spec.reference.export)
                        .is_some_and(|r| super::decide::export_key(r.path.as_deref(), bc, &r.name) == slice_key)
                })
            });
        let url = export_cluster
            .as_deref()
            .and_then(|ec| crate::kcp::apis::virtual_workspace_url(&self.state, ec, &export_name));
        let d = super::decide::slice(export_exists, consumers, url, &shown_path, &export_name);
        conditions::set(&mut conds, d.mark, &now);
        status.conditions = Some(conds);
        if d.waiting {
            self.slices_waiting.insert(sk.clone());
        } else {
            self.slices_waiting.remove(&sk);
        }
        status.endpoints = d.endpoints.map(|urls| {
            urls.into_iter()
                .map(|url| APIExportEndpoint {
                    url,
                    ..Default::default()
                })
                .collect()
        });
        self.write_status(SLICES, &obj, serde_json::to_value(&status).unwrap_or_default())
            .await;
    }

    pub(super) fn owner_export_gone(&self, cluster: &str, obj: &Value) -> bool {
        meta::owner_references(obj).iter().any(|o| {
            let s = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or_default();
            s("kind") == "APIExport"
                && s("apiVersion").starts_with("apis.kcp.io/")
                && get(&self.state, &key(EXPORTS, cluster, s("name"))).is_none_or(|e| meta::uid(&e) != Some(s("uid")))
        })
    }
}
