//! Every name faros components agree on: workspace paths, object names, labels, finalizers,
//! condition types and reasons, routes, timings and environment variables. The workspace tree
//! they spell is in docs/architecture.md#workspace-tree.
//!
//! The hub, the reconciler, the SDK and the embedded kcp all meet at these strings; keeping them in
//! one module means a rename is a compile error instead of a silent mismatch between components.

use std::collections::BTreeMap;
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// Workspace tree
// ---------------------------------------------------------------------------------------------

/// kcp's root workspace.
pub const ROOT_PATH: &str = "root";
/// faros' own subtree; holds the WorkspaceTypes.
pub const FAROS_PATH: &str = "root:faros";
/// Platform APIResourceSchemas and the `admin.faros.sh` / `providers.faros.sh` APIExports.
pub const SYSTEM_CONTROLLERS_PATH: &str = "root:faros:system:controllers";
/// `Provider` objects and their kubeconfig Secrets.
pub const SYSTEM_PROVIDERS_PATH: &str = "root:faros:system:providers";
/// Parent of every provider workspace.
pub const PROVIDERS_PATH: &str = "root:faros:providers";
/// Parent of every organization workspace.
pub const TENANTS_PATH: &str = "root:faros:tenants";

/// `root:faros:providers:<name>`: the workspace one provider owns.
pub fn provider_workspace_path(provider: &str) -> String {
    format!("{PROVIDERS_PATH}:{provider}")
}

/// `root:faros:tenants:<org>`.
pub fn org_workspace_path(org: &str) -> String {
    format!("{TENANTS_PATH}:{org}")
}

/// `root:faros:tenants:<org>:<ws>`: a team workspace, where tenants bind provider exports.
pub fn team_workspace_path(org: &str, workspace: &str) -> String {
    format!("{TENANTS_PATH}:{org}:{workspace}")
}

/// The provider name if `path` is exactly `root:faros:providers:<name>`.
pub fn provider_from_workspace_path(path: &str) -> Option<&str> {
    let name = path.strip_prefix(PROVIDERS_PATH)?.strip_prefix(':')?;
    (!name.is_empty() && !name.contains(':')).then_some(name)
}

/// WorkspaceType of provider workspaces (allows no children, default-binds `providers.faros.sh`).
pub const WORKSPACE_TYPE_PROVIDER: &str = "provider";
/// WorkspaceType of organization workspaces.
pub const WORKSPACE_TYPE_ORGANIZATION: &str = "organization";
/// WorkspaceType of team workspaces.
pub const WORKSPACE_TYPE_WORKSPACE: &str = "workspace";
/// kcp's built-in type for plain structural workspaces (`root:faros`, `system:*`, `providers`, `tenants`).
pub const WORKSPACE_TYPE_UNIVERSAL: &str = "universal";
/// Where faros' WorkspaceTypes live; the `path` half of a type reference.
pub const WORKSPACE_TYPES_PATH: &str = FAROS_PATH;

/// Namespace in `system:controllers` holding leader-election Leases.
pub const SYSTEM_NAMESPACE: &str = "faros-system";

// ---------------------------------------------------------------------------------------------
// API groups, exports and resources
// ---------------------------------------------------------------------------------------------

/// Group of `Provider`; also the name of its APIExport (bound only in `system:providers`).
pub const ADMIN_GROUP: &str = "admin.faros.sh";
/// Group of `CatalogEntry`; also the name of its APIExport (default-bound in provider workspaces).
pub const PROVIDERS_GROUP: &str = "providers.faros.sh";
/// The one served version of both groups.
pub const API_VERSION: &str = "v1alpha1";
/// APIExport serving `providers`.
pub const ADMIN_EXPORT: &str = ADMIN_GROUP;
/// APIExport serving `catalogentries`.
pub const PROVIDERS_EXPORT: &str = PROVIDERS_GROUP;
/// APIExport serving nothing of its own: its permission claim shows the hub every tenant
/// workspace's membership bindings ([`crate::membership`]); default-bound in tenant workspaces.
pub const TENANCY_EXPORT: &str = "tenancy.faros.sh";
/// Plural of `Provider`.
pub const PROVIDERS_RESOURCE: &str = "providers";
/// Plural of `ProviderRevision`.
pub const PROVIDER_REVISIONS_RESOURCE: &str = "providerrevisions";
/// Plural of `CatalogEntry`.
pub const CATALOG_ENTRIES_RESOURCE: &str = "catalogentries";

/// Prefix of the APIResourceSchemas faros generates for its own types (`<prefix>.<plural>.<group>`).
/// Bump it whenever a schema changes: kcp schemas are immutable, so a changed schema needs a new name
/// (`crate::schema_revision`'s test fails until it has one and the new revision is recorded).
pub const SCHEMA_PREFIX: &str = "v1alpha1r2";

// ---------------------------------------------------------------------------------------------
// Objects in a provider workspace and in system:providers
// ---------------------------------------------------------------------------------------------

/// Namespace the reconciler creates in the provider workspace (the `provider` type has no
/// `universal` initializer, so it does not exist otherwise). Also where kubeconfig Secrets live.
pub const PROVIDER_NAMESPACE: &str = "default";
/// The provider's ServiceAccount, in [`PROVIDER_NAMESPACE`].
pub const PROVIDER_SERVICE_ACCOUNT: &str = "provider";
/// ClusterRoleBinding giving [`PROVIDER_SERVICE_ACCOUNT`] `cluster-admin` in its own workspace.
pub const PROVIDER_SA_BINDING: &str = "faros:providers:sa:provider";
/// The ClusterRole that binding refers to.
pub const CLUSTER_ADMIN_ROLE: &str = "cluster-admin";
/// Long-lived ServiceAccount token Secret in the provider workspace.
pub const PROVIDER_TOKEN_SECRET: &str = "provider-token";
/// Annotation that ties a token Secret to its ServiceAccount.
pub const SERVICE_ACCOUNT_NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
/// Secret type of a legacy ServiceAccount token.
pub const SERVICE_ACCOUNT_TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";
/// Data key of the kubeconfig in the kubeconfig Secret.
pub const KUBECONFIG_SECRET_KEY: &str = "kubeconfig";
/// Name of the cluster, user and context inside a minted kubeconfig.
pub const KUBECONFIG_ENTRY_NAME: &str = "faros";

/// Username kcp gives the provider's ServiceAccount; the only identity allowed to heartbeat.
pub const PROVIDER_SERVICE_ACCOUNT_USER: &str = "system:serviceaccount:default:provider";

/// `spec.secretName` if set and non-empty, else `<provider>-kubeconfig`.
pub fn kubeconfig_secret_name(provider: &str, spec_secret_name: Option<&str>) -> String {
    match spec_secret_name {
        Some(name) if !name.is_empty() => name.to_string(),
        _ => format!("{provider}-kubeconfig"),
    }
}

/// ClusterRole and ClusterRoleBinding letting every authenticated user bind `export`:
/// `faros:providers:bind:<export>`.
pub fn bind_grant_name(export: &str) -> String {
    format!("faros:providers:bind:{export}")
}
/// Group the bind grant is given to.
pub const BIND_GRANT_GROUP: &str = "system:authenticated";
/// kcp's verb for binding an APIExport.
pub const BIND_VERB: &str = "bind";
/// Verb `edgeProxyAccess` grants the provider SA on edges.
pub const EDGE_PROXY_VERB: &str = "proxy";

/// Finalizer the reconciler puts on `Provider` so deletion tears down workspace and Secret.
pub const PROVIDER_FINALIZER: &str = "admin.faros.sh/cleanup";

// ---------------------------------------------------------------------------------------------
// Labels
// ---------------------------------------------------------------------------------------------

/// Standard "who manages this" label.
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// Value of [`LABEL_MANAGED_BY`] on everything the hub writes.
pub const MANAGED_BY_FAROS: &str = "faros";
/// The provider an object belongs to.
pub const LABEL_PROVIDER: &str = "providers.faros.sh/provider";

/// The labels every hub-written object for `provider` carries.
pub fn managed_labels(provider: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (LABEL_MANAGED_BY.to_string(), MANAGED_BY_FAROS.to_string()),
        (LABEL_PROVIDER.to_string(), provider.to_string()),
    ])
}

/// Label selector matching what [`managed_labels`] produces.
pub fn managed_selector(provider: &str) -> String {
    format!("{LABEL_MANAGED_BY}={MANAGED_BY_FAROS},{LABEL_PROVIDER}={provider}")
}

// ---------------------------------------------------------------------------------------------
// Conditions
// ---------------------------------------------------------------------------------------------

/// The summary condition on `Provider` and `CatalogEntry`.
pub const CONDITION_READY: &str = "Ready";

/// `Provider` Ready=True: everything is provisioned.
pub const REASON_PROVISIONED: &str = "Provisioned";
/// Message that goes with [`REASON_PROVISIONED`].
pub const MESSAGE_PROVISIONED: &str = "Workspace, ServiceAccount, and kubeconfig Secret provisioned.";
/// `Provider` Ready=False: the workspace could not be created or did not become Ready.
pub const REASON_WORKSPACE_ERROR: &str = "WorkspaceError";
/// `Provider` Ready=False: namespace, ServiceAccount or its binding failed.
pub const REASON_SERVICE_ACCOUNT_ERROR: &str = "ServiceAccountError";
/// `Provider` Ready=False: token or kubeconfig could not be produced.
pub const REASON_KUBECONFIG_ERROR: &str = "KubeconfigError";
/// `Provider` Ready=False: the kubeconfig Secret could not be written.
pub const REASON_SECRET_ERROR: &str = "SecretError";
/// `Provider` Ready=False while the finalizer tears things down.
pub const REASON_DELETING: &str = "Deleting";
/// `Provider` Ready=False: `metadata.name` cannot be a workspace name (not a DNS-1123 label).
pub const REASON_INVALID_NAME: &str = "InvalidName";

/// `CatalogEntry` Ready=True: endpoints parsed and registered.
pub const REASON_ENDPOINTS_RESOLVED: &str = "EndpointsResolved";
/// `CatalogEntry` Ready=False: a URL did not parse.
pub const REASON_INVALID_ENDPOINT: &str = "InvalidEndpoint";
/// `CatalogEntry` Ready=False: neither UI, backend nor APIExport declared.
pub const REASON_NO_ENDPOINT: &str = "NoEndpoint";
/// `CatalogEntry` Ready=False: the provider has beaten before but not within [`HEARTBEAT_TTL`].
pub const REASON_HEARTBEAT_STALE: &str = "HeartbeatStale";
/// `CatalogEntry` Ready=False: `backend.healthPath` did not answer 2xx.
pub const REASON_BACKEND_UNHEALTHY: &str = "BackendUnhealthy";

// ---------------------------------------------------------------------------------------------
// Heartbeats and health
// ---------------------------------------------------------------------------------------------

/// How often a provider's `serve` beats (the first beat is immediate).
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(30);
/// A provider that has beaten before is not Ready when its last beat is older than this.
pub const HEARTBEAT_TTL: Duration = Duration::from_secs(90);
/// How often the hub re-evaluates staleness.
pub const HEARTBEAT_SWEEP_INTERVAL: Duration = Duration::from_secs(30);
/// Client-side timeout of one heartbeat request.
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest heartbeat body the hub reads.
pub const HEARTBEAT_BODY_LIMIT: usize = 4096;

/// `backend.healthPath` when unset.
pub const DEFAULT_HEALTH_PATH: &str = "/healthz";
/// `ui.indexPath` when unset.
pub const DEFAULT_INDEX_PATH: &str = "/";

// ---------------------------------------------------------------------------------------------
// Hub routes and headers
// ---------------------------------------------------------------------------------------------

/// Catalog listing.
pub const API_PROVIDERS_PATH: &str = "/api/providers";

/// `/api/providers/<name>/heartbeat`.
pub fn heartbeat_path(provider: &str) -> String {
    format!("{API_PROVIDERS_PATH}/{provider}/heartbeat")
}

/// `/ui/providers/<name>`: proxied to `ui.url` (append `/…`).
pub fn ui_proxy_prefix(provider: &str) -> String {
    format!("/ui/providers/{provider}")
}

/// `/services/providers/<name>`: proxied to `backend.url` (append `/…`).
pub fn backend_proxy_prefix(provider: &str) -> String {
    format!("/services/providers/{provider}")
}

/// `/api/orgs/<org>/workspaces/<ws>/providers/<name>/enable`.
pub fn enable_path(org: &str, workspace: &str, provider: &str) -> String {
    format!("/api/orgs/{org}/workspaces/{workspace}/providers/{provider}/enable")
}

/// `/api/orgs/<org>/workspaces/<ws>/providers/<name>/disable`.
pub fn disable_path(org: &str, workspace: &str, provider: &str) -> String {
    format!("/api/orgs/{org}/workspaces/{workspace}/providers/{provider}/disable")
}

/// Every inbound header with this prefix (case-insensitive) is stripped by the backend proxy.
pub const HEADER_PREFIX: &str = "x-faros-";
/// Verified username of the caller.
pub const HEADER_USER: &str = "x-faros-user";
/// Verified organization of the caller.
pub const HEADER_ORG: &str = "x-faros-org";
/// Verified team workspace of the caller.
pub const HEADER_WORKSPACE: &str = "x-faros-workspace";
/// Logical cluster of that workspace.
pub const HEADER_CLUSTER: &str = "x-faros-cluster";
/// Short-lived signed assertion over the identity headers, verified by the SDK.
pub const HEADER_ASSERTION: &str = "x-faros-assertion";

// ---------------------------------------------------------------------------------------------
// Environment variables and default paths of a provider
// ---------------------------------------------------------------------------------------------

/// Directory of APIResourceSchema YAML files `init` applies.
pub const ENV_SCHEMAS_DIR: &str = "FAROS_SCHEMAS_DIR";
/// Default of [`ENV_SCHEMAS_DIR`].
pub const DEFAULT_SCHEMAS_DIR: &str = "/etc/faros/schemas";
/// CatalogEntry YAML `init` self-registers; unset or empty means skip.
pub const ENV_CATALOGENTRY_FILE: &str = "FAROS_CATALOGENTRY_FILE";
/// Where the charts mount the CatalogEntry file.
pub const DEFAULT_CATALOGENTRY_FILE: &str = "/etc/faros/catalogentry/catalogentry.yaml";
/// Kubeconfig of the provider workspace (the minted Secret, mounted).
pub const ENV_PROVIDER_KUBECONFIG: &str = "FAROS_PROVIDER_KUBECONFIG";
/// Default of [`ENV_PROVIDER_KUBECONFIG`].
pub const DEFAULT_PROVIDER_KUBECONFIG: &str = "/var/run/secrets/faros/faros-provider-kubeconfig";
/// Hub base URL a provider heartbeats to; unset disables heartbeats.
pub const ENV_HUB_URL: &str = "FAROS_HUB_URL";
/// The provider's name as registered with the hub.
pub const ENV_PROVIDER_NAME: &str = "FAROS_PROVIDER_NAME";

// ---------------------------------------------------------------------------------------------
// Name validation
// ---------------------------------------------------------------------------------------------

/// Why a name was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("name must not be empty")]
    Empty,
    #[error("name {name:?} is longer than {max} characters")]
    TooLong { name: String, max: usize },
    #[error(
        "name {name:?} must consist of lower case alphanumeric characters or '-', \
         and must start and end with an alphanumeric character"
    )]
    Invalid { name: String },
}

/// Longest DNS-1123 label; also the longest provider name (it becomes a workspace name).
pub const DNS_LABEL_MAX: usize = 63;

/// Checks a DNS-1123 label (`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, at most 63 characters): the rule for
/// provider names, because each becomes a kcp workspace name and a path segment.
pub fn validate_dns_label(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > DNS_LABEL_MAX {
        return Err(NameError::TooLong {
            name: name.to_string(),
            max: DNS_LABEL_MAX,
        });
    }
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = name.as_bytes();
    let ends_ok = bytes.first().copied().is_some_and(alnum) && bytes.last().copied().is_some_and(alnum);
    if !ends_ok || !bytes.iter().all(|&b| alnum(b) || b == b'-') {
        return Err(NameError::Invalid { name: name.to_string() });
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Hub reconciler
// ---------------------------------------------------------------------------------------------

/// Field manager (server-side apply) of everything the hub reconciler writes; call sites append
/// `/<scope>` so one intent never prunes another's fields.
pub const RECONCILER_FIELD_MANAGER: &str = "faros-hub-reconciler";
/// Leader-election Lease of the hub reconciler, in [`SYSTEM_NAMESPACE`] of [`SYSTEM_CONTROLLERS_PATH`].
pub const RECONCILER_LEASE: &str = "faros-hub-reconciler";
/// The kcp user the hub reconciler authenticates as, unless told otherwise (`faros grant`,
/// `faros dev`, the e2e harnesses).
pub const RECONCILER_KCP_USER: &str = "faros-hub-reconciler";
/// The kcp user the hub API authenticates as, unless told otherwise.
pub const HUB_KCP_USER: &str = "faros-hub-api";
/// The kcp group of the components' own users (the hub API's and the reconciler's). The hub
/// refuses every caller in it: a component's credential is for kcp, never a way into the hub,
/// whose authorization of a caller would then be the component's own standing in kcp.
pub const COMPONENTS_GROUP: &str = "faros:components";

// ---------------------------------------------------------------------------------------------
// Tenancy: membership RBAC inside organization and team workspaces
// ---------------------------------------------------------------------------------------------

/// ClusterRole of workspace admins: everything, including membership and Enable.
pub const WORKSPACE_ADMIN_ROLE: &str = "faros:workspace:admin";
/// ClusterRole of workspace members: aggregates [`WORKSPACE_MEMBER_BASE_ROLE`] and the per-provider
/// roles Enable adds ([`provider_member_role`]).
pub const WORKSPACE_MEMBER_ROLE: &str = "faros:workspace:member";
/// `access` plus read-only rights on everything.
pub const WORKSPACE_MEMBER_BASE_ROLE: &str = "faros:workspace:member-base";
/// Label selecting ClusterRoles into [`WORKSPACE_MEMBER_ROLE`].
pub const LABEL_AGGREGATE_TO_MEMBER: &str = "faros.sh/aggregate-to-workspace-member";
/// Label on membership ClusterRoleBindings: `direct` or `inherited` (org admins in team workspaces).
pub const LABEL_MEMBERSHIP: &str = "faros.sh/membership";
pub const MEMBERSHIP_DIRECT: &str = "direct";
pub const MEMBERSHIP_INHERITED: &str = "inherited";
/// Annotation holding the member's username (names are hashed: usernames are not DNS names).
pub const ANNOTATION_USER: &str = "faros.sh/user";
/// Annotation holding the group a membership binding grants to (an identity provider's group, as
/// the token's groups claim names it with `--oidc-groups-prefix`).
pub const ANNOTATION_GROUP: &str = "faros.sh/group";
/// Annotation holding a display name on tenant workspaces.
pub const ANNOTATION_DISPLAY_NAME: &str = "faros.sh/display-name";
/// Annotation recording who created an organization or workspace.
pub const ANNOTATION_CREATED_BY: &str = "faros.sh/created-by";

/// ClusterRole granting workspace members write access to one enabled provider's resources.
pub fn provider_member_role(provider: &str) -> String {
    format!("faros:provider:{provider}:member")
}

/// ClusterRole + ClusterRoleBinding letting a provider's ServiceAccount proxy to edges.
pub fn edges_proxy_grant(provider: &str) -> String {
    format!("faros:provider:{provider}:edges-proxy")
}

/// `/api/orgs/<org>/workspaces/<ws>/mcp`.
pub fn mcp_path(org: &str, workspace: &str) -> String {
    format!("/api/orgs/{org}/workspaces/{workspace}/mcp")
}

/// `/api/orgs/<org>/workspaces/<ws>/providers/enabled`.
pub fn enabled_path(org: &str, workspace: &str) -> String {
    format!("/api/orgs/{org}/workspaces/{workspace}/providers/enabled")
}

/// Provider whose `edges` resource `edgeProxyAccess` grants `proxy` on.
pub const EDGES_PROVIDER: &str = "edges";
/// The resource `edgeProxyAccess` grants [`EDGE_PROXY_VERB`] on.
pub const EDGES_RESOURCE: &str = "edges";
/// Condition kcp sets on a deleting APIBinding while bound objects remain.
pub const CONDITION_BINDING_RESOURCE_DELETE_SUCCESS: &str = "BindingResourceDeleteSuccess";

/// The name kcp's RBAC knows a ServiceAccount by outside its own workspace (kcp's "global
/// ServiceAccount" form, `system:kcp:serviceaccount:<cluster>:<namespace>:<name>`). A bare
/// `system:serviceaccount:…` subject would instead match a same-named ServiceAccount the tenant
/// creates in their own workspace.
pub fn global_service_account_user(cluster: &str, namespace: &str, name: &str) -> String {
    format!("system:kcp:serviceaccount:{cluster}:{namespace}:{name}")
}

/// [`global_service_account_user`] of a provider's `default/provider` ServiceAccount.
pub fn provider_global_user(provider_cluster: &str) -> String {
    global_service_account_user(provider_cluster, PROVIDER_NAMESPACE, PROVIDER_SERVICE_ACCOUNT)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn paths() {
        assert_eq!(provider_workspace_path("quickstart"), "root:faros:providers:quickstart");
        assert_eq!(org_workspace_path("acme"), "root:faros:tenants:acme");
        assert_eq!(team_workspace_path("acme", "dev"), "root:faros:tenants:acme:dev");
        for (path, want) in [
            ("root:faros:providers:quickstart", Some("quickstart")),
            ("root:faros:providers:", None),
            ("root:faros:providers", None),
            ("root:faros:providersx:a", None),
            ("root:faros:providers:a:b", None),
            ("root:faros:tenants:a", None),
        ] {
            assert_eq!(provider_from_workspace_path(path), want, "{path}");
        }
    }

    #[test]
    fn object_names() {
        assert_eq!(kubeconfig_secret_name("q", None), "q-kubeconfig");
        assert_eq!(kubeconfig_secret_name("q", Some("")), "q-kubeconfig");
        assert_eq!(kubeconfig_secret_name("q", Some("mine")), "mine");
        assert_eq!(
            bind_grant_name("greetings.quickstart.faros.sh"),
            "faros:providers:bind:greetings.quickstart.faros.sh"
        );
        assert_eq!(PROVIDER_FINALIZER, "admin.faros.sh/cleanup");
    }

    #[test]
    fn labels_and_selector_agree() {
        let labels = managed_labels("q");
        assert_eq!(
            labels.get("app.kubernetes.io/managed-by").map(String::as_str),
            Some("faros")
        );
        assert_eq!(labels.get("providers.faros.sh/provider").map(String::as_str), Some("q"));
        let joined: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(managed_selector("q"), joined.join(","));
    }

    #[test]
    fn routes() {
        assert_eq!(heartbeat_path("q"), "/api/providers/q/heartbeat");
        assert_eq!(ui_proxy_prefix("q"), "/ui/providers/q");
        assert_eq!(backend_proxy_prefix("q"), "/services/providers/q");
        assert_eq!(
            enable_path("o", "w", "q"),
            "/api/orgs/o/workspaces/w/providers/q/enable"
        );
        assert_eq!(
            disable_path("o", "w", "q"),
            "/api/orgs/o/workspaces/w/providers/q/disable"
        );
        for h in [
            HEADER_USER,
            HEADER_ORG,
            HEADER_WORKSPACE,
            HEADER_CLUSTER,
            HEADER_ASSERTION,
        ] {
            assert!(h.starts_with(HEADER_PREFIX), "{h}");
            // http::HeaderName requires lower case for static names.
            assert_eq!(h, h.to_ascii_lowercase());
        }
    }

    #[test]
    fn timings_keep_ttl_three_beats() {
        assert_eq!(HEARTBEAT_INTERVAL, Duration::from_secs(30));
        assert_eq!(HEARTBEAT_TTL, HEARTBEAT_INTERVAL * 3);
    }

    #[test]
    fn dns_labels() {
        let long = "a".repeat(64);
        let max = "a".repeat(63);
        for (name, want) in [
            ("quickstart", Ok(())),
            ("a", Ok(())),
            ("a-1", Ok(())),
            ("0a", Ok(())),
            (max.as_str(), Ok(())),
            ("", Err(NameError::Empty)),
            (
                long.as_str(),
                Err(NameError::TooLong {
                    name: long.clone(),
                    max: 63,
                }),
            ),
            ("-a", Err(NameError::Invalid { name: "-a".into() })),
            ("a-", Err(NameError::Invalid { name: "a-".into() })),
            ("A", Err(NameError::Invalid { name: "A".into() })),
            ("a.b", Err(NameError::Invalid { name: "a.b".into() })),
            ("a:b", Err(NameError::Invalid { name: "a:b".into() })),
        ] {
            assert_eq!(validate_dns_label(name), want, "{name:?}");
        }
    }
}
