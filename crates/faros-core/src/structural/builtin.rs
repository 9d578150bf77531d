//! Schemas of the built-in kinds this server serves.
//!
//! They come from k8s-openapi's `JsonSchema` impls (the same OpenAPI the real API server
//! publishes, minus the Kubernetes extensions), parsed once. k8s-openapi drops the
//! `x-kubernetes-list-type`/`map-type`/`patch-*` annotations, so [`overlay`] puts back the ones
//! strategic merge patch, server-side apply and kubectl rely on.

use std::sync::LazyLock;

use k8s_openapi::api::{authentication, authorization, coordination, core, events, rbac};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;

use super::{ListType, Schema};

static OBJECT_META: LazyLock<Schema> = LazyLock::new(generate::<ObjectMeta>);

/// (group, kind, schema); a dozen entries, so a scan beats hashing a tuple of strings.
static BUILTINS: LazyLock<Vec<(&'static str, &'static str, Schema)>> = LazyLock::new(|| {
    let mut m = Vec::new();
    let mut add = |group: &'static str, kind: &'static str, s: Schema| m.push((group, kind, s));
    add("", "Namespace", generate::<core::v1::Namespace>());
    add("", "ConfigMap", generate::<core::v1::ConfigMap>());
    add("", "Secret", generate::<core::v1::Secret>());
    add("", "ServiceAccount", generate::<core::v1::ServiceAccount>());
    add("", "Event", generate::<core::v1::Event>());
    add("events.k8s.io", "Event", generate::<events::v1::Event>());
    add("coordination.k8s.io", "Lease", generate::<coordination::v1::Lease>());
    add("rbac.authorization.k8s.io", "Role", generate::<rbac::v1::Role>());
    add(
        "rbac.authorization.k8s.io",
        "ClusterRole",
        generate::<rbac::v1::ClusterRole>(),
    );
    add(
        "rbac.authorization.k8s.io",
        "RoleBinding",
        generate::<rbac::v1::RoleBinding>(),
    );
    add(
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        generate::<rbac::v1::ClusterRoleBinding>(),
    );
    add(
        "authentication.k8s.io",
        "TokenReview",
        generate::<authentication::v1::TokenReview>(),
    );
    add(
        "authorization.k8s.io",
        "SubjectAccessReview",
        generate::<authorization::v1::SubjectAccessReview>(),
    );
    add(
        "authorization.k8s.io",
        "SelfSubjectAccessReview",
        generate::<authorization::v1::SelfSubjectAccessReview>(),
    );
    m
});

/// The schema of `metadata` (ObjectMeta) with its list and patch annotations.
pub fn object_meta_schema() -> Schema {
    OBJECT_META.clone()
}

/// The shared ObjectMeta schema, for the pruning and unknown-field walks.
pub(super) fn object_meta() -> &'static Schema {
    &OBJECT_META
}

/// The full object schema (apiVersion, kind, metadata, spec/data/...) of a built-in kind, by API
/// group (`""` for core) and kind. Built once; each call clones.
pub fn builtin_schema(group: &str, kind: &str) -> Option<Schema> {
    builtin_schema_ref(group, kind).cloned()
}

/// Like [`builtin_schema`] without the clone, for hot paths.
pub fn builtin_schema_ref(group: &str, kind: &str) -> Option<&'static Schema> {
    BUILTINS
        .iter()
        .find(|(g, k, _)| *g == group && *k == kind)
        .map(|(_, _, s)| s)
}

fn generate<T: JsonSchema>() -> Schema {
    let root = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    match Schema::from_openapi_v3_with(root.as_value(), &overlay) {
        Ok(mut s) => {
            // The root is inlined, not reached through a `$ref`, so the hook has not seen it.
            overlay(&T::schema_name(), &mut s);
            // k8s-openapi marks `metadata` required because its Rust field is not optional;
            // Kubernetes does not (a TokenReview is posted without metadata).
            s.required.retain(|r| r != "metadata");
            s
        }
        Err(e) => {
            // k8s-openapi's schemas are static and covered by the tests below; a failure here
            // is a build-time regression, reported rather than panicking a request.
            tracing::error!(error = %e, kind = %T::schema_name(), "built-in schema does not parse");
            Schema::default()
        }
    }
}

fn set_list(s: &mut Schema, field: &str, list_type: ListType) {
    if let Some(f) = s.properties.get_mut(field) {
        f.list_type = Some(list_type);
    }
}

fn set_patch(s: &mut Schema, field: &str, strategy: &str, merge_key: Option<&str>) {
    if let Some(f) = s.properties.get_mut(field) {
        f.patch_strategy = Some(strategy.into());
        f.patch_merge_key = merge_key.map(str::to_string);
    }
}

/// The Kubernetes annotations (from the Go types' `+listType`, `+patchStrategy`, `+structType`
/// markers) that k8s-openapi's schemas lack, keyed by definition name.
fn overlay(definition: &str, s: &mut Schema) {
    let name = definition.rsplit_once('.').map_or(definition, |(_, n)| n);
    let package = definition.rsplit_once('.').map_or("", |(p, _)| p);
    match (package, name) {
        ("io.k8s.apimachinery.pkg.apis.meta.v1", "ObjectMeta") => {
            set_list(s, "finalizers", ListType::Set);
            set_patch(s, "finalizers", "merge", None);
            set_list(s, "ownerReferences", ListType::Map(vec!["uid".into()]));
            set_patch(s, "ownerReferences", "merge", Some("uid"));
            set_list(s, "managedFields", ListType::Atomic);
        }
        // Opaque field sets (managedFields[].fieldsV1): anything inside is kept.
        ("io.k8s.apimachinery.pkg.apis.meta.v1", "FieldsV1") => s.preserve_unknown_fields = true,
        ("io.k8s.apimachinery.pkg.apis.meta.v1", "LabelSelector") => {
            s.map_atomic = true;
            set_list(s, "matchExpressions", ListType::Atomic);
        }
        ("io.k8s.apimachinery.pkg.apis.meta.v1", "LabelSelectorRequirement") => set_list(s, "values", ListType::Atomic),
        ("io.k8s.api.core.v1", "ObjectReference" | "LocalObjectReference") => s.map_atomic = true,
        ("io.k8s.api.core.v1", "NamespaceSpec") => set_list(s, "finalizers", ListType::Atomic),
        ("io.k8s.api.core.v1", "NamespaceStatus") => {
            set_list(s, "conditions", ListType::Map(vec!["type".into()]));
            set_patch(s, "conditions", "merge", Some("type"));
        }
        ("io.k8s.api.core.v1", "ServiceAccount") => {
            set_list(s, "secrets", ListType::Atomic);
            set_patch(s, "secrets", "merge", Some("name"));
            set_list(s, "imagePullSecrets", ListType::Atomic);
        }
        ("io.k8s.api.rbac.v1", "Role" | "ClusterRole") => set_list(s, "rules", ListType::Atomic),
        ("io.k8s.api.rbac.v1", "AggregationRule") => set_list(s, "clusterRoleSelectors", ListType::Atomic),
        ("io.k8s.api.rbac.v1", "PolicyRule") => {
            for f in ["apiGroups", "resources", "resourceNames", "verbs", "nonResourceURLs"] {
                set_list(s, f, ListType::Atomic);
            }
        }
        ("io.k8s.api.rbac.v1", "RoleBinding" | "ClusterRoleBinding") => set_list(s, "subjects", ListType::Atomic),
        ("io.k8s.api.rbac.v1", "RoleRef") => s.map_atomic = true,
        // kube validates a subject in Go, not by its OpenAPI schema: a missing kind decodes as ""
        // and is refused as not one of the three kinds (Unsupported value), not as Required.
        ("io.k8s.api.rbac.v1", "Subject") => {
            s.map_atomic = true;
            s.required.retain(|r| r != "kind");
            if let Some(kind) = s.properties.get_mut("kind") {
                kind.default = Some(serde_json::Value::String(String::new()));
                kind.enum_ = ["ServiceAccount", "User", "Group"]
                    .map(|k| serde_json::Value::String(k.into()))
                    .to_vec();
            }
        }
        ("io.k8s.api.authentication.v1", "TokenReviewSpec" | "TokenReviewStatus") => {
            set_list(s, "audiences", ListType::Atomic)
        }
        ("io.k8s.api.authentication.v1", "UserInfo") | ("io.k8s.api.authorization.v1", "SubjectAccessReviewSpec") => {
            set_list(s, "groups", ListType::Atomic);
            if let Some(values) = s
                .properties
                .get_mut("extra")
                .and_then(|e| e.additional_properties.as_deref_mut())
            {
                values.list_type = Some(ListType::Atomic);
            }
        }
        ("io.k8s.api.authorization.v1", "FieldSelectorAttributes" | "LabelSelectorAttributes") => {
            set_list(s, "requirements", ListType::Atomic)
        }
        _ => {}
    }
}
