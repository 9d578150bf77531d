//! Structural schemas: the shape of a resource as the server needs it (pruning, defaulting,
//! validation, merge semantics, OpenAPI). They live in [`faros_core::structural`], shared with the
//! provider-upgrade gate that validates live objects under a new schema; this module names them
//! for the server's code.

pub use faros_core::structural::{ListType, Schema, builtin_schema, object_meta_schema};

#[cfg(any(test, feature = "fuzzing"))]
pub(crate) use faros_core::structural::builtin_schema_ref;
