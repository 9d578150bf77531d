//! The built-in Kubernetes resources every logical cluster serves.

use std::sync::Arc;

use crate::registry::{PrinterColumn, ResourceDef};
use crate::schema::{Schema, builtin_schema};

struct Spec {
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    status: bool,
    create_only: bool,
    columns: &'static [(&'static str, &'static str, &'static str)],
    selectable: &'static [&'static str],
}

const fn spec(group: &'static str, version: &'static str, resource: &'static str, kind: &'static str) -> Spec {
    Spec {
        group,
        version,
        resource,
        kind,
        namespaced: true,
        short_names: &[],
        status: false,
        create_only: false,
        columns: &[],
        selectable: &[],
    }
}

const SPECS: &[Spec] = &[
    Spec {
        namespaced: false,
        short_names: &["ns"],
        status: true,
        columns: &[("Status", "string", ".status.phase")],
        selectable: &["status.phase"],
        ..spec("", "v1", "namespaces", "Namespace")
    },
    Spec {
        short_names: &["cm"],
        ..spec("", "v1", "configmaps", "ConfigMap")
    },
    Spec {
        columns: &[("Type", "string", ".type")],
        selectable: &["type"],
        ..spec("", "v1", "secrets", "Secret")
    },
    Spec {
        short_names: &["sa"],
        ..spec("", "v1", "serviceaccounts", "ServiceAccount")
    },
    Spec {
        short_names: &["ev"],
        columns: &[
            ("Type", "string", ".type"),
            ("Reason", "string", ".reason"),
            ("Message", "string", ".message"),
        ],
        selectable: &[
            "involvedObject.kind",
            "involvedObject.name",
            "involvedObject.namespace",
            "reason",
            "type",
        ],
        ..spec("", "v1", "events", "Event")
    },
    Spec {
        short_names: &["ev"],
        ..spec("events.k8s.io", "v1", "events", "Event")
    },
    Spec {
        columns: &[("Holder", "string", ".spec.holderIdentity")],
        ..spec("coordination.k8s.io", "v1", "leases", "Lease")
    },
    spec("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    spec("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    Spec {
        namespaced: false,
        ..spec("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole")
    },
    Spec {
        namespaced: false,
        ..spec(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
        )
    },
    Spec {
        namespaced: false,
        create_only: true,
        ..spec("authentication.k8s.io", "v1", "tokenreviews", "TokenReview")
    },
    Spec {
        namespaced: false,
        create_only: true,
        ..spec("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview")
    },
    Spec {
        namespaced: false,
        create_only: true,
        ..spec(
            "authorization.k8s.io",
            "v1",
            "subjectaccessreviews",
            "SubjectAccessReview",
        )
    },
    Spec {
        namespaced: false,
        create_only: true,
        ..spec(
            "authorization.k8s.io",
            "v1",
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
        )
    },
    Spec {
        namespaced: false,
        create_only: true,
        ..spec(
            "authorization.k8s.io",
            "v1",
            "selfsubjectrulesreviews",
            "SelfSubjectRulesReview",
        )
    },
    Spec {
        create_only: true,
        ..spec(
            "authorization.k8s.io",
            "v1",
            "localsubjectaccessreviews",
            "LocalSubjectAccessReview",
        )
    },
];

/// Definitions of every built-in resource.
pub fn builtin_resources() -> Vec<ResourceDef> {
    SPECS
        .iter()
        .map(|s| ResourceDef {
            group: s.group.into(),
            version: s.version.into(),
            resource: s.resource.into(),
            singular: s.kind.to_lowercase(),
            kind: s.kind.into(),
            list_kind: format!("{}List", s.kind),
            namespaced: s.namespaced,
            short_names: s.short_names.iter().map(|n| n.to_string()).collect(),
            categories: vec![],
            status_subresource: s.status,
            generation: false,
            strategic_merge: true,
            create_only: s.create_only,
            selectable_fields: s.selectable.iter().map(|n| n.to_string()).collect(),
            printer_columns: s
                .columns
                .iter()
                .map(|(name, ty, path)| PrinterColumn {
                    name: name.to_string(),
                    type_: ty.to_string(),
                    format: String::new(),
                    description: String::new(),
                    priority: 0,
                    json_path: path.to_string(),
                })
                .collect(),
            schema: Arc::new(builtin_schema(s.group, s.kind).unwrap_or_else(permissive)),
            conversion: None,
            terminating: false,
            storage_version_hash: None,
            schema_versions: None,
        })
        .collect()
}

/// Used only if a built-in kind has no schema: accepts anything rather than rejecting valid objects.
fn permissive() -> Schema {
    Schema {
        type_: Some("object".into()),
        preserve_unknown_fields: true,
        ..Default::default()
    }
}
