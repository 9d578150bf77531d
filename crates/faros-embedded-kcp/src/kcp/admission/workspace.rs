//! Workspace admission, after kcp's `tenancy.kcp.io/Workspace` and `WorkspaceTypeExists` plugins:
//! the type is defaulted and resolved, the user must be allowed to `use` it, the parent's and the
//! child's limits must accept each other, and the creator is recorded as owner.

use faros_core::kcp::ANNOTATION_OWNER;
use faros_core::kcp::tenancy::WorkspaceTypeReference;
use faros_core::status::{Status, StatusCause};
use serde_json::{Value, json};

use crate::auth::{Attributes, GROUP_MASTERS, REQUIRED_GROUPS_ANNOTATION, Verb};
use crate::kcp::admission::{Operation, Request};
use crate::kcp::tenancy::types::{self, TypeInfo};
use crate::kcp::tenancy::workspace_types;
use crate::objects::meta;
use crate::state::ServerState;

/// kcp's admission refusal of the workspace `name` (it names the object in the details too).
fn forbidden(name: &str, message: impl std::fmt::Display) -> Status {
    Status::forbidden(format!("workspaces.tenancy.kcp.io \"{name}\" is forbidden: {message}")).with_details(
        faros_core::status::StatusDetails {
            name: name.into(),
            group: "tenancy.kcp.io".into(),
            kind: "workspaces".into(),
            ..Default::default()
        },
    )
}

/// A workspace name is one path segment: a DNS label.
fn check_name(name: &str) -> Result<(), Status> {
    match crate::objects::validate_dns_label(name) {
        None => Ok(()),
        Some(message) => Err(Status::invalid(
            "tenancy.kcp.io",
            "Workspace",
            name,
            vec![StatusCause {
                reason: "FieldValueInvalid".into(),
                message,
                field: "metadata.name".into(),
            }],
        )),
    }
}

fn spec_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.pointer(&format!("/spec/{field}"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn type_ref(obj: &Value) -> Option<WorkspaceTypeReference> {
    obj.pointer("/spec/type")
        .and_then(|t| serde_json::from_value::<WorkspaceTypeReference>(t.clone()).ok())
        .filter(|t| !t.name.is_empty())
}

/// Workspace admission: type resolution and limits, owner annotation, immutable fields.
pub fn admit_workspace(state: &ServerState, req: &Request<'_>, obj: &mut Value) -> Result<(), Status> {
    let privileged = req.user.in_group(GROUP_MASTERS);
    let name = meta::name(obj).unwrap_or_default().to_string();
    match req.operation {
        Operation::Create => admit_create(state, req, obj, &name, privileged),
        Operation::Update => {
            let Some(old) = req.old else { return Ok(()) };
            admit_update(old, obj, &name, privileged)?;
            if !privileged {
                check_required_groups(state, req.cluster, obj, &name)?;
            }
            Ok(())
        }
        Operation::Delete => Ok(()),
    }
}

fn admit_update(old: &Value, new: &Value, name: &str, privileged: bool) -> Result<(), Status> {
    let (old_cluster, new_cluster) = (spec_str(old, "cluster"), spec_str(new, "cluster"));
    if !old_cluster.is_empty() && new_cluster.is_empty() {
        return Err(forbidden(name, "spec.cluster cannot be unset"));
    }
    if old_cluster != new_cluster && !privileged {
        return Err(forbidden(
            name,
            "spec.cluster can only be changed by system privileged users",
        ));
    }
    if spec_str(old, "URL") != spec_str(new, "URL") && !privileged {
        return Err(forbidden(
            name,
            "spec.URL can only be changed by system privileged users",
        ));
    }
    // A validation rule of kcp's Workspace CRD (so 422, in CEL's words), not an admission plugin.
    if type_ref(old) != type_ref(new) {
        return Err(Status::invalid(
            "tenancy.kcp.io",
            "Workspace",
            name,
            vec![StatusCause {
                reason: "FieldValueInvalid".into(),
                message: "Invalid value: name is immutable".into(),
                field: "spec.type".into(),
            }],
        ));
    }
    Ok(())
}

fn admit_create(
    state: &ServerState,
    req: &Request<'_>,
    obj: &mut Value,
    name: &str,
    privileged: bool,
) -> Result<(), Status> {
    check_name(name)?;
    // kcp's Workspace is created in phase Scheduling (the CRD's default): status exists from the
    // start, owned by no manager, so the controllers' first status write only adds fields to it
    // (their managedFields entry does not own `status` itself, as kcp's does not).
    obj["status"] = serde_json::json!({"phase": "Scheduling"});
    if !privileged {
        if !spec_str(obj, "cluster").is_empty() {
            return Err(forbidden(
                name,
                "spec.Cluster can only be set by system privileged users",
            ));
        }
        if !spec_str(obj, "URL").is_empty() {
            return Err(forbidden(name, "spec.URL can only be set by system privileged users"));
        }
    }
    if obj.pointer("/spec/mount").is_some_and(|m| !m.is_null()) {
        return Err(Status::failure(
            501,
            "NotImplemented",
            "mounted workspaces (spec.mount) are not supported by the embedded kcp",
        ));
    }
    let get = |path: &str, type_name: &str| workspace_types::lookup(state, path, type_name);
    let parent_path = workspace_types::path_of_cluster(state, req.cluster)
        .ok_or_else(|| forbidden(name, "workspace type cannot be resolved: LogicalCluster not found"))?;
    let parent_type_name = workspace_types::cluster_type(state, req.cluster).ok_or_else(|| {
        forbidden(
            name,
            format!(
                "annotation {} on LogicalCluster must be set",
                workspace_types::TYPE_ANNOTATION
            ),
        )
    })?;
    let parent_type = split_qualified(&parent_type_name)
        .and_then(|(p, n)| get(p, n))
        .ok_or_else(|| forbidden(name, format!("parent type {parent_type_name} cannot be resolved")))?;

    let reference = match type_ref(obj) {
        Some(r) => r,
        None => parent_type.spec.default_child_workspace_type.clone().ok_or_else(|| {
            forbidden(
                name,
                format!(
                    "spec.defaultChildWorkspaceType of workspace type {} must be set",
                    parent_type.qualified()
                ),
            )
        })?,
    };
    let child_type = types::resolve_ref(&get, &parent_path, &reference).map_err(|e| forbidden(name, e))?;
    let child_aliases = types::aliases(&get, &child_type).map_err(|e| forbidden(name, e))?;
    if !privileged {
        for alias in &child_aliases {
            check_use(state, req, alias).map_err(|msg| forbidden(name, msg))?;
        }
    }
    let parent_aliases = types::aliases(&get, &parent_type).map_err(|e| forbidden(name, e))?;
    let (p, c) = (parent_type.qualified(), child_type.qualified());
    types::check_parents(&parent_aliases, &child_aliases, &p, &c).map_err(|e| forbidden(name, e))?;
    types::check_children(&parent_aliases, &child_aliases, &p, &c).map_err(|e| forbidden(name, e))?;

    if !obj.get("spec").is_some_and(Value::is_object) {
        obj["spec"] = json!({});
    }
    obj["spec"]["type"] = json!({"name": child_type.name, "path": child_type.path});
    let meta = meta::meta_mut(obj);
    if let Some(extra) = &child_type.spec.additional_workspace_labels {
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            for (k, v) in extra {
                labels.entry(k.clone()).or_insert_with(|| json!(v));
            }
        }
    }
    // Required groups are inherited from the parent; only system users may choose them.
    let given = meta
        .get("annotations")
        .and_then(|a| a.get(REQUIRED_GROUPS_ANNOTATION))
        .is_some();
    if !given || !privileged {
        let parent = parent_required_groups(state, req.cluster);
        let ann = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(ann) = ann.as_object_mut() {
            match parent {
                Some(groups) => {
                    ann.insert(REQUIRED_GROUPS_ANNOTATION.into(), Value::String(groups));
                }
                None => {
                    ann.remove(REQUIRED_GROUPS_ANNOTATION);
                }
            }
        }
    }
    if !privileged {
        // kcp records the creator so the new workspace can grant it cluster-admin.
        let owner = serde_json::to_string(req.user).map_err(|e| Status::internal(e.to_string()))?;
        let ann = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(ann) = ann.as_object_mut() {
            ann.insert(ANNOTATION_OWNER.into(), Value::String(owner));
        }
    }
    Ok(())
}

/// The required groups of the logical cluster a workspace is created in.
fn parent_required_groups(state: &ServerState, cluster: &str) -> Option<String> {
    let clusters = state.clusters.read().unwrap_or_else(|p| p.into_inner());
    clusters.get(cluster).and_then(|c| c.required_groups.clone())
}

/// A non-system update must keep the required groups the parent prescribes.
fn check_required_groups(state: &ServerState, cluster: &str, obj: &Value, name: &str) -> Result<(), Status> {
    let expected = parent_required_groups(state, cluster).unwrap_or_default();
    let got = meta::annotation(obj, REQUIRED_GROUPS_ANNOTATION).unwrap_or_default();
    if got != expected {
        return Err(forbidden(
            name,
            format!("missing required groups annotation {REQUIRED_GROUPS_ANNOTATION}={expected}"),
        ));
    }
    Ok(())
}

fn split_qualified(q: &str) -> Option<(&str, &str)> {
    q.rsplit_once(':').filter(|(p, n)| !p.is_empty() && !n.is_empty())
}

/// kcp asks for verb `use` on `workspacetypes/<name>` in the type's workspace, for every alias.
fn check_use(state: &ServerState, req: &Request<'_>, alias: &TypeInfo) -> Result<(), String> {
    let denied = || {
        format!(
            "unable to use cluster workspace type {}: missing verb='use' permission on workspacetype",
            alias.qualified()
        )
    };
    if workspace_types::usable_by_everyone(alias) {
        return Ok(());
    }
    let cluster = workspace_types::cluster_of_path(state, &alias.path).ok_or_else(denied)?;
    let attrs = Attributes {
        name: &alias.name,
        ..Attributes::resource(
            req.user,
            Verb::Use.as_str(),
            workspace_types::GROUP,
            workspace_types::TYPES,
        )
    };
    crate::auth::authorize(state, &cluster, &attrs).map_err(|_| denied())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TYPE_IMMUTABLE: &str =
        "Workspace.tenancy.kcp.io \"a\" is invalid: spec.type: Invalid value: name is immutable";

    #[test]
    fn updates_keep_system_fields() {
        let old = json!({"spec": {"type": {"name": "universal", "path": "root"}, "cluster": "abc", "URL": "https://x/clusters/root:a"}});
        let with = |f: &dyn Fn(&mut Value)| {
            let mut v = old.clone();
            f(&mut v);
            v
        };
        let cases: Vec<(Value, bool, Result<(), &str>)> = vec![
            (old.clone(), false, Ok(())),
            (
                with(&|v| v["spec"]["cluster"] = json!("zzz")),
                false,
                Err("spec.cluster can only be changed by system privileged users"),
            ),
            (with(&|v| v["spec"]["cluster"] = json!("zzz")), true, Ok(())),
            (
                with(&|v| {
                    v["spec"].as_object_mut().unwrap().remove("cluster");
                }),
                true,
                Err("spec.cluster cannot be unset"),
            ),
            (
                with(&|v| v["spec"]["URL"] = json!("https://evil")),
                false,
                Err("spec.URL can only be changed by system privileged users"),
            ),
            (
                with(&|v| v["spec"]["type"]["name"] = json!("other")),
                true,
                Err(TYPE_IMMUTABLE),
            ),
            (
                with(&|v| {
                    v["spec"].as_object_mut().unwrap().remove("type");
                }),
                false,
                Err(TYPE_IMMUTABLE),
            ),
        ];
        for (new, privileged, want) in cases {
            let got = admit_update(&old, &new, "a", privileged).map_err(|s| s.message);
            let want = want.map_err(|m| match m {
                TYPE_IMMUTABLE => m.to_string(),
                m => format!("workspaces.tenancy.kcp.io \"a\" is forbidden: {m}"),
            });
            assert_eq!(got, want, "{new}");
        }
    }

    #[test]
    fn names_are_path_segments() {
        assert!(check_name("team-a").is_ok());
        for bad in ["Team", "a.b", "a:b", "-a", &"a".repeat(64)] {
            let err = check_name(bad).unwrap_err();
            assert_eq!(err.code, 422, "{bad}");
            assert!(
                err.message.starts_with(&format!(
                    "Workspace.tenancy.kcp.io \"{bad}\" is invalid: metadata.name: "
                )),
                "{}",
                err.message
            );
        }
    }
}
