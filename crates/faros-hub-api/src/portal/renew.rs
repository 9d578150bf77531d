//! OIDC sessions that outlive their ID token: the refresh token renews it shortly before it
//! expires, on whichever replica the session's next request reaches.
//!
//! Renewal happens on request, not in a background task: an idle session costs nothing (its
//! refresh token simply waits, up to the identity provider's refresh lifetime), no replica has to
//! be elected to renew, and a session that nobody uses is not kept alive at the IdP. A request
//! whose session's ID token is within [`skew`] of expiry (or past it) renews first and goes on
//! with the new token; the cookie does not change.
//!
//! Identity providers rotate refresh tokens (oidc-provider does for public clients) and treat a
//! second use of a spent one as theft: they revoke the whole grant. So two replicas (or two
//! requests on one) must never both spend the same refresh token. The one that renews first
//! *claims* the renewal with a compare-and-swap on the session record (its version), writing a
//! lease ([`super::grant::OidcGrant::renewing_until`]); the others, seeing the lease, go
//! on with the still-valid ID token or, if it has expired, wait for the winner's tokens. The
//! winner writes the new ID and refresh tokens under the version its claim produced. A lease
//! outlives the token request's timeout, so it lapses only when its holder died mid-renewal.
//!
//! When the IdP refuses the refresh token (the user was disabled or deleted, the grant or token
//! revoked or expired), the session ends: its record is deleted and the request goes on without
//! credentials, so it is answered 401 and the portal returns to sign-in. When the IdP cannot be
//! reached, the lease is released and the current ID token is used as long as it is accepted.

use std::time::Duration;

use faros_core::status::Status;
use futures::future::BoxFuture;
use jiff::{SignedDuration, Timestamp};

use super::grant::{OidcGrant, Stored, unavailable};
use crate::records::{Kind, Records, Versioned};

/// Renew at most this long before the ID token expires.
pub const MAX_SKEW: Duration = Duration::from_secs(60);
/// How often a request waiting for another replica's renewal looks at the record.
const WAIT_POLL: Duration = Duration::from_millis(100);

/// What the IdP answered to a refresh.
#[derive(Clone, PartialEq, Eq)]
pub struct Renewed {
    pub id_token: String,
    /// The rotated refresh token; `None` when the IdP keeps the old one valid.
    pub refresh_token: Option<String>,
    /// The new ID token's `iat` and `exp`.
    pub issued: Timestamp,
    pub expires: Timestamp,
}

impl std::fmt::Debug for Renewed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renewed")
            .field("issued", &self.issued)
            .field("expires", &self.expires)
            .finish_non_exhaustive()
    }
}

/// Why a renewal did not happen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenewError {
    /// Final: the session ends.
    #[error("the identity provider refused to renew the session: {0}")]
    Refused(String),
    /// Transient: try again at the next request.
    #[error("the identity provider could not renew the session now: {0}")]
    Unavailable(String),
}

/// Spends a refresh token at the IdP (the portal's OIDC client, [`super::login::OidcLogin`]).
pub trait Refresher: Send + Sync + 'static {
    /// Trades `refresh_token` for new tokens whose ID token must name `user`.
    fn refresh<'a>(&'a self, refresh_token: &'a str, user: &'a str) -> BoxFuture<'a, Result<Renewed, RenewError>>;

    /// How long a claimed renewal stays claimed: longer than [`Refresher::refresh`] may take.
    fn lease(&self) -> Duration;
}

/// How long before expiry a token of this lifetime is renewed: [`MAX_SKEW`], or half its
/// lifetime when that is shorter (a 10-second token is renewed after 5).
pub fn skew(grant: &OidcGrant) -> SignedDuration {
    let lifetime = grant.expires.duration_since(grant.issued);
    let max = SignedDuration::try_from(MAX_SKEW).unwrap_or(SignedDuration::ZERO);
    (lifetime / 2).clamp(SignedDuration::ZERO, max)
}

/// What a request does about its session's tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Use the ID token as it is.
    Keep,
    /// Claim the renewal and renew.
    Renew,
    /// Another request is renewing and the ID token has expired: wait for its tokens.
    Wait,
}

/// The decision for a session at `now` (IO-free).
pub fn decide(now: Timestamp, grant: &OidcGrant) -> Step {
    if grant.refresh_token.is_none() || now < grant.expires - skew(grant) {
        return Step::Keep;
    }
    match grant.renewing_until {
        Some(until) if until > now && now < grant.expires => Step::Keep,
        Some(until) if until > now => Step::Wait,
        _ => Step::Renew,
    }
}

/// The session after its tokens were renewed (if due): `None` when it ended (or is gone).
pub(crate) async fn renew(
    records: &Records,
    handle: &str,
    refresher: &dyn Refresher,
) -> Result<Option<Versioned<Stored>>, Status> {
    let lease = SignedDuration::try_from(refresher.lease()).unwrap_or(SignedDuration::from_secs(30));
    // Bounded: a waiter gives up after a lease and goes on with what the record holds.
    let deadline = tokio::time::Instant::now() + refresher.lease();
    loop {
        let Some(current) = records
            .get_versioned::<Stored>(Kind::Session, handle)
            .await
            .map_err(unavailable)?
        else {
            return Ok(None);
        };
        let Some(grant) = current.value.oidc.clone() else {
            return Ok(Some(current));
        };
        let now = records.now();
        match decide(now, &grant) {
            Step::Keep => return Ok(Some(current)),
            Step::Wait => {
                if tokio::time::Instant::now() >= deadline {
                    return Ok(Some(current));
                }
                tokio::time::sleep(WAIT_POLL).await;
                continue;
            }
            Step::Renew => {}
        }
        let Some(refresh_token) = grant.refresh_token.clone() else {
            return Ok(Some(current));
        };
        let mut claimed = current.value.clone();
        if let Some(g) = claimed.oidc.as_mut() {
            g.renewing_until = Some(now + lease);
        }
        let claim = match records
            .replace(Kind::Session, handle, &claimed, current.expires, &current.version)
            .await
        {
            Ok(claim) => claim,
            Err(error) => {
                // The store refused the write (e.g. a kcp identity without `update` on the
                // records): the session goes on with its token, as it would without renewal.
                tracing::warn!(%error, "cannot claim a portal session's renewal; not renewed");
                return Ok(Some(current));
            }
        };
        let Some(version) = claim else {
            // Another request claimed it (or signed out): look again.
            tracing::debug!("portal session renewal: claimed by another request");
            continue;
        };
        tracing::debug!(from = %current.version, to = %version, "portal session renewal claimed");
        return match refresher.refresh(&refresh_token, &current.value.user).await {
            Ok(renewed) => {
                let mut next = claimed;
                next.credential = renewed.id_token;
                next.oidc = Some(OidcGrant {
                    refresh_token: renewed.refresh_token.or(Some(refresh_token)),
                    issued: renewed.issued,
                    expires: renewed.expires,
                    renewing_until: None,
                });
                match records
                    .replace(Kind::Session, handle, &next, current.expires, &version)
                    .await
                    .map_err(unavailable)?
                {
                    Some(version) => {
                        tracing::info!(user = %next.user, "portal session renewed");
                        Ok(Some(Versioned {
                            value: next,
                            expires: current.expires,
                            version,
                        }))
                    }
                    // Signed out meanwhile (or our lease lapsed and another renewal won).
                    None => {
                        tracing::warn!(user = %next.user, "portal session renewed, but the session record changed meanwhile");
                        Ok(records
                            .get_versioned::<Stored>(Kind::Session, handle)
                            .await
                            .map_err(unavailable)?)
                    }
                }
            }
            Err(RenewError::Refused(reason)) => {
                tracing::info!(user = %current.value.user, %reason, "portal session ended: renewal refused");
                records.delete(Kind::Session, handle).await.map_err(unavailable)?;
                Ok(None)
            }
            Err(RenewError::Unavailable(reason)) => {
                tracing::warn!(user = %current.value.user, %reason, "portal session not renewed; trying again later");
                let mut released = claimed;
                if let Some(g) = released.oidc.as_mut() {
                    g.renewing_until = None;
                }
                // Losing this write only leaves the lease to lapse.
                let _ = records
                    .replace(Kind::Session, handle, &released, current.expires, &version)
                    .await;
                Ok(Some(Versioned {
                    value: released,
                    expires: current.expires,
                    version,
                }))
            }
        };
    }
}

#[cfg(test)]
mod tests;
