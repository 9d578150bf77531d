//! PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and Kubernetes strategic
//! merge patch. All three are pure functions over `serde_json::Value`; the HTTP layer picks one
//! by `Content-Type`, then validates and stores the result like an update.
//!
//! Server-side apply lives next to them (`apply`, `managed_fields`).

pub mod json_patch;
pub mod merge;
pub mod strategic;

// Server-side apply modules (declared by their owner):
pub mod apply;
pub mod fieldpath;
pub mod managed_fields;

pub use json_patch::json_patch;
pub use merge::merge_patch;
pub use strategic::strategic_merge_patch;

/// Why a patch could not be applied. Messages are written for the kubectl user who sent it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PatchError {
    /// The JSON patch document itself is malformed (not a list of operations, unknown `op`,
    /// missing member, bad JSON pointer). Nothing was applied.
    #[error("invalid JSON patch: {0}")]
    InvalidJsonPatch(String),
    /// Kubernetes caps the number of JSON patch operations.
    #[error("The allowed maximum operations in a JSON patch is {max}, got {got}")]
    TooManyOperations { max: usize, got: usize },
    /// A well-formed operation that does not fit the object (missing path, index out of range).
    #[error("json patch {op} operation at index {index} does not apply: {reason}")]
    OperationFailed { index: usize, op: String, reason: String },
    /// A `test` operation found a different value.
    #[error("json patch test operation at index {index} failed: the value at {path:?} is not {expected}")]
    TestFailed {
        index: usize,
        path: String,
        expected: String,
    },
    /// The strategic merge patch is malformed (bad directive, missing merge key, wrong type).
    #[error("invalid strategic merge patch: {0}")]
    InvalidStrategicPatch(String),
}

impl PatchError {
    /// Not used by the HTTP layer, which answers every patch error with 422 Invalid (kept as is:
    /// behaviour stays the same); tests pin what kube-apiserver would answer.
    #[cfg(test)]
    /// The Status kube-apiserver answers with: malformed documents are 400, too many operations
    /// 413, operations that do not apply to the object 422.
    pub fn to_status(&self) -> faros_core::status::Status {
        use faros_core::status::Status;
        match self {
            PatchError::InvalidJsonPatch(_) | PatchError::InvalidStrategicPatch(_) => {
                Status::bad_request(self.to_string())
            }
            PatchError::TooManyOperations { .. } => Status::too_large(self.to_string()),
            PatchError::OperationFailed { .. } | PatchError::TestFailed { .. } => {
                Status::failure(422, "Invalid", self.to_string())
            }
        }
    }
}
