//! What a session record holds: the sealed shape shared by [`super::session`] (which creates and
//! looks up sessions) and [`super::renew`] (which renews their ID tokens), so neither imports the
//! other's record type.

use faros_core::status::Status;
use jiff::Timestamp;

/// What an OIDC session keeps besides its ID token, sealed with it in the session record.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OidcGrant {
    /// Spent (and rotated) to renew the ID token. Never leaves the sealed record.
    pub refresh_token: Option<String>,
    /// The current ID token's `iat` and `exp`.
    pub issued: Timestamp,
    pub expires: Timestamp,
    /// A renewal is in flight until then (claimed by one request on one replica, [`super::renew`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renewing_until: Option<Timestamp>,
}

impl std::fmt::Debug for OidcGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcGrant")
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "<redacted>"))
            .field("issued", &self.issued)
            .field("expires", &self.expires)
            .field("renewing_until", &self.renewing_until)
            .finish()
    }
}

/// What a session record holds (sealed).
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Stored {
    pub(crate) credential: String,
    pub(crate) user: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) oidc: Option<OidcGrant>,
}

/// The answer when the session records cannot be read or written.
pub(crate) fn unavailable(e: crate::records::StoreError) -> Status {
    tracing::warn!(error = %e, "session store unavailable");
    Status::unavailable("the session store is unavailable; try again").retry_after(1)
}
