//! The consumer cluster's schema-defined resources in the registry (the bound resources of all its
//! bindings), and the claims admission labels objects with.

use faros_core::kcp::apis::v1alpha2::{APIBinding, APIBindingPhase};
use serde_json::Value;

use super::{BINDINGS, BOUND_CRDS_CLUSTER, Controller, GROUP, name_of, typed};
use crate::kcp::apis::claims;
use crate::kcp::apis::view::ClaimLabel;
use crate::objects::meta;
use crate::registry::ResourceDef;

impl Controller {
    /// The schema-defined resources of `cluster`: the bound resources of all its bindings; and the
    /// claims admission labels objects of `cluster` with.
    pub(super) fn sync_registry(&mut self, cluster: &str) {
        self.sync_registry_of(cluster, self.state.list_all(GROUP, BINDINGS, Some(cluster), None));
    }

    /// Like `sync_registry`, with binding `name` replaced by `overlay` (None: as if deleted).
    pub(super) fn sync_registry_with(&mut self, cluster: &str, name: &str, overlay: Option<&Value>) {
        let mut bindings: Vec<Value> = self
            .state
            .list_all(GROUP, BINDINGS, Some(cluster), None)
            .into_iter()
            .filter(|b| name_of(b) != name)
            .collect();
        bindings.extend(overlay.cloned());
        self.sync_registry_of(cluster, bindings);
    }

    pub(super) fn sync_registry_of(&mut self, cluster: &str, bindings: Vec<Value>) {
        let mut defs: Vec<ResourceDef> = Vec::new();
        let mut claim_labels = Vec::new();
        for obj in bindings {
            let Some(binding) = typed::<APIBinding>(&obj) else {
                continue;
            };
            let Some(status) = binding.status.clone() else { continue };
            let terminating = meta::is_deleting(&obj);
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
                for mut d in schema_defs {
                    d.terminating = terminating;
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
                        claim: crate::kcp::apis::view::AcceptedClaim {
                            group: applied.group.clone(),
                            resource: applied.resource.clone(),
                            verbs: claims::effective_verbs(&export_claim.verbs, &applied.verbs),
                            selector: claims::selector_of(&applied.selector),
                            match_labels: claims::match_labels_of(&applied.selector),
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
}
