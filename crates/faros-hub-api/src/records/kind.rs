//! What a record is: a leaf the store, its backends and the sealing share.

/// What a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A portal session; handle: the session cookie's value.
    Session,
    /// An OIDC sign-in in flight; handle: its `state`.
    Oidc,
    /// An MCP streamable-HTTP session; handle: its `Mcp-Session-Id`.
    Mcp,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Session => "session",
            Self::Oidc => "oidc",
            Self::Mcp => "mcp",
        }
    }
}
