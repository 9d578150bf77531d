//! The tenant a backend-proxy (or MCP) request acts in.
//!
//! A client names the tenant with `X-Faros-Org` and `X-Faros-Workspace`; the hub checks the caller
//! is a member there and only then asserts org, workspace and logical cluster to the provider. A
//! request naming neither is a tenant-less call (the identity carries only the user); naming one
//! without the other is a 400, never a guess.

use faros_core::identity::Identity;
use faros_core::names;
use faros_core::status::Status;
use http::{HeaderMap, HeaderName};

use super::Tenancy;
use super::access::{WorkspaceRef, describe};
use super::role::Role;
use crate::auth::Caller;
use crate::catalog::registry::Registry;

const ORG: HeaderName = HeaderName::from_static(names::HEADER_ORG);
const WORKSPACE: HeaderName = HeaderName::from_static(names::HEADER_WORKSPACE);

/// The org and workspace a request names, if any.
pub fn requested_tenant(headers: &HeaderMap) -> Result<Option<(String, String)>, Status> {
    // Looked up by names made at compile time: a `&str` name is parsed on every lookup.
    let get = |name: &HeaderName| -> Result<Option<String>, Status> {
        match headers.get(name) {
            None => Ok(None),
            Some(v) => v
                .to_str()
                .map(|s| Some(s.trim().to_string()))
                .map_err(|_| Status::bad_request(format!("{name}: not a valid header value"))),
        }
    };
    match (get(&ORG)?, get(&WORKSPACE)?) {
        (None, None) => Ok(None),
        (Some(org), Some(ws)) if !org.is_empty() && !ws.is_empty() => Ok(Some((org, ws))),
        _ => Err(Status::bad_request(format!(
            "send both {} and {} to act in a workspace, or neither",
            names::HEADER_ORG,
            names::HEADER_WORKSPACE
        ))),
    }
}

/// The identity asserted for `caller` in `target`.
pub fn identity_in(caller: &Caller, target: Option<&WorkspaceRef>) -> Identity {
    let mut id = caller.identity();
    if let Some(t) = target {
        id.org = t.org.clone();
        id.workspace = t.workspace.clone().unwrap_or_default();
        id.cluster = t.cluster.clone();
    }
    id
}

impl Tenancy {
    /// The identity to assert to `provider`: the caller's alone, or, when `headers` name a
    /// workspace, the caller in that workspace. That needs membership (404 otherwise, as for a
    /// workspace that does not exist) and the workspace having enabled `provider` (403 otherwise:
    /// a workspace is asserted only to providers its tenants chose).
    pub async fn identity_for(
        &self,
        registry: &Registry,
        caller: &Caller,
        headers: &HeaderMap,
        provider: &str,
    ) -> Result<Identity, Status> {
        match requested_tenant(headers)? {
            None => Ok(identity_in(caller, None)),
            // Boxed: membership and the bound providers may ask kcp, and their futures would make
            // every proxied request's future (moved, so copied, as it is polled) that much larger.
            Some((org, ws)) => Box::pin(self.tenant_identity(registry, caller, &org, &ws, provider)).await,
        }
    }

    async fn tenant_identity(
        &self,
        registry: &Registry,
        caller: &Caller,
        org: &str,
        ws: &str,
        provider: &str,
    ) -> Result<Identity, Status> {
        let (target, _) = self.access.require(caller, org, Some(ws), Role::Member).await?;
        let bound = self
            .bound
            .of(&self.access, registry, &target, self.settings.access.decision_ttl)
            .await?;
        if !bound.contains(provider) {
            return Err(Status::forbidden(format!(
                "provider {provider:?} is not enabled in {}: enable it there first",
                describe(&target)
            )));
        }
        Ok(identity_in(caller, Some(&target)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn tenant_headers() {
        assert_eq!(requested_tenant(&headers(&[])).unwrap(), None);
        assert_eq!(
            requested_tenant(&headers(&[("x-faros-org", "acme"), ("x-faros-workspace", "dev")])).unwrap(),
            Some(("acme".into(), "dev".into()))
        );
        for bad in [
            headers(&[("x-faros-org", "acme")]),
            headers(&[("x-faros-workspace", "dev")]),
            headers(&[("x-faros-org", ""), ("x-faros-workspace", "dev")]),
        ] {
            assert_eq!(requested_tenant(&bad).unwrap_err().code, 400);
        }
    }

    #[test]
    fn identities() {
        let caller = Caller {
            user: "alice".into(),
            groups: vec!["g".into()],
            ..Default::default()
        };
        let bare = identity_in(&caller, None);
        assert_eq!(
            (bare.user.as_str(), bare.org.as_str(), bare.cluster.as_str()),
            ("alice", "", "")
        );
        let t = WorkspaceRef {
            org: "acme".into(),
            workspace: Some("dev".into()),
            path: "root:faros:tenants:acme:dev".into(),
            cluster: "c1".into(),
        };
        let id = identity_in(&caller, Some(&t));
        assert_eq!(
            (
                id.org.as_str(),
                id.workspace.as_str(),
                id.cluster.as_str(),
                id.groups.clone()
            ),
            ("acme", "dev", "c1", vec!["g".to_string()])
        );
    }
}
