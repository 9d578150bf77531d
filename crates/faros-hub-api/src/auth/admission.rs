//! Which authenticated callers the hub serves at all: the one admission every door passes.
//!
//! A faros component's own kcp identity ([`COMPONENTS_GROUP`]: the hub's, the reconciler's) is
//! refused whoever vouched for it (kcp's TokenReview knows the components' users; a token file or
//! an identity provider could name the group too). The hub authorizes a caller by its standing in
//! kcp, and a component's standing is far beyond any person's: its token must not work at the
//! hub's REST API, through the kcp pass-through, as a portal sign-in, in the OIDC callback or at
//! the MCP endpoint. [`Admitting`] wraps the hub's authenticator, so every door that asks it who
//! is calling gets only admitted callers, and no door has to remember to ask.

use std::sync::Arc;

use faros_core::names::COMPONENTS_GROUP;
use faros_core::status::Status;
use futures::future::BoxFuture;
use http::HeaderMap;

use super::{Authenticator, Bearer, Caller, Verdict};

/// `Ok` for a caller the hub serves; 401 for a component's identity. Not 403: the credential is not
/// one the hub takes at all, as a token it does not know is not.
pub fn admits(caller: &Caller) -> Result<(), Status> {
    match caller.groups.iter().any(|g| g == COMPONENTS_GROUP) {
        true => Err(Status::unauthorized(format!(
            "the bearer token belongs to a faros component (group {COMPONENTS_GROUP}); components \
             authenticate to kcp, never to the hub"
        ))),
        false => Ok(()),
    }
}

/// An authenticator whose accepted callers have passed [`admits`]: the hub's only authenticator.
pub struct Admitting(Arc<dyn Authenticator>);

impl Admitting {
    pub fn new(inner: Arc<dyn Authenticator>) -> Self {
        Self(inner)
    }
}

fn admitted(verdict: Verdict) -> Verdict {
    match verdict {
        Verdict::Accepted(caller) => match admits(&caller) {
            Ok(()) => Verdict::Accepted(caller),
            Err(status) => Verdict::Rejected(status),
        },
        other => other,
    }
}

impl Authenticator for Admitting {
    fn authenticate<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Caller, Status>> {
        Box::pin(async move {
            let caller = self.0.authenticate(headers).await?;
            admits(&caller).map(|()| caller)
        })
    }

    fn authenticate_shared<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Arc<Caller>, Status>> {
        Box::pin(async move {
            let caller = self.0.authenticate_shared(headers).await?;
            admits(&caller).map(|()| caller)
        })
    }

    fn verdict<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Verdict> {
        Box::pin(async move { admitted(self.0.verdict(headers).await) })
    }

    fn verdict_on<'a>(&'a self, headers: &'a HeaderMap, bearer: &'a Bearer<'a>) -> BoxFuture<'a, Verdict> {
        Box::pin(async move { admitted(self.0.verdict_on(headers, bearer).await) })
    }

    fn verdict_now(&self, bearer: &Bearer<'_>) -> Option<Verdict> {
        self.0.verdict_now(bearer).map(admitted)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::auth::test_support::bearer;
    use crate::auth::tokenreview::{ReviewedUser, StaticReviewer};
    use crate::auth::{BearerTokenReview, GROUP_AUTHENTICATED};

    #[test]
    fn only_the_components_group_is_refused() {
        for (groups, admitted) in [
            (vec![GROUP_AUTHENTICATED], true),
            (vec!["system:kcp:admin", GROUP_AUTHENTICATED], true),
            // A group merely named like it is someone else's.
            (vec!["faros:components-team", "faros"], true),
            (vec![COMPONENTS_GROUP, GROUP_AUTHENTICATED], false),
        ] {
            let caller = Caller {
                user: "someone".into(),
                groups: groups.iter().map(|g| g.to_string()).collect(),
                ..Default::default()
            };
            match admits(&caller) {
                Ok(()) => assert!(admitted, "{groups:?} admitted"),
                Err(status) => {
                    assert!(!admitted, "{groups:?} refused: {}", status.message);
                    assert_eq!(status.code, 401);
                }
            }
        }
    }

    /// Every way of asking the wrapped authenticator, cached answer or not, refuses a component.
    #[tokio::test]
    async fn every_path_through_the_authenticator_is_admitted() {
        let user = |groups: &[&str]| ReviewedUser {
            username: "someone".into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            extra: BTreeMap::new(),
            ..Default::default()
        };
        let reviewer = StaticReviewer::default()
            .with("root", "component", user(&[COMPONENTS_GROUP]))
            .with("root", "person", user(&["devs"]));
        let authn = Admitting::new(Arc::new(BearerTokenReview::new(Arc::new(reviewer), "root")));
        for (token, ok) in [("component", false), ("person", true)] {
            let headers = bearer(token);
            assert_eq!(authn.authenticate(&headers).await.is_ok(), ok, "{token}");
            assert_eq!(authn.authenticate_shared(&headers).await.is_ok(), ok, "{token}");
            let b = Bearer::new(token);
            let verdicts = [
                authn.verdict(&headers).await,
                authn.verdict_on(&headers, &b).await,
                authn.verdict_now(&b).unwrap_or(Verdict::NotMine),
            ];
            for v in verdicts {
                match v {
                    Verdict::Accepted(_) => assert!(ok, "{token}"),
                    Verdict::Rejected(s) => assert!(!ok && s.code == 401, "{token}"),
                    // The static reviewer caches nothing.
                    Verdict::NotMine => {}
                }
            }
        }
    }
}
