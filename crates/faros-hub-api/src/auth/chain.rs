//! Several authenticators in order: the first that recognizes the credential decides.

use std::sync::Arc;

use faros_core::status::Status;
use futures::future::BoxFuture;
use http::HeaderMap;

use super::{Authenticator, Bearer, Caller, Verdict, invalid_token, missing_credentials};

/// Asks each authenticator in turn: [`Verdict::NotMine`] moves on, anything else is final. A
/// request without a bearer is 401 before any is asked; a bearer nobody claims is 401 too. The
/// token is hashed once here and the digest handed to each ([`Authenticator::verdict_on`]); each
/// answers from its cache first when it can ([`Authenticator::verdict_now`]).
pub struct Chain(pub Vec<Arc<dyn Authenticator>>);

impl Authenticator for Chain {
    fn authenticate<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Caller, Status>> {
        Box::pin(async move { self.authenticate_shared(headers).await.map(Arc::unwrap_or_clone) })
    }

    fn authenticate_shared<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Arc<Caller>, Status>> {
        Box::pin(async move {
            let bearer = Bearer::from_headers(headers).ok_or_else(missing_credentials)?;
            for authn in &self.0 {
                let verdict = match authn.verdict_now(&bearer) {
                    Some(verdict) => verdict,
                    None => authn.verdict_on(headers, &bearer).await,
                };
                match verdict {
                    Verdict::NotMine => continue,
                    Verdict::Accepted(caller) => return Ok(caller),
                    Verdict::Rejected(status) => return Err(status),
                }
            }
            Err(invalid_token())
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::auth::test_support::{bearer, headers};
    use crate::auth::{CredentialSource, bearer_token};

    /// Claims tokens starting with its prefix; "<prefix>bad" is rejected. Records what it saw.
    struct Fake {
        prefix: &'static str,
        seen: Mutex<Vec<String>>,
    }

    impl Fake {
        fn new(prefix: &'static str) -> Arc<Self> {
            Arc::new(Self {
                prefix,
                seen: Mutex::default(),
            })
        }
    }

    impl Authenticator for Fake {
        fn authenticate<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Result<Caller, Status>> {
            Box::pin(async move { super::super::settle(self.verdict(headers).await) })
        }

        fn verdict<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Verdict> {
            Box::pin(async move {
                let token = bearer_token(headers).unwrap_or_default();
                self.seen.lock().unwrap().push(token.to_string());
                match token.strip_prefix(self.prefix) {
                    None => Verdict::NotMine,
                    Some("bad") => Verdict::Rejected(Status::unauthorized(format!("{} says no", self.prefix))),
                    Some(user) => Verdict::Accepted(Arc::new(Caller {
                        user: format!("{}{user}", self.prefix),
                        source: CredentialSource::Oidc,
                        ..Default::default()
                    })),
                }
            })
        }
    }

    #[tokio::test]
    async fn first_claimant_decides() {
        let (a, b) = (Fake::new("a:"), Fake::new("b:"));
        let chain = Chain(vec![a.clone(), b.clone()]);
        let user = |r: Result<Caller, Status>| r.map(|c| c.user).map_err(|s| (s.code, s.message));
        assert_eq!(user(chain.authenticate(&bearer("a:alice")).await), Ok("a:alice".into()));
        assert_eq!(user(chain.authenticate(&bearer("b:bob")).await), Ok("b:bob".into()));
        assert_eq!(
            user(chain.authenticate(&bearer("a:bad")).await),
            Err((401, "a: says no".into()))
        );
        assert_eq!(
            user(chain.authenticate(&bearer("c:carol")).await),
            Err((401, "the bearer token is not valid".into()))
        );
        assert_eq!(
            user(chain.authenticate(&headers(None)).await),
            Err((401, missing_credentials().message))
        );
        // b: never saw a:'s tokens (a decided) nor the request without credentials.
        assert_eq!(*a.seen.lock().unwrap(), ["a:alice", "b:bob", "a:bad", "c:carol"]);
        assert_eq!(*b.seen.lock().unwrap(), ["b:bob", "c:carol"]);
    }
}
