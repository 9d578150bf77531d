//! Who may do what in a tenant workspace, decided by kcp itself.
//!
//! Membership is kcp RBAC inside the workspace (see [`super::rbac`]); the hub never keeps its own
//! membership list. It answers first from the membership index ([`super::index`]), which mirrors
//! those bindings through a watch, and asks kcp as described below where the index cannot be sure
//! (a workspace it does not see yet, a ServiceAccount caller). A caller is a **member** of a workspace when kcp would let them in at all
//! (`access` on `/`), and an **admin** when kcp would let them create APIBindings there, which is
//! exactly what Enable does on their behalf. Both questions are SubjectAccessReviews against the
//! workspace, so `kubectl` and the hub can never disagree. The reviews carry the caller's whole
//! `UserInfo` (uid and extra too): a ServiceAccount's user name repeats in every workspace, and only
//! kcp's cluster-name extra keeps a `default/deployer` of one workspace from being taken for the
//! `default/deployer` another workspace granted admin. Answers are cached briefly per identity and
//! cluster so a busy portal or MCP client does not cost two kcp round trips per request; the TTL
//! bounds how long a revoked member keeps access through the hub. A refusal is never decided on a
//! cached answer: a grant made through another hub replica (or with kubectl) invalidates nothing
//! here, so a cached "not a member" (or "member" where admin is needed) is asked again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use faros_core::client::ClientFactory;
use faros_core::kcp::{LogicalClusterPhase, Workspace};
use faros_core::names;
use faros_core::status::Status;
use faros_core::user::{GROUP_AUTHENTICATED, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Api;
use kube::api::PostParams;
use tokio::time::Instant;

use super::index::MembershipIndex;
use super::role::Role;
use crate::auth::Caller;
pub use crate::workspace::WorkspaceRef;

/// Tuning of [`Access`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessSettings {
    /// How long a SubjectAccessReview answer is reused.
    pub decision_ttl: Duration,
    /// How long a workspace name → logical cluster resolution is reused.
    pub resolve_ttl: Duration,
}

impl Default for AccessSettings {
    fn default() -> Self {
        Self {
            decision_ttl: Duration::from_secs(5),
            resolve_ttl: Duration::from_secs(30),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct DecisionKey {
    user: UserInfo,
    cluster: String,
}

/// Resolves tenant workspaces and decides membership (see the module docs).
pub struct Access {
    factory: ClientFactory,
    index: Arc<MembershipIndex>,
    settings: AccessSettings,
    /// Memberships kcp confirmed, with when. Refusals are not kept: they are always asked again.
    decisions: Mutex<HashMap<DecisionKey, (Instant, Role)>>,
    resolved: Mutex<HashMap<String, (Instant, WorkspaceRef)>>,
}

impl Access {
    pub fn new(factory: ClientFactory, settings: AccessSettings, index: Arc<MembershipIndex>) -> Self {
        Self {
            factory,
            index,
            settings,
            decisions: Mutex::new(HashMap::new()),
            resolved: Mutex::new(HashMap::new()),
        }
    }

    pub fn factory(&self) -> &ClientFactory {
        &self.factory
    }

    /// An admin kube client for the logical cluster (path or name) `cluster`.
    pub fn client(&self, cluster: &str) -> Result<kube::Client, Status> {
        self.factory
            .cluster(cluster)
            .map_err(|e| Status::internal(format!("building a kcp client: {e}")))
    }

    /// Forgets cached answers (after the hub itself changed memberships or deleted workspaces).
    pub fn invalidate(&self) {
        if let Ok(mut d) = self.decisions.lock() {
            d.clear();
        }
        if let Ok(mut r) = self.resolved.lock() {
            r.clear();
        }
    }

    /// The organization `org`, or its team workspace `ws`. 404 when absent, 503 while kcp is still
    /// initializing it (clients retry), 400 for names that cannot be workspaces.
    pub async fn resolve(&self, org: &str, ws: Option<&str>) -> Result<WorkspaceRef, Status> {
        names::validate_dns_label(org).map_err(|e| Status::bad_request(format!("organization {org:?}: {e}")))?;
        if let Some(ws) = ws {
            names::validate_dns_label(ws).map_err(|e| Status::bad_request(format!("workspace {ws:?}: {e}")))?;
        }
        let path = match ws {
            Some(ws) => names::team_workspace_path(org, ws),
            None => names::org_workspace_path(org),
        };
        if let Some(hit) = self.cached_resolution(&path) {
            return Ok(hit);
        }
        let (parent, name) = match ws {
            Some(ws) => (names::org_workspace_path(org), ws),
            None => (names::TENANTS_PATH.to_string(), org),
        };
        let client = self.client(&parent)?;
        let what = describe_names(org, ws);
        let workspace = match Api::<Workspace>::all(client).get_opt(name).await {
            Ok(Some(w)) => w,
            Ok(None) => return Err(not_found(org, ws)),
            // The org itself is gone: the team workspace is too.
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 403 => return Err(not_found(org, ws)),
            Err(e) => return Err(Status::from(e)),
        };
        let phase = workspace.status.as_ref().and_then(|s| s.phase.clone());
        let cluster = workspace.spec.cluster.clone().unwrap_or_default();
        if workspace.metadata.deletion_timestamp.is_some() {
            return Err(not_found(org, ws));
        }
        if phase != Some(LogicalClusterPhase::Ready) || cluster.is_empty() {
            return Err(Status::unavailable(format!(
                "{what} is not ready yet (phase {}); retry shortly",
                phase.map(|p| format!("{p:?}")).unwrap_or_else(|| "unknown".into())
            )));
        }
        let resolved = WorkspaceRef {
            org: org.to_string(),
            workspace: ws.map(str::to_string),
            path: path.clone(),
            cluster,
        };
        if let Ok(mut r) = self.resolved.lock() {
            r.insert(path, (Instant::now(), resolved.clone()));
        }
        Ok(resolved)
    }

    fn cached_resolution(&self, path: &str) -> Option<WorkspaceRef> {
        let r = self.resolved.lock().ok()?;
        let (at, hit) = r.get(path)?;
        (at.elapsed() < self.settings.resolve_ttl).then(|| hit.clone())
    }

    /// The caller's role in the logical cluster `cluster`, `None` when not a member.
    ///
    /// The index's answer, where it has one (a refusal included: it follows kcp by watch). Otherwise
    /// only a cached membership is trusted: a cached refusal is asked again, as in
    /// [`Access::require`], because behind a balancer the grant may have gone through another
    /// replica a moment ago and this one's cache would hide it from `/api/me` and the lists.
    pub async fn role(&self, caller: &Caller, cluster: &str) -> Result<Option<Role>, Status> {
        if let Some(answer) = self.index.role(caller, cluster) {
            return Ok(answer);
        }
        match self.cached_role(caller, cluster) {
            Some(role) => Ok(Some(role)),
            None => self.review_role(caller, cluster).await,
        }
    }

    /// A membership kcp confirmed within the TTL, if any.
    fn cached_role(&self, caller: &Caller, cluster: &str) -> Option<Role> {
        let key = DecisionKey {
            user: review_user(caller),
            cluster: cluster.to_string(),
        };
        let d = self.decisions.lock().ok()?;
        let (at, role) = d.get(&key)?;
        (at.elapsed() < self.settings.decision_ttl).then_some(*role)
    }

    /// The caller's role as kcp answers it now; a membership is cached, a refusal drops what was.
    async fn review_role(&self, caller: &Caller, cluster: &str) -> Result<Option<Role>, Status> {
        let key = DecisionKey {
            user: review_user(caller),
            cluster: cluster.to_string(),
        };
        let (member, admin) = tokio::try_join!(
            self.review(caller, cluster, member_attributes()),
            self.review(caller, cluster, admin_attributes()),
        )?;
        let role = role_from(member, admin);
        if let Ok(mut d) = self.decisions.lock() {
            // Bounded: entries past their TTL are dropped whenever the map grows large.
            if d.len() > 10_000 {
                let ttl = self.settings.decision_ttl;
                d.retain(|_, (at, _)| at.elapsed() < ttl);
            }
            match role {
                Some(r) => d.insert(key, (Instant::now(), r)),
                None => d.remove(&key),
            };
        }
        Ok(role)
    }

    /// Resolves the workspace and requires at least `min` there: 404 when it does not exist or the
    /// caller is not a member (indistinguishable on purpose), 403 when a member needs admin.
    pub async fn require(
        &self,
        caller: &Caller,
        org: &str,
        ws: Option<&str>,
        min: Role,
    ) -> Result<(WorkspaceRef, Role), Status> {
        let target = self.resolve(org, ws).await?;
        let indexed = self.index.role(caller, &target.cluster).flatten();
        let role = match indexed.or_else(|| self.cached_role(caller, &target.cluster)) {
            Some(r) if r >= min => Some(r),
            // Not cached, or cached short of `min`: perhaps granted since (through another replica),
            // so a refusal is decided on kcp's answer now.
            _ => self.review_role(caller, &target.cluster).await?,
        };
        match role {
            Some(r) if r >= min => Ok((target, r)),
            Some(_) => Err(Status::forbidden(format!(
                "user {:?} is a member of {} but this needs the admin role",
                caller.user,
                describe(&target)
            ))),
            // Exactly what a missing workspace answers: names of others' organizations and
            // workspaces must not be discoverable by probing.
            None => Err(not_found(org, ws)),
        }
    }

    async fn review(&self, caller: &Caller, cluster: &str, attrs: Attrs) -> Result<bool, Status> {
        let client = self.client(cluster)?;
        self.index.metrics.decided("review");
        let user = review_user(caller);
        let (resource_attributes, non_resource_attributes) = match attrs {
            Attrs::Resource(r) => (Some(*r), None),
            Attrs::NonResource(n) => (None, Some(n)),
        };
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.username),
                uid: Some(user.uid).filter(|u| !u.is_empty()),
                groups: Some(user.groups),
                extra: Some(user.extra).filter(|e| !e.is_empty()),
                resource_attributes,
                non_resource_attributes,
            },
            ..Default::default()
        };
        let answer = match Api::<SubjectAccessReview>::all(client)
            .create(&PostParams::default(), &review)
            .await
        {
            Ok(answer) => answer,
            // The hub's own kcp user may not review access here: a workspace made before the hub
            // had its own user and never granted to it. Nobody is a member as far as the hub can
            // tell (closed, and the same answer as for a stranger); kcp's refusal, which names the
            // hub's user, is for the operator's log, not the caller.
            Err(kube::Error::Api(e)) if e.code == 403 => {
                tracing::warn!(
                    cluster,
                    message = %e.message,
                    "the hub's kcp user may not review access in this workspace; grant it with `faros grant --hub-user` (docs/install.md#kcp-identities)"
                );
                return Ok(false);
            }
            Err(e) => return Err(Status::from(e)),
        };
        Ok(answer.status.is_some_and(|s| s.allowed && !s.denied.unwrap_or(false)))
    }
}

/// Who a review asks about: the caller's whole `UserInfo` with `system:authenticated`, which kcp's
/// default grants key on.
fn review_user(caller: &Caller) -> UserInfo {
    let mut user = caller.user_info();
    user.ensure_group(GROUP_AUTHENTICATED);
    user
}

enum Attrs {
    Resource(Box<ResourceAttributes>),
    NonResource(NonResourceAttributes),
}

/// Being let into the workspace at all: kcp's workspace content authorizer asks exactly this.
fn member_attributes() -> Attrs {
    Attrs::NonResource(NonResourceAttributes {
        path: Some("/".into()),
        verb: Some("access".into()),
    })
}

/// Creating APIBindings: what Enable does, and what the member role does not grant.
fn admin_attributes() -> Attrs {
    Attrs::Resource(Box::new(ResourceAttributes {
        verb: Some("create".into()),
        group: Some("apis.kcp.io".into()),
        resource: Some("apibindings".into()),
        ..Default::default()
    }))
}

/// Admin rights without `access` (possible only through hand-written RBAC) are no membership:
/// kcp would not let that user into the workspace.
fn role_from(member: bool, admin: bool) -> Option<Role> {
    match (member, admin) {
        (true, true) => Some(Role::Admin),
        (true, false) => Some(Role::Member),
        (false, _) => None,
    }
}

/// 404 for an organization or workspace that does not exist or that the caller may not see: the
/// same answer for both.
pub fn not_found(org: &str, ws: Option<&str>) -> Status {
    Status::not_found_message(format!("{} not found", describe_names(org, ws)))
}

/// "organization \"acme\"" or "workspace \"dev\" of organization \"acme\"".
pub fn describe(target: &WorkspaceRef) -> String {
    describe_names(&target.org, target.workspace.as_deref())
}

fn describe_names(org: &str, ws: Option<&str>) -> String {
    match ws {
        Some(ws) => format!("workspace {ws:?} of organization {org:?}"),
        None => format!("organization {org:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_from_reviews() {
        for (member, admin, want) in [
            (true, true, Some(Role::Admin)),
            (true, false, Some(Role::Member)),
            (false, true, None),
            (false, false, None),
        ] {
            assert_eq!(role_from(member, admin), want, "member={member} admin={admin}");
        }
        assert!(Role::Admin > Role::Member);
    }

    #[test]
    fn describes_targets() {
        let mut t = WorkspaceRef {
            org: "acme".into(),
            workspace: Some("dev".into()),
            path: "root:faros:tenants:acme:dev".into(),
            cluster: "abc".into(),
        };
        assert_eq!(describe(&t), "workspace \"dev\" of organization \"acme\"");
        t.workspace = None;
        assert_eq!(describe(&t), "organization \"acme\"");
    }
}
