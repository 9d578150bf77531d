//! What a record is: a leaf the store, its backends and the sealing share.

/// What a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A portal session; handle: the session cookie's value.
    Session,
    /// An MCP streamable-HTTP session; handle: its `Mcp-Session-Id`.
    Mcp,
    /// The hub's own shared secret ([`super::shared_key`]).
    Key,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Session => "session",
            Self::Mcp => "mcp",
            Self::Key => "key",
        }
    }

    /// How many live records of this kind one caller may hold per replica ([`super::owners`]):
    /// sessions are browsers (a person signs in from a few), MCP sessions are agents' connections.
    pub fn cap_per_owner(self) -> usize {
        match self {
            Self::Session => 16,
            Self::Mcp => 64,
            Self::Key => 1,
        }
    }
}
