//! IO-free: what the endpoint says about itself — server instructions and the
//! `faros://workspace` resource.

use serde::Serialize;

use super::naming::SEPARATOR;

/// URI of the resource describing the workspace.
pub const WORKSPACE_URI: &str = "faros://workspace";

/// A provider enabled in the workspace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnabledProvider {
    pub name: String,
    pub display_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Ready and serving a backend: its tools are offered here.
    pub federated: bool,
    /// Why not, when not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_federated_reason: Option<String>,
}

/// The workspace behind one endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceDescription {
    pub org: String,
    pub workspace: String,
    /// kcp path, e.g. `root:faros:tenants:acme:dev`.
    pub path: String,
    /// Logical cluster (what `/clusters/<cluster>` addresses).
    pub cluster: String,
    pub providers: Vec<EnabledProvider>,
}

/// The server instructions: what this endpoint is and which providers' tools it offers.
pub fn instructions(d: &WorkspaceDescription) -> String {
    let mut out = format!(
        "faros workspace {org}/{ws} (kcp path {path}, cluster {cluster}). This endpoint federates the MCP \
         tools of every provider enabled and Ready in this workspace; each tool is named \
         \"<provider>{SEPARATOR}<tool>\" and acts only in this workspace, as you. The resource {WORKSPACE_URI} \
         describes the workspace.",
        org = d.org,
        ws = d.workspace,
        path = d.path,
        cluster = d.cluster,
    );
    let federated: Vec<&EnabledProvider> = d.providers.iter().filter(|p| p.federated).collect();
    if federated.is_empty() {
        out.push_str(
            "\n\nNo provider is federated right now: enable one in the workspace (or wait until it is Ready).",
        );
        return out;
    }
    out.push_str("\n\nFederated providers:");
    for p in federated {
        out.push_str(&format!("\n- {} ({}{SEPARATOR}*)", p.display_name, p.name));
        if let Some(desc) = p.description.as_deref().filter(|d| !d.trim().is_empty()) {
            out.push_str(": ");
            out.push_str(desc.trim());
        }
    }
    out
}

/// The `faros://workspace` resource body (JSON).
pub fn resource_json(d: &WorkspaceDescription) -> String {
    // Serializing plain strings and bools cannot fail.
    serde_json::to_string_pretty(d).unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn desc(providers: Vec<EnabledProvider>) -> WorkspaceDescription {
        WorkspaceDescription {
            org: "acme".into(),
            workspace: "dev".into(),
            path: "root:faros:tenants:acme:dev".into(),
            cluster: "c1".into(),
            providers,
        }
    }

    fn provider(name: &str, federated: bool, description: Option<&str>) -> EnabledProvider {
        EnabledProvider {
            name: name.into(),
            display_name: name.to_uppercase(),
            description: description.map(String::from),
            federated,
            not_federated_reason: (!federated).then(|| "HeartbeatStale".into()),
        }
    }

    #[test]
    fn instructions_list_only_federated_providers() {
        let head = "faros workspace acme/dev (kcp path root:faros:tenants:acme:dev, cluster c1). This endpoint \
                    federates the MCP tools of every provider enabled and Ready in this workspace; each tool is \
                    named \"<provider>__<tool>\" and acts only in this workspace, as you. The resource \
                    faros://workspace describes the workspace.";
        for (what, providers, tail) in [
            (
                "none",
                vec![],
                "\n\nNo provider is federated right now: enable one in the workspace (or wait until it is Ready).",
            ),
            (
                "two, one not ready",
                vec![
                    provider("quickstart", true, Some(" Greetings. ")),
                    provider("down", false, None),
                    provider("bare", true, None),
                ],
                "\n\nFederated providers:\n- QUICKSTART (quickstart__*): Greetings.\n- BARE (bare__*)",
            ),
        ] {
            assert_eq!(instructions(&desc(providers)), format!("{head}{tail}"), "{what}");
        }
    }

    #[test]
    fn resource_is_camel_case_json() {
        let v: serde_json::Value =
            serde_json::from_str(&resource_json(&desc(vec![provider("down", false, None)]))).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "org": "acme",
                "workspace": "dev",
                "path": "root:faros:tenants:acme:dev",
                "cluster": "c1",
                "providers": [{
                    "name": "down",
                    "displayName": "DOWN",
                    "federated": false,
                    "notFederatedReason": "HeartbeatStale"
                }]
            })
        );
    }
}
