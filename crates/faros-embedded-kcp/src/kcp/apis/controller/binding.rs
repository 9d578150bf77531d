//! APIBindings: phases `""` → `Binding` → `Bound` with kcp's conditions, bound resources, naming
//! conflicts, permission claims and claim labels.

use std::collections::BTreeMap;

use faros_core::kcp::Condition;
use faros_core::kcp::apis::v1alpha2::{APIBinding, APIBindingPhase, APIExport};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::Value;

use super::decide::{self, BindInput, SchemaProblem, Wanted};
use super::export::own_resources;
use super::{BINDINGS, Controller, EXPORTS, GROUP, INITIAL_BINDING_COMPLETED, get, key, name_of, typed};
use crate::client::landed;
use crate::kcp::admission::claims::apply_claim_labels;
use crate::kcp::apis::claims;
use crate::kcp::apis::conditions::{self, Mark, SEVERITY_ERROR, SEVERITY_INFO};
use crate::kcp::apis::view::{ClaimLabel, ExportKey};
use crate::objects::meta;

impl Controller {
    pub(super) fn track_binding(&mut self, bk: &ExportKey, export: Option<ExportKey>) {
        let old = self.export_of_binding.get(bk).cloned();
        if old == export {
            return;
        }
        if let Some(old) = old {
            if let Some(set) = self.bindings_by_export.get_mut(&old) {
                set.remove(bk);
            }
            self.dirty.consumers.insert((old, bk.0.clone()));
            self.export_of_binding.remove(bk);
        }
        if let Some(new) = export {
            self.bindings_by_export
                .entry(new.clone())
                .or_default()
                .insert(bk.clone());
            self.export_of_binding.insert(bk.clone(), new.clone());
            self.dirty.consumers.insert((new, bk.0.clone()));
        }
    }

    pub(super) async fn reconcile_binding(&mut self, cluster: &str, name: &str) {
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
            self.dirty.consumers.insert((ek.clone(), cluster.to_string()));
        }
        if meta::is_deleting(&obj) {
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
        // Serve the bound resources, in the workspace and through the export's virtual workspace,
        // before anyone can see the binding Bound.
        let mut next = obj.clone();
        next["status"] = status.clone();
        self.sync_registry_with(cluster, name, Some(&next));
        if let Some(ek) = &ek {
            self.refresh_consumer(ek, cluster, Some((name, &next)));
        }
        self.write_status(BINDINGS, &obj, status).await;
    }

    /// The group/resources other bindings of `cluster` hold, with the first holder's name.
    fn taken_resources(&self, cluster: &str, me: &str) -> BTreeMap<(String, String), String> {
        let mut taken: BTreeMap<(String, String), String> = BTreeMap::new();
        for other in self.state.list_all(GROUP, BINDINGS, Some(cluster), None) {
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
        taken
    }

    /// kcp's binding reconciler for phases Binding and Bound.
    pub(super) async fn bind(
        &mut self,
        cluster: &str,
        binding: &APIBinding,
        status: &mut faros_core::kcp::apis::v1alpha2::APIBindingStatus,
        conds: &mut Vec<Condition>,
        now: &Time,
    ) {
        let initial_done = conditions::is_true(conds, INITIAL_BINDING_COMPLETED);
        let decided = |conds: &mut Vec<Condition>, input: BindInput<'_>| {
            let d = decide::bind(input);
            for mark in &d.marks {
                conditions::set(conds, mark.clone(), now);
            }
            d
        };
        let Some(reference) = binding.spec.reference.export.clone() else {
            decided(conds, BindInput::NoReference);
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
            let input = BindInput::ExportNotFound {
                path: &path,
                name: &reference.name,
            };
            decided(conds, input);
            return;
        };
        let Some(export) = typed::<APIExport>(&export_obj) else {
            return;
        };
        status.export_permission_claims = export.spec.permission_claims.clone().filter(|c| !c.is_empty());
        let Some(identity) = export.identity_hash().map(String::from) else {
            let input = BindInput::NoIdentity {
                path: &path,
                name: &reference.name,
            };
            decided(conds, input);
            return;
        };
        status.api_export_cluster_name = Some(export_cluster.clone());
        // Schemas of the export (up to the first that cannot be used), then the group/resources
        // other bindings here already hold.
        let mut schemas = Vec::new();
        for r in export.spec.resources.clone().unwrap_or_default() {
            if !r.is_crd() {
                continue;
            }
            match self.schema_defs(&export_cluster, &r.schema) {
                Ok((uid, defs, storage)) => schemas.push(Ok(Wanted {
                    established: self.bound_crd_exists(&uid),
                    group: defs.first().map(|d| d.group.clone()).unwrap_or_else(|| r.group.clone()),
                    resource: defs
                        .first()
                        .map(|d| d.resource.clone())
                        .unwrap_or_else(|| r.name.clone()),
                    schema: r.schema.clone(),
                    uid,
                    storage,
                })),
                Err(e) => {
                    let problem = if e.ends_with("not found") {
                        SchemaProblem::NotFound(e)
                    } else {
                        SchemaProblem::Invalid(e)
                    };
                    schemas.push(Err(problem));
                    break;
                }
            }
        }
        let taken = if schemas.iter().all(Result::is_ok) {
            self.taken_resources(cluster, binding.metadata.name.as_deref().unwrap_or_default())
        } else {
            BTreeMap::new()
        };
        let current = status.bound_resources.clone().unwrap_or_default();
        let d = decided(
            conds,
            BindInput::Export {
                identity: &identity,
                schemas,
                taken: &taken,
                initial_done,
                current: &current,
            },
        );
        let bk = (cluster.to_string(), binding.metadata.name.clone().unwrap_or_default());
        if d.establish.is_empty() {
            self.establishing.remove(&bk);
        } else {
            // Reconciled again when the copies exist (see `observe`).
            self.establishing.insert(bk);
        }
        for w in &d.establish {
            self.ensure_bound_crd(&export_cluster, &w.schema, &w.uid).await;
        }
        let Some(bound) = d.bound else { return };
        status.bound_resources = Some(bound).filter(|b| !b.is_empty());
        if d.phase_bound {
            status.phase = Some(APIBindingPhase::Bound);
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
    pub(super) async fn relabel(
        &self,
        cluster: &str,
        group: &str,
        resource: &str,
        identity_hash: &str,
        label_key: &str,
        accepted: Option<crate::kcp::apis::view::AcceptedClaim>,
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
        for obj in self.state.list_all(group, resource, Some(cluster), None) {
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
                let written = landed(self.client().relabel(group, resource, &obj, updated).await);
                if written.is_none() {
                    return Err(format!("error patching {resource}.{group} {cluster}|{}", name_of(&obj)));
                }
            }
        }
        Ok(())
    }
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
