//! DNS resolution that applies the [`UpstreamPolicy`] to every address a name resolves to, at the
//! moment of connecting: a provider host that pointed at a public address at registration and at
//! `169.254.169.254` now (DNS rebinding) is refused here. It is the resolver of every client that
//! connects to provider URLs: the proxies' pool (as a hyper connector's) and the MCP federation's
//! reqwest client (as reqwest's [`reqwest::dns::Resolve`]). Address literals never reach a
//! resolver; each client checks those with [`UpstreamPolicy::check_literal`].

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::dns::{GaiResolver, Name};
use tower::Service;

use super::upstream_policy::UpstreamPolicy;

/// `getaddrinfo`, then the policy: the addresses it admits, or an error naming the first refusal
/// when it admits none (the message reaches logs only: proxies answer a fixed 502).
#[derive(Clone)]
pub struct PolicyResolver {
    inner: GaiResolver,
    policy: Arc<UpstreamPolicy>,
}

impl PolicyResolver {
    pub fn new(policy: Arc<UpstreamPolicy>) -> Self {
        Self {
            inner: GaiResolver::new(),
            policy,
        }
    }
}

impl Service<Name> for PolicyResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let policy = self.policy.clone();
        let host = name.as_str().to_string();
        let lookup = self.inner.call(name);
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = lookup.await?.collect();
            admit(&policy, &host, addrs)
        })
    }
}

impl reqwest::dns::Resolve for PolicyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let mut this = self.clone();
        Box::pin(async move {
            use std::str::FromStr;
            let name = Name::from_str(name.as_str())?;
            let addrs: reqwest::dns::Addrs = Box::new(this.call(name).await?);
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(addrs)
        })
    }
}

/// The addresses `policy` admits; an error when none is.
fn admit(
    policy: &UpstreamPolicy,
    host: &str,
    addrs: Vec<SocketAddr>,
) -> Result<std::vec::IntoIter<SocketAddr>, std::io::Error> {
    let mut refused = None;
    let admitted: Vec<SocketAddr> = addrs
        .into_iter()
        .filter(|a| match policy.check_addr(a.ip()) {
            Ok(()) => true,
            Err(e) => {
                refused.get_or_insert(e);
                false
            }
        })
        .collect();
    if admitted.is_empty()
        && let Some(e) = refused
    {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{host} resolves to an address the upstream policy refuses: {e}"),
        ));
    }
    Ok(admitted.into_iter())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keeps_admitted_addresses_and_fails_when_none_is() {
        let policy = UpstreamPolicy::default();
        let at = |s: &str| -> SocketAddr { s.parse().unwrap() };
        let mixed = admit(&policy, "h", vec![at("169.254.169.254:80"), at("93.184.216.34:80")]).unwrap();
        assert_eq!(mixed.collect::<Vec<_>>(), vec![at("93.184.216.34:80")]);
        let err = admit(&policy, "rebound.example", vec![at("127.0.0.1:80")]).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
        assert!(
            err.to_string().starts_with("rebound.example resolves to an address"),
            "{err}"
        );
        // Nothing resolved is the resolver's own answer, not a refusal.
        assert_eq!(admit(&policy, "h", vec![]).unwrap().count(), 0);
    }

    /// A name that passed registration but resolves to a refused address when connecting (DNS
    /// rebinding): `localhost` stands in for it, being the one name that resolves everywhere.
    #[tokio::test]
    async fn names_are_checked_when_they_resolve() {
        use std::str::FromStr;
        let mut refusing = PolicyResolver::new(Arc::new(UpstreamPolicy::default()));
        let name = Name::from_str("localhost").unwrap();
        let err = refusing.call(name.clone()).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied, "{err}");
        let mut dev = PolicyResolver::new(Arc::new(UpstreamPolicy {
            allow: UpstreamPolicy::loopback(),
            ..Default::default()
        }));
        assert!(dev.call(name).await.unwrap().all(|a| a.ip().is_loopback()));
        // The same resolver, as reqwest asks it.
        let reqwest_name = reqwest::dns::Name::from_str("localhost").unwrap();
        let refusing = PolicyResolver::new(Arc::new(UpstreamPolicy::default()));
        assert!(reqwest::dns::Resolve::resolve(&refusing, reqwest_name).await.is_err());
    }
}
