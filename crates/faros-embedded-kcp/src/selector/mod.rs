//! Label and field selectors of list, watch and deletecollection requests.
//!
//! Both are parsed once per request and then matched against every candidate object, so the
//! parsed forms are plain data and matching is IO-free. Parse errors carry Kubernetes' wording
//! (the server answers them with 400 BadRequest and the message as is).

pub mod fields;
pub mod labels;

pub use fields::FieldSelector;
pub use labels::LabelSelector;

/// Why a selector could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A `labelSelector` string (or one requirement of it) is malformed.
    #[error("unable to parse requirement: {0}")]
    Requirement(String),
    /// A `metav1.LabelSelector` object is malformed.
    #[error("invalid label selector: {0}")]
    LabelSelectorObject(String),
    /// A `fieldSelector` term has no `=`, `==` or `!=`, or an empty field name.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    FieldTerm { selector: String, term: String },
    /// A `fieldSelector` value has a bad escape or an unescaped special character.
    #[error("invalid field selector value {value:?}: {reason}")]
    FieldValue { value: String, reason: String },
}
