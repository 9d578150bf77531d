//! The names kcp reserves (its `ReservedNames` plugin): the WorkspaceTypes `any` and `system`, which
//! workspace type references give a meaning of their own, cannot be created, not even by
//! `system:masters`. (kcp's `ReservedMetadata` plugin, for `kcp.io` labels and annotations, is off
//! by default, and real kcp accepts them.)

use faros_core::status::{Status, StatusDetails};
use serde_json::Value;

use super::field::FieldError;
use super::{Operation, Request};
use crate::objects::meta;

const RESERVED_WORKSPACE_TYPES: &[&str] = &["any", "system"];

/// Whether `name` is reserved for `group`/`resource`.
fn is_reserved(group: &str, resource: &str, name: &str) -> bool {
    (group, resource) == ("tenancy.kcp.io", "workspacetypes") && RESERVED_WORKSPACE_TYPES.contains(&name)
}

/// Refuses the creation of an object with a reserved name.
pub fn admit_reserved(req: &Request<'_>, obj: &Value) -> Result<(), Status> {
    let name = meta::name(obj).unwrap_or_default();
    if req.operation != Operation::Create || !is_reserved(&req.def.group, &req.def.resource, name) {
        return Ok(());
    }
    let resource = faros_core::status::qualified(&req.def.group, &req.def.resource);
    let problem = FieldError::invalid("metadata.name", name, "name is reserved");
    Err(
        Status::forbidden(format!("{resource} \"{name}\" is forbidden: {problem}")).with_details(StatusDetails {
            name: name.into(),
            group: req.def.group.clone(),
            kind: req.def.resource.clone(),
            ..Default::default()
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_names() {
        for (group, resource, name, reserved) in [
            ("tenancy.kcp.io", "workspacetypes", "any", true),
            ("tenancy.kcp.io", "workspacetypes", "system", true),
            ("tenancy.kcp.io", "workspacetypes", "universal", false),
            ("tenancy.kcp.io", "workspaces", "any", false),
            ("", "configmaps", "system", false),
        ] {
            assert_eq!(is_reserved(group, resource, name), reserved, "{resource}/{name}");
        }
    }
}
