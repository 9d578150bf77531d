//! Rules kcp enforces on its own APIs whatever RBAC grants, IO-free: nobody but the system writes
//! the status of APIBindings and APIExports (kcp's system CRD authorizer), and the tenancy
//! export's maximal permission policy lets users only read `workspaces/status` and
//! `workspacetypes/status` — a workspace admin cannot move its own workspace's phase.

use super::Attributes;

/// kcp's denial reason when a rule applies, else None.
pub fn denial(attrs: &Attributes<'_>) -> Option<String> {
    if attrs.subresource != "status" {
        return None;
    }
    let reading = super::verb::is_read(attrs.verb);
    match (attrs.api_group, attrs.resource) {
        ("apis.kcp.io", "apibindings") => Some("apibinding status updates not permitted".into()),
        ("apis.kcp.io", "apiexports") => Some("apiexport status updates not permitted".into()),
        ("tenancy.kcp.io", "workspaces" | "workspacetypes") if !reading => Some(format!(
            "API export \"root\"|\"tenancy.kcp.io\" policy: {}/status is read-only",
            attrs.resource
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::UserInfo;

    #[test]
    fn status_of_kcp_objects_is_the_systems() {
        let user = UserInfo {
            username: "alice".into(),
            ..Default::default()
        };
        let at = |verb: &'static str, group: &'static str, resource: &'static str, sub: &'static str| Attributes {
            subresource: sub,
            ..Attributes::resource(&user, verb, group, resource)
        };
        let cases = [
            (at("update", "tenancy.kcp.io", "workspaces", "status"), true),
            (at("patch", "tenancy.kcp.io", "workspacetypes", "status"), true),
            (at("get", "tenancy.kcp.io", "workspaces", "status"), false),
            (at("update", "tenancy.kcp.io", "workspaces", ""), false),
            (at("update", "apis.kcp.io", "apibindings", "status"), true),
            (at("get", "apis.kcp.io", "apiexports", "status"), true),
            (at("update", "", "namespaces", "status"), false),
        ];
        for (attrs, denied) in cases {
            assert_eq!(
                denial(&attrs).is_some(),
                denied,
                "{} {}/{}",
                attrs.verb,
                attrs.resource,
                attrs.subresource
            );
        }
    }
}
