//! The authorization decision of every request and of kcp admission checks: kcp's workspace
//! content authorizer (the cluster must exist and serve, the user must be in its required groups
//! and needs `access` on `/`), then RBAC in the logical cluster; `system:masters` bypasses both.
//!
//! It decides only; it must not read requests or write anything.

use faros_core::status::Status;

use super::{Attributes, UserInfo, Verb};
use crate::state::ServerState;

/// The reason of every denial, whichever check made it: kcp decorates each authorizer of its chain
/// (required groups, workspace content, system CRDs, bootstrap, local and global RBAC) with
/// anonymization, so a caller learns only that it was refused; the reason goes to the log.
pub const ACCESS_DENIED: &str = "access denied";

/// A 403 for `attrs` with kcp's anonymised reason; the real one is logged for the operator.
fn denied(attrs: &Attributes<'_>, cluster: &str, why: &str) -> Status {
    tracing::debug!(
        user = %attrs.user.username,
        verb = attrs.verb,
        resource = attrs.resource,
        path = attrs.path,
        cluster,
        why,
        "request denied"
    );
    super::forbidden_status(attrs, ACCESS_DENIED)
}

/// kcp's workspace content authorizer: the logical cluster must exist and be serving, and the user
/// needs the `access` verb on `/` inside it, before ordinary RBAC applies.
pub fn authorize_content(state: &ServerState, cluster: &str, attrs: &Attributes<'_>) -> Result<(), Status> {
    if cluster == "*" || attrs.user.in_group(super::GROUP_MASTERS) {
        return Ok(());
    }
    let deny = || Err(denied(attrs, cluster, "workspace access not permitted"));
    let (serving, required_groups) = {
        let clusters = state.clusters.read().unwrap_or_else(|p| p.into_inner());
        match clusters.get(cluster) {
            None => return deny(),
            Some(info) => (
                !matches!(info.phase.as_str(), "Scheduling" | "Initializing"),
                info.required_groups.clone(),
            ),
        }
    };
    if let Some(value) = required_groups
        && !super::required_groups::satisfied(&value, attrs.user)
    {
        return Err(denied(attrs, cluster, &super::required_groups::denial(&value)));
    }
    // ServiceAccounts of the cluster itself are always admitted (kcp's service-account authorizer).
    let own_sa = attrs.user.cluster_name() == Some(cluster) && attrs.user.service_account().is_some();
    if !serving || !(own_sa || can_access(state, cluster, attrs.user)) {
        return deny();
    }
    Ok(())
}

fn can_access(state: &ServerState, cluster: &str, user: &UserInfo) -> bool {
    let access = Attributes::non_resource(user, Verb::Access.as_str(), "/");
    let rbac = state.rbac.read().unwrap_or_else(|p| p.into_inner());
    rbac.authorize(cluster, &access) == super::Decision::Allow
}

/// Workspace content check, kcp's rules on its own status subresources, then RBAC in `cluster`;
/// system:masters bypasses all three.
pub fn authorize(state: &ServerState, cluster: &str, attrs: &Attributes<'_>) -> Result<(), Status> {
    if attrs.user.in_group(super::GROUP_MASTERS) {
        return Ok(());
    }
    authorize_content(state, cluster, attrs)?;
    if let Some(reason) = super::system_policy::denial(attrs) {
        return Err(denied(attrs, cluster, &reason));
    }
    let rbac = state.rbac.read().unwrap_or_else(|p| p.into_inner());
    match rbac.authorize(cluster, attrs) {
        super::Decision::Allow => Ok(()),
        super::Decision::Deny { reason } => {
            Err(denied(attrs, cluster, if reason.is_empty() { "RBAC" } else { &reason }))
        }
    }
}
