//! The objects `init` wants to exist, computed without IO: the APIExport's merged resource list, the
//! endpoint slice and the bind grant.

use std::collections::BTreeSet;

use faros_core::catalog::PublishedSchema;
use faros_core::kcp::apis::v1alpha1::{APIExportEndpointSlice, APIExportEndpointSliceSpec, ExportBindingReference};
use faros_core::kcp::apis::v1alpha2::{APIExport, APIExportSpec, PermissionClaim, ResourceSchema};
use faros_core::names;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use kube::api::ObjectMeta;

use super::inputs::SchemaFile;

/// `spec.resources` entries for `schemas`, in file order.
pub fn owned_resources(schemas: &[SchemaFile]) -> Vec<ResourceSchema> {
    schemas
        .iter()
        .map(|s| ResourceSchema::crd(&s.schema.spec.group, &s.schema.spec.names.plural, s.name()))
        .collect()
}

/// Merges the resources this provider owns into what the export already lists.
///
/// Owned entries come first, in their order. An existing entry survives unless it has the same
/// (group, name) as an owned one (replaced) or belongs to one of `owned_groups` (a resource this
/// provider no longer ships: pruned). Entries of other groups, e.g. added at runtime by a
/// controller, are kept in their order.
pub fn merge_resources(
    existing: &[ResourceSchema],
    owned: &[ResourceSchema],
    owned_groups: &BTreeSet<String>,
) -> Vec<ResourceSchema> {
    let mut merged = owned.to_vec();
    for entry in existing {
        let replaced = owned.iter().any(|o| o.group == entry.group && o.name == entry.name);
        if !replaced && !owned_groups.contains(&entry.group) {
            merged.push(entry.clone());
        }
    }
    merged
}

/// The entries [`merge_resources`] drops without replacing them: resources of `owned_groups` that
/// no schema defines any more. Removing them takes the API away from every bound tenant.
pub fn stale_resources(
    existing: &[ResourceSchema],
    owned: &[ResourceSchema],
    owned_groups: &BTreeSet<String>,
) -> Vec<ResourceSchema> {
    existing
        .iter()
        .filter(|e| owned_groups.contains(&e.group) && !owned.iter().any(|o| o.group == e.group && o.name == e.name))
        .cloned()
        .collect()
}

/// A fresh APIExport named `export`.
pub fn new_export(export: &str, resources: Vec<ResourceSchema>, claims: Vec<PermissionClaim>) -> APIExport {
    APIExport::new(
        export,
        APIExportSpec {
            resources: Some(resources),
            permission_claims: Some(claims),
            ..Default::default()
        },
    )
}

/// `existing` with the resources it does not list yet added (and, with pruning allowed, stale ones
/// removed), or `None` when nothing changes.
///
/// `init` proposes, the hub switches: an entry the export already lists keeps the schema it serves,
/// even when `owned` names a newer one, and the claims stay as they are. The hub reconciler moves
/// the export to the newly published schemas and claims once its compatibility gate allows
/// (docs/hub-reconciler.md#provider-revisions). Only `spec.resources` is touched: kcp writes
/// `spec.identity` itself, and other writers' fields must survive.
pub fn update_export(
    existing: &APIExport,
    owned: &[ResourceSchema],
    owned_groups: &BTreeSet<String>,
) -> Option<APIExport> {
    let current = existing.spec.resources.clone().unwrap_or_default();
    let served: Vec<ResourceSchema> = owned
        .iter()
        .map(|o| {
            current
                .iter()
                .find(|c| c.group == o.group && c.name == o.name)
                .cloned()
                .unwrap_or_else(|| o.clone())
        })
        .collect();
    let merged = merge_resources(&current, &served, owned_groups);
    if merged == current {
        return None;
    }
    let mut updated = existing.clone();
    updated.spec.resources = Some(merged);
    Some(updated)
}

/// What the CatalogEntry records of `schemas`: each resource's schema name and content hash
/// ([`faros_core::revision::schema_sha256`]), the hub's input for a ProviderRevision.
pub fn published_schemas(schemas: &[SchemaFile]) -> Vec<PublishedSchema> {
    schemas
        .iter()
        .map(|s| PublishedSchema {
            group: s.schema.spec.group.clone(),
            resource: s.schema.spec.names.plural.clone(),
            name: s.name().to_string(),
            sha256: faros_core::revision::schema_sha256(&serde_json::to_value(&s.schema.spec).unwrap_or_default()),
        })
        .collect()
}

/// The endpoint slice of `export`, named like it. Without `path` kcp resolves the export in the
/// slice's own workspace; `init` passes the workspace's path, which real kcp needs to publish
/// URLs when tenants bind the export by path.
pub fn endpoint_slice(export: &str, path: Option<&str>) -> APIExportEndpointSlice {
    APIExportEndpointSlice::new(
        export,
        APIExportEndpointSliceSpec {
            export: ExportBindingReference {
                path: path.map(str::to_string),
                name: export.to_string(),
            },
            ..Default::default()
        },
    )
}

/// Whether an existing slice must be recreated (`spec.export` is immutable) to point at `path`.
/// Without an explicit path any existing slice is kept: recreating it would briefly drop the
/// virtual-workspace endpoints every controller is connected to.
pub fn slice_needs_recreate(existing: &APIExportEndpointSlice, export: &str, path: Option<&str>) -> bool {
    if existing.spec.export.name != export {
        return true;
    }
    match path {
        None => false,
        Some(p) => existing.spec.export.path.as_deref() != Some(p),
    }
}

/// The ClusterRole and ClusterRoleBinding letting every authenticated user bind `export`.
pub fn bind_grant(export: &str) -> (ClusterRole, ClusterRoleBinding) {
    let name = names::bind_grant_name(export);
    let meta = ObjectMeta {
        name: Some(name.clone()),
        ..Default::default()
    };
    let role = ClusterRole {
        metadata: meta.clone(),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec!["apis.kcp.io".into()]),
            resources: Some(vec!["apiexports".into()]),
            resource_names: Some(vec![export.to_string()]),
            verbs: vec![names::BIND_VERB.into()],
            ..Default::default()
        }]),
        ..Default::default()
    };
    let binding = ClusterRoleBinding {
        metadata: meta,
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name,
        },
        subjects: Some(vec![Subject {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "Group".into(),
            name: names::BIND_GRANT_GROUP.into(),
            namespace: None,
        }]),
    };
    (role, binding)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn r(group: &str, name: &str) -> ResourceSchema {
        ResourceSchema::crd(group, name, &format!("v1.{name}.{group}"))
    }

    #[test]
    fn merge_keeps_foreign_replaces_owned_prunes_stale() {
        let groups: BTreeSet<String> = ["code.faros.sh".to_string()].into();
        let existing = vec![
            r("code.faros.sh", "connections"),
            r("code.faros.sh", "coderepos"),
            r("infrastructure.faros.sh", "templates"),
        ];
        let mut newer = r("code.faros.sh", "connections");
        newer.schema = "v2.connections.code.faros.sh".into();
        let owned = vec![newer.clone(), r("code.faros.sh", "repositories")];
        let merged = merge_resources(&existing, &owned, &groups);
        assert_eq!(
            merged,
            vec![
                newer,
                r("code.faros.sh", "repositories"),
                r("infrastructure.faros.sh", "templates")
            ]
        );
        assert_eq!(
            stale_resources(&existing, &owned, &groups),
            vec![r("code.faros.sh", "coderepos")],
            "replaced is not stale, foreign is not stale"
        );
        assert!(stale_resources(&existing, &[], &BTreeSet::new()).is_empty());
        // No schemas: nothing owned, every existing entry preserved.
        assert_eq!(merge_resources(&existing, &[], &BTreeSet::new()), existing);
    }

    #[test]
    fn update_export_adds_new_resources_and_never_moves_served_ones() {
        let groups: BTreeSet<String> = ["q.io".to_string()].into();
        let owned = vec![r("q.io", "greetings")];
        let claims = vec![PermissionClaim::new("", "configmaps", &["get", "list", "watch"])];
        let mut existing = new_export("q.io", owned.clone(), claims.clone());
        existing.spec.identity = Some(Default::default());
        assert!(update_export(&existing, &owned, &groups).is_none());
        existing.spec.resources.as_mut().unwrap().push(r("other.io", "things"));
        assert!(
            update_export(&existing, &owned, &groups).is_none(),
            "foreign entries are kept as is"
        );
        // v2 of greetings is the hub's to switch to; a new resource is added.
        let mut v2 = r("q.io", "greetings");
        v2.schema = "v2.greetings.q.io".into();
        assert!(update_export(&existing, std::slice::from_ref(&v2), &groups).is_none());
        let added = update_export(&existing, &[v2, r("q.io", "farewells")], &groups).unwrap();
        assert_eq!(
            added.spec.resources.unwrap(),
            vec![r("q.io", "greetings"), r("q.io", "farewells"), r("other.io", "things")]
        );
        assert_eq!(added.spec.permission_claims, Some(claims), "claims are proposals too");
        assert_eq!(
            added.spec.identity,
            Some(Default::default()),
            "kcp-written fields survive"
        );
    }

    #[test]
    fn published_schemas_hash_the_spec() {
        let file: SchemaFile = SchemaFile {
            file: "greetings.yaml".into(),
            schema: serde_json::from_value(
                json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema",
                "metadata": {"name": "v1.greetings.q.io"},
                "spec": {"group": "q.io", "names": {"kind": "Greeting", "plural": "greetings"}, "scope": "Namespaced",
                    "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"type": "object"}}]}}),
            )
            .unwrap(),
        };
        let got = published_schemas(std::slice::from_ref(&file));
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].group.as_str(), got[0].resource.as_str()), ("q.io", "greetings"));
        assert_eq!(got[0].name, "v1.greetings.q.io");
        assert_eq!(
            got[0].sha256,
            faros_core::revision::schema_sha256(&serde_json::to_value(&file.schema.spec).unwrap())
        );
    }

    #[test]
    fn new_export_wire_shape() {
        let export = new_export(
            "q.io",
            vec![r("q.io", "greetings")],
            vec![PermissionClaim::new("", "configmaps", &["get", "list", "watch"])],
        );
        assert_eq!(
            serde_json::to_value(&export).unwrap(),
            json!({"apiVersion": "apis.kcp.io/v1alpha2", "kind": "APIExport", "metadata": {"name": "q.io"},
                "spec": {"resources": [{"name": "greetings", "group": "q.io", "schema": "v1.greetings.q.io", "storage": {"crd": {}}}],
                    "permissionClaims": [{"resource": "configmaps", "verbs": ["get", "list", "watch"]}]}})
        );
    }

    #[test]
    fn slice_shape_and_recreate_rule() {
        let plain = endpoint_slice("q.io", None);
        assert_eq!(
            serde_json::to_value(&plain).unwrap()["spec"],
            json!({"export": {"name": "q.io"}})
        );
        let pathed = endpoint_slice("q.io", Some("root:faros:providers:q"));
        for (existing, path, want) in [
            (&plain, None, false),
            (&pathed, None, false),
            (&pathed, Some("root:faros:providers:q"), false),
            (&plain, Some("root:faros:providers:q"), true),
            (&pathed, Some("root:elsewhere"), true),
        ] {
            assert_eq!(slice_needs_recreate(existing, "q.io", path), want, "{path:?}");
        }
        assert!(slice_needs_recreate(&endpoint_slice("other", None), "q.io", None));
    }

    #[test]
    fn bind_grant_shape() {
        let (role, binding) = bind_grant("q.io");
        assert_eq!(
            serde_json::to_value(&role).unwrap(),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "faros:providers:bind:q.io"},
                "rules": [{"apiGroups": ["apis.kcp.io"], "resourceNames": ["q.io"], "resources": ["apiexports"], "verbs": ["bind"]}]})
        );
        assert_eq!(
            serde_json::to_value(&binding).unwrap(),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "faros:providers:bind:q.io"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "faros:providers:bind:q.io"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}]})
        );
    }
}
