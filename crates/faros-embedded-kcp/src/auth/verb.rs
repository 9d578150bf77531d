//! The verbs the server itself asks about: Kubernetes' request verbs (derived from the HTTP method
//! and path) and kcp's own — `bind` on an APIExport, `use` on a WorkspaceType, `access` on `/` of a
//! workspace. IO-free.
//!
//! RBAC rules and SubjectAccessReviews carry any verb (`impersonate`, `escalate`, `*`, custom ones),
//! so the authorizer's [`Attributes`](super::Attributes) keep the verb as text; this enum names the
//! ones the server's code spells, so a typo is a compile error and not a silent denial.

use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
    /// kcp: bind to an APIExport (APIBindings, endpoint slices, default bindings of a type).
    Bind,
    /// kcp: create workspaces of a WorkspaceType.
    Use,
    /// kcp: enter a workspace at all (non-resource, path `/`).
    Access,
}

impl Verb {
    pub const ALL: [Verb; 11] = [
        Verb::Get,
        Verb::List,
        Verb::Watch,
        Verb::Create,
        Verb::Update,
        Verb::Patch,
        Verb::Delete,
        Verb::DeleteCollection,
        Verb::Bind,
        Verb::Use,
        Verb::Access,
    ];

    /// The verb as RBAC spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
            Verb::Bind => "bind",
            Verb::Use => "use",
            Verb::Access => "access",
        }
    }

    /// The verb a text names, if the server knows it (RBAC's spelling, case-sensitive as RBAC is).
    pub fn parse(s: &str) -> Option<Verb> {
        Verb::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// `get`, `list` and `watch`: the verbs that only read.
    pub const fn is_read(self) -> bool {
        matches!(self, Verb::Get | Verb::List | Verb::Watch)
    }
}

/// Whether a verb given as text only reads (`get`, `list`, `watch`).
pub fn is_read(verb: &str) -> bool {
    Verb::parse(verb).is_some_and(Verb::is_read)
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error of parsing a verb the server does not name.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown verb {0:?}")]
pub struct UnknownVerb(pub String);

impl FromStr for Verb {
    type Err = UnknownVerb;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Verb::parse(s).ok_or_else(|| UnknownVerb(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        let table = [
            (Verb::Get, "get", true),
            (Verb::List, "list", true),
            (Verb::Watch, "watch", true),
            (Verb::Create, "create", false),
            (Verb::Update, "update", false),
            (Verb::Patch, "patch", false),
            (Verb::Delete, "delete", false),
            (Verb::DeleteCollection, "deletecollection", false),
            (Verb::Bind, "bind", false),
            (Verb::Use, "use", false),
            (Verb::Access, "access", false),
        ];
        assert_eq!(table.len(), Verb::ALL.len(), "every verb is in the table");
        for (verb, text, read) in table {
            assert_eq!(verb.as_str(), text);
            assert_eq!(verb.to_string(), text);
            assert_eq!(Verb::parse(text), Some(verb));
            assert_eq!(text.parse::<Verb>(), Ok(verb));
            assert_eq!(verb.is_read(), read, "{text}");
            assert_eq!(is_read(text), read, "{text}");
        }
    }

    #[test]
    fn other_texts_are_not_verbs_of_the_server() {
        for text in ["", "*", "GET", "Get", "impersonate", "escalate", "delete-collection"] {
            assert_eq!(Verb::parse(text), None, "{text:?}");
            assert_eq!(text.parse::<Verb>(), Err(UnknownVerb(text.to_string())));
            assert!(!is_read(text), "{text:?}");
        }
    }
}
