//! Structural schemas: the shape of a resource as an API server needs it.
//!
//! Shared by the embedded kcp (which serves with it) and the provider-upgrade gate
//! ([`crate::revision::compat`], which validates live objects under a new schema with exactly the
//! rules a server would apply). One tree serves every schema-aware step: strict field validation (unknown fields), pruning,
//! defaulting, value validation, list/map merge semantics for strategic merge patch and
//! server-side apply, and the OpenAPI documents kubectl downloads. Built-in kinds get their
//! schema from [`builtin_schema`] (k8s-openapi's schemas plus the Kubernetes list/patch annotations
//! k8s-openapi does not carry); schema-defined resources (APIResourceSchema / CRD) parse theirs from
//! `openAPIV3Schema` with [`Schema::from_openapi_v3`].
//!
//! Submodules, one job each: `openapi` (parse and print), `fields` (unknown fields, pruning,
//! defaulting), `validate` (value validation with kube-apiserver's messages), `builtin`.

mod builtin;
mod fields;
mod gofmt;
mod openapi;
#[cfg(test)]
mod tests;
mod validate;

use std::collections::BTreeMap;

pub use builtin::{builtin_schema, builtin_schema_ref, object_meta_schema};

/// Why an OpenAPI v3 schema could not be turned into a structural [`Schema`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    #[error("{path}: a schema must be a JSON object")]
    NotAnObject { path: String },
    #[error("{path}: invalid value for {keyword}: {reason}")]
    InvalidKeyword {
        path: String,
        keyword: String,
        reason: String,
    },
    #[error("{path}: cannot resolve $ref {reference:?}")]
    UnresolvedRef { path: String, reference: String },
}

/// How a list is merged and owned (`x-kubernetes-list-type`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ListType {
    /// The list is replaced as a whole and owned as one field (the default).
    #[default]
    Atomic,
    /// A set of scalars; each value is owned separately.
    Set,
    /// A list of objects identified by the given keys (`x-kubernetes-list-map-keys`).
    Map(Vec<String>),
}

/// One node of a structural schema. Fields absent in the source schema stay `None`/empty.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schema {
    /// `type`: object, array, string, integer, number, boolean (None = any).
    pub type_: Option<String>,
    pub description: Option<String>,
    pub format: Option<String>,
    /// Named properties of an object.
    pub properties: BTreeMap<String, Schema>,
    /// Schema of every value of a map-like object (`additionalProperties`).
    pub additional_properties: Option<Box<Schema>>,
    /// Schema of list items.
    pub items: Option<Box<Schema>>,
    pub required: Vec<String>,
    pub nullable: bool,
    /// `x-kubernetes-preserve-unknown-fields`: unknown fields are kept, not pruned or rejected.
    pub preserve_unknown_fields: bool,
    /// `x-kubernetes-int-or-string`.
    pub int_or_string: bool,
    /// `x-kubernetes-embedded-resource`.
    pub embedded_resource: bool,
    /// `x-kubernetes-list-type` (+ map keys). None means atomic.
    pub list_type: Option<ListType>,
    /// `x-kubernetes-map-type: atomic` (a map owned and replaced as a whole).
    pub map_atomic: bool,
    /// Strategic merge patch: `x-kubernetes-patch-strategy` (e.g. "merge", "retainKeys", "merge,retainKeys").
    pub patch_strategy: Option<String>,
    /// Strategic merge patch: `x-kubernetes-patch-merge-key`.
    pub patch_merge_key: Option<String>,
    pub default: Option<serde_json::Value>,
    pub enum_: Vec<serde_json::Value>,
    pub pattern: Option<String>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    /// `exclusiveMinimum` (OpenAPI v3.0 boolean form; the 2020-12 numeric form is folded into `minimum`).
    pub exclusive_minimum: bool,
    /// `exclusiveMaximum`, like `exclusive_minimum`.
    pub exclusive_maximum: bool,
    pub multiple_of: Option<f64>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub min_properties: Option<u64>,
    pub max_properties: Option<u64>,
}

impl Schema {
    /// The schema of property `name` of an object node: a named property, else
    /// `additionalProperties`. None when the field is unknown.
    pub fn field(&self, name: &str) -> Option<&Schema> {
        self.properties.get(name).or(self.additional_properties.as_deref())
    }

    /// The list type of an array node (atomic when unspecified).
    pub fn list_type(&self) -> ListType {
        self.list_type.clone().unwrap_or_default()
    }
}
