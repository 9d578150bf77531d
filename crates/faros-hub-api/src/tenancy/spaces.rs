//! Creating, listing and deleting organization and team workspaces, and keeping their membership
//! RBAC in place. All writes use the hub's own kcp identity (`cluster-admin` of the organizations and
//! team workspaces it creates: docs/install.md#kcp-identities) after the caller's right to ask was
//! checked by the handler.

use std::collections::BTreeMap;
use std::time::Duration;

use faros_core::kcp::{Workspace, WorkspaceSpec, WorkspaceTypeReference};
use faros_core::names;
use faros_core::status::Status;
use faros_core::wait::{WaitError, wait_for};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde::Serialize;

use super::Tenancy;
use super::access::WorkspaceRef;
use super::rbac::{self, GroupMembership, Membership};
use super::role::Role;

/// Field manager of everything the hub API applies.
pub const FIELD_MANAGER: &str = "faros-hub-api";

/// How long creation waits for kcp to make a new workspace Ready before asking the client to retry.
pub const READY_WAIT: Duration = Duration::from_secs(30);

/// What kind of tenant workspace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Organization,
    Workspace,
}

impl Kind {
    fn type_name(self) -> &'static str {
        match self {
            Kind::Organization => names::WORKSPACE_TYPE_ORGANIZATION,
            Kind::Workspace => names::WORKSPACE_TYPE_WORKSPACE,
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Kind::Organization => "organization",
            Kind::Workspace => "workspace",
        }
    }
}

/// One organization or team workspace as the REST API shows it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Space {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    pub phase: String,
    /// The caller's role there (absent in admin-only listings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
}

/// The request body of `POST /api/orgs` and `POST /api/orgs/{org}/workspaces`.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateRequest {
    pub name: String,
    #[serde(default)]
    pub display_name: Option<String>,
}

impl CreateRequest {
    /// 400 with the field named when the request cannot become a workspace.
    pub fn validate(&self) -> Result<(), Status> {
        names::validate_dns_label(&self.name).map_err(|e| Status::bad_request(format!("name {:?}: {e}", self.name)))?;
        if let Some(d) = &self.display_name
            && d.chars().count() > 128
        {
            return Err(Status::bad_request("displayName: at most 128 characters"));
        }
        Ok(())
    }
}

fn annotation(ws: &Workspace, key: &str) -> Option<String> {
    ws.metadata.annotations.as_ref()?.get(key).cloned()
}

/// The REST view of a Workspace object living at `path`.
pub fn space(ws: &Workspace, path: String, role: Option<Role>) -> Space {
    Space {
        name: ws.metadata.name.clone().unwrap_or_default(),
        display_name: annotation(ws, names::ANNOTATION_DISPLAY_NAME),
        path,
        cluster: ws.spec.cluster.clone(),
        phase: ws
            .phase()
            .map(|p| format!("{p:?}"))
            .unwrap_or_else(|| "Scheduling".to_string()),
        role,
        created_by: annotation(ws, names::ANNOTATION_CREATED_BY),
    }
}

/// The Workspace object the hub creates.
pub fn workspace_object(kind: Kind, req: &CreateRequest, creator: &str) -> Workspace {
    let mut annotations = BTreeMap::from([(names::ANNOTATION_CREATED_BY.to_string(), creator.to_string())]);
    if let Some(d) = &req.display_name {
        annotations.insert(names::ANNOTATION_DISPLAY_NAME.to_string(), d.clone());
    }
    let mut ws = Workspace::new(
        &req.name,
        WorkspaceSpec {
            type_: Some(WorkspaceTypeReference {
                name: kind.type_name().to_string(),
                path: Some(names::WORKSPACE_TYPES_PATH.to_string()),
            }),
            ..Default::default()
        },
    );
    ws.metadata.labels = Some(BTreeMap::from([(
        names::LABEL_MANAGED_BY.to_string(),
        names::MANAGED_BY_FAROS.to_string(),
    )]));
    ws.metadata.annotations = Some(annotations);
    ws
}

/// Workspaces directly under `parent`.
pub async fn children(t: &Tenancy, parent: &str) -> Result<Vec<Workspace>, Status> {
    let list = Api::<Workspace>::all(t.client(parent)?)
        .list(&ListParams::default())
        .await
        .map_err(Status::from)?;
    let mut items = list.items;
    items.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(items)
}

/// Workspaces directly under `parent`, in no particular order (callers sort what they keep: with
/// ten thousand organizations, sorting them all was most of `/api/me`'s time); the organizations
/// (`parent` is `root:faros:tenants`) come from the membership index's watch once it has listed them.
pub async fn listed_children(t: &Tenancy, parent: &str) -> Result<Vec<std::sync::Arc<Workspace>>, Status> {
    if parent == names::TENANTS_PATH
        && let Some(orgs) = t.index.orgs.list()
    {
        return Ok(orgs);
    }
    Ok(children(t, parent)
        .await?
        .into_iter()
        .map(std::sync::Arc::new)
        .collect())
}

/// Creates workspace `req.name` in `parent` and waits until it is Ready. When it already exists
/// and `creator` created it, this resumes (a retry after a timeout finishes the setup); otherwise 409.
pub async fn create(
    t: &Tenancy,
    parent: &str,
    kind: Kind,
    req: &CreateRequest,
    creator: &str,
) -> Result<(Workspace, bool), Status> {
    let api = Api::<Workspace>::all(t.client(parent)?);
    let created = match api
        .create(&PostParams::default(), &workspace_object(kind, req, creator))
        .await
    {
        Ok(_) => true,
        Err(kube::Error::Api(s)) if s.code == 409 => {
            let existing = api.get(&req.name).await.map_err(Status::from)?;
            if annotation(&existing, names::ANNOTATION_CREATED_BY).as_deref() != Some(creator)
                || existing.metadata.deletion_timestamp.is_some()
            {
                return Err(Status::conflict_message(format!(
                    "{} {:?} already exists",
                    kind.noun(),
                    req.name
                )));
            }
            false
        }
        Err(e) => return Err(Status::from(e)),
    };
    match wait_for(
        api,
        &req.name,
        |w: Option<&Workspace>| w.is_some_and(Workspace::is_ready),
        READY_WAIT,
    )
    .await
    {
        Ok(Some(ws)) => Ok((ws, created)),
        Ok(None) => Err(Status::conflict_message(format!(
            "{} {:?} was deleted while being created",
            kind.noun(),
            req.name
        ))),
        Err(WaitError::Timeout { last_state, .. }) => Err(Status::unavailable(format!(
            "{} {:?} is still being initialized by kcp ({last_state}); repeat the request to finish",
            kind.noun(),
            req.name
        ))),
        Err(e) => Err(Status::unavailable(format!("waiting for the new {}: {e}", kind.noun()))),
    }
}

/// Creates (or finishes creating) organization `req.name` with `creator` as its admin.
pub async fn create_org(t: &Tenancy, req: &CreateRequest, creator: &str) -> Result<(Workspace, bool), Status> {
    let (ws, created) = create(t, names::TENANTS_PATH, Kind::Organization, req, creator).await?;
    let cluster = ws.spec.cluster.clone().unwrap_or_default();
    apply_roles(t, &cluster).await?;
    let (current, current_groups) = if created {
        (Vec::new(), Vec::new())
    } else {
        (members(t, &cluster).await?, groups(t, &cluster).await?)
    };
    match creator_grant(created, &current, &current_groups, creator) {
        CreatorGrant::Grant => set_member(t, &cluster, creator, Role::Admin).await?,
        CreatorGrant::AlreadyAdmin => {}
        CreatorGrant::Refuse => {
            return Err(Status::conflict_message(format!(
                "{} {:?} already exists",
                Kind::Organization.noun(),
                req.name
            )));
        }
    }
    Ok((ws, created))
}

/// What creating (or re-sending the creation of) an organization does for its creator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreatorGrant {
    Grant,
    /// A repeated request by the creator, still its admin: nothing to do.
    AlreadyAdmin,
    /// The org is set up and the caller is not its admin: it exists, like anyone else's.
    Refuse,
}

/// The creator of a new organization becomes its admin; of an existing one only while its setup
/// never finished (no members, users or groups: a retry after a timeout between creating the
/// workspace and the first grant). Granting afterwards would let a creator whom the org's admins
/// removed re-admit themselves by repeating `POST /api/orgs`, and an org whose admins hold the
/// role only through an identity provider's group is set up as much as one with named admins.
pub fn creator_grant(created: bool, members: &[Membership], groups: &[GroupMembership], creator: &str) -> CreatorGrant {
    if created || (members.is_empty() && groups.is_empty()) {
        return CreatorGrant::Grant;
    }
    let is_admin = members
        .iter()
        .any(|m| m.user == creator && m.role == Role::Admin && !m.inherited);
    if is_admin {
        CreatorGrant::AlreadyAdmin
    } else {
        CreatorGrant::Refuse
    }
}

/// Creates (or finishes creating) team workspace `req.name` in `org`, with the org's admins as
/// its admins.
pub async fn create_team_workspace(
    t: &Tenancy,
    org: &WorkspaceRef,
    req: &CreateRequest,
    creator: &str,
) -> Result<(Workspace, bool), Status> {
    let (ws, created) = create(t, &org.path, Kind::Workspace, req, creator).await?;
    let cluster = ws.spec.cluster.clone().unwrap_or_default();
    apply_roles(t, &cluster).await?;
    let admins = org_admins(t, org).await?;
    sync_inherited(t, &cluster, &admins).await?;
    let groups = org_admin_groups(t, org).await?;
    sync_inherited_groups(t, &cluster, &groups).await?;
    t.access.invalidate();
    Ok((ws, created))
}

/// Applies the membership ClusterRoles in `cluster`.
pub async fn apply_roles(t: &Tenancy, cluster: &str) -> Result<(), Status> {
    let api = Api::<ClusterRole>::all(t.client(cluster)?);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    for role in rbac::workspace_roles() {
        let name = role.metadata.name.clone().unwrap_or_default();
        let mut obj = serde_json::to_value(&role).map_err(|e| Status::internal(e.to_string()))?;
        obj["apiVersion"] = "rbac.authorization.k8s.io/v1".into();
        obj["kind"] = "ClusterRole".into();
        api.patch(&name, &params, &Patch::Apply(obj))
            .await
            .map_err(Status::from)?;
    }
    Ok(())
}

async fn put_binding(t: &Tenancy, cluster: &str, binding: ClusterRoleBinding) -> Result<(), Status> {
    let api = Api::<ClusterRoleBinding>::all(t.client(cluster)?);
    let name = binding.metadata.name.clone().unwrap_or_default();
    if let Some(existing) = api.get_opt(&name).await.map_err(Status::from)? {
        // roleRef is immutable: a role change is a replacement.
        if existing.role_ref == binding.role_ref && existing.subjects == binding.subjects {
            t.index.wrote(cluster, &binding);
            return Ok(());
        }
        api.delete(&name, &DeleteParams::default())
            .await
            .map_err(Status::from)?;
        t.index.removed(cluster, &name);
    }
    match api.create(&PostParams::default(), &binding).await {
        // A concurrent identical PUT won.
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(Status::from(e)),
    }
    // This replica reads its own write at once; the watch delivers it to the others.
    t.index.wrote(cluster, &binding);
    Ok(())
}

async fn delete_binding(t: &Tenancy, cluster: &str, name: &str) -> Result<bool, Status> {
    let api = Api::<ClusterRoleBinding>::all(t.client(cluster)?);
    let deleted = match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => true,
        Err(kube::Error::Api(s)) if s.code == 404 => false,
        Err(e) => return Err(Status::from(e)),
    };
    t.index.removed(cluster, name);
    Ok(deleted)
}

/// Grants `user` the direct `role` in `cluster`.
pub async fn set_member(t: &Tenancy, cluster: &str, user: &str, role: Role) -> Result<(), Status> {
    put_binding(t, cluster, rbac::member_binding(user, role)).await?;
    t.access.invalidate();
    Ok(())
}

/// Removes `user`'s direct membership of `cluster`; `false` when there was none.
pub async fn remove_member(t: &Tenancy, cluster: &str, user: &str) -> Result<bool, Status> {
    let removed = delete_binding(t, cluster, &rbac::member_binding_name(user)).await?;
    t.access.invalidate();
    Ok(removed)
}

/// Memberships expressed by bindings in `cluster`, sorted by user.
pub async fn members(t: &Tenancy, cluster: &str) -> Result<Vec<Membership>, Status> {
    let list = Api::<ClusterRoleBinding>::all(t.client(cluster)?)
        .list(&ListParams::default().labels(&rbac::membership_selector()))
        .await
        .map_err(Status::from)?;
    let mut out: Vec<Membership> = list.items.iter().filter_map(rbac::membership_of).collect();
    out.sort_by(|a, b| (&a.user, a.inherited).cmp(&(&b.user, b.inherited)));
    Ok(out)
}

/// Makes the inherited admins of team workspace `cluster` exactly `org_admins`.
pub async fn sync_inherited(t: &Tenancy, cluster: &str, org_admins: &[String]) -> Result<(), Status> {
    let current = members(t, cluster).await?;
    for m in current.iter().filter(|m| m.inherited) {
        if !org_admins.contains(&m.user) {
            delete_binding(t, cluster, &rbac::inherited_binding_name(&m.user)).await?;
        }
    }
    for admin in org_admins {
        if !current.iter().any(|m| m.inherited && &m.user == admin) {
            put_binding(t, cluster, rbac::inherited_binding(admin)).await?;
        }
    }
    Ok(())
}

/// The direct admins of an organization.
pub async fn org_admins(t: &Tenancy, org: &WorkspaceRef) -> Result<Vec<String>, Status> {
    Ok(members(t, &org.cluster)
        .await?
        .into_iter()
        .filter(|m| m.role == Role::Admin && !m.inherited)
        .map(|m| m.user)
        .collect())
}

/// Grants every member of `group` the direct `role` in `cluster`.
pub async fn set_group(t: &Tenancy, cluster: &str, group: &str, role: Role) -> Result<(), Status> {
    put_binding(t, cluster, rbac::group_binding(group, role)).await?;
    t.access.invalidate();
    Ok(())
}

/// Removes `group`'s direct role in `cluster`; `false` when it had none.
pub async fn remove_group(t: &Tenancy, cluster: &str, group: &str) -> Result<bool, Status> {
    let removed = delete_binding(t, cluster, &rbac::group_binding_name(group)).await?;
    t.access.invalidate();
    Ok(removed)
}

/// Group roles expressed by bindings in `cluster`, sorted by group.
pub async fn groups(t: &Tenancy, cluster: &str) -> Result<Vec<GroupMembership>, Status> {
    let list = Api::<ClusterRoleBinding>::all(t.client(cluster)?)
        .list(&ListParams::default().labels(&rbac::membership_selector()))
        .await
        .map_err(Status::from)?;
    let mut out: Vec<GroupMembership> = list.items.iter().filter_map(rbac::group_membership_of).collect();
    out.sort_by(|a, b| (&a.group, a.inherited).cmp(&(&b.group, b.inherited)));
    Ok(out)
}

/// The groups granted admin of an organization directly.
pub async fn org_admin_groups(t: &Tenancy, org: &WorkspaceRef) -> Result<Vec<String>, Status> {
    Ok(groups(t, &org.cluster)
        .await?
        .into_iter()
        .filter(|g| g.role == Role::Admin && !g.inherited)
        .map(|g| g.group)
        .collect())
}

/// Makes the inherited admin groups of team workspace `cluster` exactly `org_groups`.
pub async fn sync_inherited_groups(t: &Tenancy, cluster: &str, org_groups: &[String]) -> Result<(), Status> {
    let current = groups(t, cluster).await?;
    for g in current.iter().filter(|g| g.inherited) {
        if !org_groups.contains(&g.group) {
            delete_binding(t, cluster, &rbac::inherited_group_binding_name(&g.group)).await?;
        }
    }
    for group in org_groups {
        if !current.iter().any(|g| g.inherited && &g.group == group) {
            put_binding(t, cluster, rbac::inherited_group_binding(group)).await?;
        }
    }
    Ok(())
}

/// Re-materializes the org's admins (users and groups) into each of its Ready team workspaces.
pub async fn propagate_org_admins(t: &Tenancy, org: &WorkspaceRef) -> Result<(), Status> {
    let admins = org_admins(t, org).await?;
    let admin_groups = org_admin_groups(t, org).await?;
    for ws in children(t, &org.path).await? {
        let Some(cluster) = ws.spec.cluster.clone().filter(|_| ws.is_ready()) else {
            continue;
        };
        sync_inherited(t, &cluster, &admins).await?;
        sync_inherited_groups(t, &cluster, &admin_groups).await?;
    }
    t.access.invalidate();
    Ok(())
}

/// Deletes workspace `name` in `parent`; `false` when it was already gone.
pub async fn delete(t: &Tenancy, parent: &str, name: &str) -> Result<bool, Status> {
    let api = Api::<Workspace>::all(t.client(parent)?);
    let gone = match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => true,
        Err(kube::Error::Api(s)) if s.code == 404 => false,
        Err(e) => return Err(Status::from(e)),
    };
    t.access.invalidate();
    Ok(gone)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn create_requests_validate() {
        let long = "x".repeat(129);
        for (name, display, ok) in [
            ("acme", None, true),
            ("a-1", Some("Acme Inc."), true),
            ("Acme", None, false),
            ("", None, false),
            ("a_b", None, false),
            ("ok", Some(long.as_str()), false),
        ] {
            let req = CreateRequest {
                name: name.into(),
                display_name: display.map(Into::into),
            };
            assert_eq!(req.validate().is_ok(), ok, "{name:?} {:?}", req.display_name);
        }
    }

    #[test]
    fn creators_are_granted_only_until_the_org_is_set_up() {
        let m = |user: &str, role| Membership {
            user: user.into(),
            role,
            inherited: false,
        };
        let g = |group: &str, role| GroupMembership {
            group: group.into(),
            role,
            inherited: false,
        };
        for (created, members, groups, want) in [
            (true, vec![], vec![], CreatorGrant::Grant),
            (false, vec![], vec![], CreatorGrant::Grant),
            (false, vec![m("alice", Role::Admin)], vec![], CreatorGrant::AlreadyAdmin),
            // Removed by the org's admins: re-sending the creation must not re-admit.
            (false, vec![m("bob", Role::Admin)], vec![], CreatorGrant::Refuse),
            // Demoted to member: likewise.
            (
                false,
                vec![m("bob", Role::Admin), m("alice", Role::Member)],
                vec![],
                CreatorGrant::Refuse,
            ),
            // The admins are an IdP group (the creator removed herself or was removed): set up.
            (
                false,
                vec![],
                vec![g("oidc:platform", Role::Admin)],
                CreatorGrant::Refuse,
            ),
            (false, vec![], vec![g("oidc:devs", Role::Member)], CreatorGrant::Refuse),
        ] {
            assert_eq!(
                creator_grant(created, &members, &groups, "alice"),
                want,
                "created={created} {members:?} {groups:?}"
            );
        }
    }

    #[test]
    fn workspace_objects_carry_type_and_provenance() {
        let ws = workspace_object(
            Kind::Workspace,
            &CreateRequest {
                name: "dev".into(),
                display_name: Some("Dev team".into()),
            },
            "alice",
        );
        let t = ws.spec.type_.clone().unwrap();
        assert_eq!((t.name.as_str(), t.path.as_deref()), ("workspace", Some("root:faros")));
        let s = space(&ws, "root:faros:tenants:acme:dev".into(), Some(Role::Admin));
        assert_eq!(s.display_name.as_deref(), Some("Dev team"));
        assert_eq!(s.created_by.as_deref(), Some("alice"));
        assert_eq!(s.phase, "Scheduling");
        assert_eq!(
            workspace_object(
                Kind::Organization,
                &CreateRequest {
                    name: "acme".into(),
                    display_name: None
                },
                "a"
            )
            .spec
            .type_
            .unwrap()
            .name,
            "organization"
        );
    }
}
