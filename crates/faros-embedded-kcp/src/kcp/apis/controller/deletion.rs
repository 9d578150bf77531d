//! APIBinding deletion: every instance of the bound resources goes (progress in
//! `BindingResourceDeleteSuccess`), then the finalizer.

use std::collections::BTreeMap;

use faros_core::kcp::ConditionStatus;
use faros_core::kcp::apis::v1alpha2::APIBinding;
use serde_json::{Value, json};

use super::decide;
use super::{BINDINGS, Controller, GROUP, get, key, name_of, typed};
use crate::client::landed;
use crate::kcp::apis::BINDING_FINALIZER;
use crate::kcp::apis::conditions::{self};
use crate::objects::meta;

impl Controller {
    /// kcp's APIBinding deletion controller: delete every instance of the bound resources (unless
    /// another binding here serves the same schema and identity), then drop the finalizer.
    pub(super) async fn reconcile_deletion(&mut self, cluster: &str, name: &str, obj: &Value, binding: &APIBinding) {
        let bk = (cluster.to_string(), name.to_string());
        let bound = binding
            .status
            .as_ref()
            .and_then(|s| s.bound_resources.clone())
            .unwrap_or_default();
        let others: Vec<APIBinding> = self
            .state
            .list_all(GROUP, BINDINGS, Some(cluster), None)
            .iter()
            .filter(|o| name_of(o) != name && !meta::is_deleting(o))
            .filter_map(typed::<APIBinding>)
            .collect();
        let mut remaining: BTreeMap<String, usize> = BTreeMap::new();
        let mut finalizers: BTreeMap<String, usize> = BTreeMap::new();
        for br in bound.iter().filter(|br| !decide::deletion_adopted(br, &others)) {
            let Some(def) = self
                .state
                .registry
                .resources(cluster)
                .into_iter()
                .find(|d| d.group == br.group && d.resource == br.resource)
            else {
                continue;
            };
            for item in self.state.list_all(&br.group, &br.resource, Some(cluster), None) {
                landed(self.client().delete(&def.group, &def.resource, &item, None).await);
            }
            let left = self.state.list_all(&br.group, &br.resource, Some(cluster), None);
            if !left.is_empty() {
                remaining.insert(format!("{}.{}", br.resource, br.group), left.len());
            }
            for item in &left {
                for f in meta::finalizers(item) {
                    *finalizers.entry(f).or_default() += 1;
                }
            }
        }
        let now = conditions::now();
        let mut status = binding.status.clone().unwrap_or_default();
        let mut conds = status.conditions.take().unwrap_or_default();
        let mark = decide::deletion_progress(&remaining, &finalizers);
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
        let rest: Vec<String> = meta::finalizers(&current)
            .into_iter()
            .filter(|f| f != BINDING_FINALIZER)
            .collect();
        if rest.is_empty() {
            // Leave discovery before the binding is gone, so whoever sees it gone sees the APIs gone too.
            self.sync_registry_with(cluster, name, None);
        }
        // The binding goes with its last finalizer (the write pipeline removes it).
        let mut updated = current.clone();
        meta::meta_mut(&mut updated).insert("finalizers".into(), json!(rest));
        landed(self.client().update(GROUP, BINDINGS, &current, updated).await);
    }
}
