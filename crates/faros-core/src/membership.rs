//! The `tenancy.faros.sh` APIExport: how the hub sees faros' membership bindings of every tenant
//! workspace through one watch.
//!
//! The export serves no resource of its own. It claims read access to ClusterRoleBindings labelled
//! `app.kubernetes.io/managed-by=faros` (the membership bindings: `faros-hub-api`'s tenancy RBAC),
//! and the `organization` and `workspace` WorkspaceTypes bind it by default, which accepts the claim
//! with its default selector. The hub lists and watches those bindings across all workspaces in the
//! export's virtual workspace; a binding of the export in a workspace says that workspace is seen.
//!
//! The reconciler's bootstrap creates the export ([`export`]); the hub binds it itself in
//! workspaces made before the export existed ([`consumer_binding`]). Both use [`claim`], so the
//! binding accepts exactly what the export asks for.

use std::collections::BTreeMap;

use crate::kcp::apis::v1alpha2::{
    APIBinding, APIBindingSpec, APIExport, APIExportSpec, AcceptablePermissionClaimState, BindingReference,
    PermissionClaim, PermissionClaimSelector,
};
use crate::names;

/// The RBAC API group.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// The claimed resource.
pub const CLAIMED_RESOURCE: &str = "clusterrolebindings";
/// kcp's condition on an APIBinding once the objects its accepted claims select are visible in the
/// export's virtual workspace.
pub const CLAIMS_APPLIED: &str = "PermissionClaimsApplied";

/// The labels the claim selects: everything faros manages.
pub fn selected_labels() -> BTreeMap<String, String> {
    BTreeMap::from([(names::LABEL_MANAGED_BY.to_string(), names::MANAGED_BY_FAROS.to_string())])
}

/// The export's one claim: read faros' ClusterRoleBindings.
pub fn claim() -> PermissionClaim {
    let mut c = PermissionClaim::new(RBAC_GROUP, CLAIMED_RESOURCE, &["get", "list", "watch"]);
    c.default_selector = Some(PermissionClaimSelector::labels(selected_labels()));
    c
}

/// The `tenancy.faros.sh` APIExport (in `root:faros:system:controllers`).
pub fn export() -> APIExport {
    let mut e = APIExport::new(
        names::TENANCY_EXPORT,
        APIExportSpec {
            permission_claims: Some(vec![claim()]),
            ..Default::default()
        },
    );
    e.metadata.labels = Some(selected_labels());
    e
}

/// The binding the hub creates in a tenant workspace made before the export existed, accepting the
/// claim with the selector a default binding would have.
pub fn consumer_binding() -> APIBinding {
    let claim = claim();
    let selector = claim
        .default_selector
        .clone()
        .unwrap_or_else(PermissionClaimSelector::all);
    let mut b = APIBinding::new(
        names::TENANCY_EXPORT,
        APIBindingSpec {
            reference: BindingReference::export(names::SYSTEM_CONTROLLERS_PATH, names::TENANCY_EXPORT),
            permission_claims: Some(vec![
                PermissionClaim {
                    default_selector: None,
                    ..claim
                }
                .scoped(selector)
                .with_state(AcceptablePermissionClaimState::Accepted),
            ]),
            ..Default::default()
        },
    );
    b.metadata.labels = Some(selected_labels());
    b
}

/// Whether `binding` binds the tenancy export with its claims applied: the workspace's membership
/// bindings are then visible in the export's virtual workspace.
pub fn covers(binding: &APIBinding) -> bool {
    let applied = binding
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == CLAIMS_APPLIED && c.is_true()));
    binds_tenancy(binding) && applied
}

/// Whether `binding` binds the tenancy export, whatever its name: kcp's initializer names a default
/// binding `<export>-<hash>`, the hub names its own after the export, and a workspace needs one.
pub fn binds_tenancy(binding: &APIBinding) -> bool {
    binding
        .spec
        .reference
        .export
        .as_ref()
        .is_some_and(|e| e.name == names::TENANCY_EXPORT)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn export_and_binding_agree_on_the_claim() {
        let e = serde_json::to_value(export()).unwrap();
        assert_eq!(
            e["spec"]["permissionClaims"],
            json!([{"group": "rbac.authorization.k8s.io", "resource": "clusterrolebindings",
                "verbs": ["get", "list", "watch"],
                "defaultSelector": {"matchLabels": {"app.kubernetes.io/managed-by": "faros"}}}])
        );
        assert!(
            e["spec"].get("resources").is_none(),
            "the export serves nothing of its own"
        );
        let b = serde_json::to_value(consumer_binding()).unwrap();
        assert_eq!(
            b["spec"],
            json!({"reference": {"export": {"path": "root:faros:system:controllers", "name": "tenancy.faros.sh"}},
                "permissionClaims": [{"group": "rbac.authorization.k8s.io", "resource": "clusterrolebindings",
                    "verbs": ["get", "list", "watch"],
                    "selector": {"matchLabels": {"app.kubernetes.io/managed-by": "faros"}},
                    "state": "Accepted"}]})
        );
    }

    #[test]
    fn covers_only_applied_bindings_of_the_export() {
        let with = |name: &str, applied: Option<&str>| -> APIBinding {
            let mut b = consumer_binding();
            b.spec.reference = BindingReference::export("root:x", name);
            if let Some(status) = applied {
                b.status = serde_json::from_value(json!({"conditions": [
                    {"type": "PermissionClaimsApplied", "status": status, "lastTransitionTime": "2026-01-01T00:00:00Z"}]}))
                .unwrap();
            }
            b
        };
        for (name, applied, want) in [
            ("tenancy.faros.sh", Some("True"), true),
            ("tenancy.faros.sh", Some("False"), false),
            ("tenancy.faros.sh", None, false),
            ("providers.faros.sh", Some("True"), false),
        ] {
            assert_eq!(covers(&with(name, applied)), want, "{name} {applied:?}");
        }
    }

    #[test]
    fn a_binding_of_the_export_counts_whatever_its_name() {
        for (binding_name, export, want) in [
            ("tenancy.faros.sh", "tenancy.faros.sh", true),
            // kcp's initializer names a default binding after a hash of the workspace.
            ("tenancy.faros.sh-4ndkk", "tenancy.faros.sh", true),
            ("anything", "tenancy.faros.sh", true),
            ("tenancy.faros.sh", "providers.faros.sh", false),
        ] {
            let mut b = consumer_binding();
            b.metadata.name = Some(binding_name.into());
            b.spec.reference = BindingReference::export(names::SYSTEM_CONTROLLERS_PATH, export);
            assert_eq!(binds_tenancy(&b), want, "{binding_name} -> {export}");
        }
    }
}
