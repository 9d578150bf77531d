//! How the hub serves HTTP: limits, timeouts and the scheme it is reached with. A leaf, read by the
//! proxies, the portal and the hub's state alike.

use std::time::Duration;

/// Limits and timeouts of the HTTP surface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpSettings {
    /// Longest wait for a provider upstream's response headers (then 504).
    pub upstream_timeout: Duration,
    /// Longest wait for kcp's response headers on the pass-through (watches send headers at once).
    pub kcp_timeout: Duration,
    /// Largest request body forwarded to a provider or kcp (then 413).
    pub body_limit: usize,
    /// Scheme the hub is served with, for `X-Forwarded-Proto`.
    pub public_proto: &'static str,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            upstream_timeout: Duration::from_secs(30),
            kcp_timeout: Duration::from_secs(30),
            body_limit: 10 * 1024 * 1024,
            public_proto: "https",
        }
    }
}
