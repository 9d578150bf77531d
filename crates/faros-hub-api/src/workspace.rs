//! The organization or team workspace a request acts in, once resolved: shared by the tenancy
//! routes, the MCP federation and the proxies, so it lives below all of them.

/// A resolved organization (`workspace: None`) or team workspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkspaceRef {
    pub org: String,
    pub workspace: Option<String>,
    /// Canonical kcp path, e.g. `root:faros:tenants:acme:dev`.
    pub path: String,
    /// Logical cluster name (what `/clusters/<cluster>` and identity assertions carry).
    pub cluster: String,
}
