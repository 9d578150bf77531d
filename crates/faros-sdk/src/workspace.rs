//! Where a provider acts: which server, logical cluster and identity a kube configuration reaches,
//! and whether that is the provider's own workspace.
//!
//! A provider acts as `system:serviceaccount:default:provider` inside its own workspace
//! `root:faros:providers:<name>` (workspace type `root:faros:provider`). A shell that still points
//! `KUBECONFIG` at an admin kubeconfig would otherwise publish schemas, an export and a bind grant for
//! every authenticated user into `root`. So `init` and `serve` first [`observe`] the target (the
//! workspace's own `LogicalCluster` named `cluster`, and a `TokenReview` of the configuration's
//! bearer token, both of which real kcp serves), then [`decide`] without IO whether to go on.
//!
//! What it must not do: write anything, or log the token.

use faros_core::kcp::{
    ANNOTATION_CLUSTER, ANNOTATION_LOGICALCLUSTER_TYPE, ANNOTATION_PATH, LOGICALCLUSTER_NAME, LogicalCluster,
};
use faros_core::names;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};

/// Set to `true` to let `init` and `serve` act in a workspace that is not a provider workspace, or
/// as an identity that is not the provider's ServiceAccount.
pub const ENV_ALLOW_FOREIGN_WORKSPACE: &str = "FAROS_ALLOW_FOREIGN_WORKSPACE";
/// The command-line flag the provider binaries offer for [`ENV_ALLOW_FOREIGN_WORKSPACE`].
pub const FLAG_ALLOW_FOREIGN_WORKSPACE: &str = "--allow-foreign-workspace";

/// Errors locating the target.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{0}")]
    Refused(String),
    #[error("building a client for {server}: {source}")]
    Client {
        server: String,
        #[source]
        source: kube::Error,
    },
}

/// What the workspace says about itself (its `LogicalCluster` named `cluster`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClusterView {
    /// The LogicalCluster exists; any annotation may be missing.
    Workspace {
        /// Logical cluster name (`kcp.io/cluster`).
        name: Option<String>,
        /// Canonical workspace path (`kcp.io/path`).
        path: Option<String>,
        /// `<path>:<name>` of the workspace type (`internal.tenancy.kcp.io/type`).
        workspace_type: Option<String>,
    },
    /// The server has no LogicalCluster here: not a kcp workspace.
    NotAWorkspace,
    /// Reading it failed (forbidden, unreachable, …).
    Unreadable(String),
}

/// Who the server says the configuration authenticates as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdentityView {
    User {
        username: String,
        /// For a kcp ServiceAccount: the logical cluster it belongs to.
        home_cluster: Option<String>,
    },
    /// The server could not tell (no bearer token, TokenReview forbidden, token rejected, …).
    Unknown(String),
}

/// Everything [`decide`] looks at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// The configuration's server URL, e.g. `https://kcp:6443/clusters/root:faros:providers:q`.
    pub server: String,
    pub cluster: ClusterView,
    pub identity: IdentityView,
}

/// Where the provider acts, once accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub server: String,
    /// The workspace path, or a description when it is unknown.
    pub workspace: String,
    /// The workspace path, when kcp told it (the LogicalCluster's path annotation).
    pub path: Option<String>,
    /// The logical cluster name, or `unknown`.
    pub cluster: String,
    /// The authenticated user name, or a description when it is unknown.
    pub identity: String,
    /// The provider whose workspace this is (from the path `root:faros:providers:<name>`).
    pub provider: Option<String>,
    /// Why this is not the provider's own workspace, when acting there was allowed anyway.
    pub foreign: Vec<String>,
}

/// The workspace type every provider workspace has: `root:faros:provider`.
pub fn provider_workspace_type() -> String {
    format!("{}:{}", names::WORKSPACE_TYPES_PATH, names::WORKSPACE_TYPE_PROVIDER)
}

/// Decides whether to act where `observed` points. Without `allow_foreign`, anything but the
/// provider's ServiceAccount in a provider workspace (the one the ServiceAccount belongs to) is
/// refused with a message naming the server, workspace, identity and what to do.
pub fn decide(observed: &Observed, allow_foreign: bool) -> Result<Placement, WorkspaceError> {
    let mut problems = Vec::new();
    let (cluster_name, path, provider) = match &observed.cluster {
        ClusterView::Workspace {
            name,
            path,
            workspace_type,
        } => {
            let provider = path
                .as_deref()
                .and_then(names::provider_from_workspace_path)
                .map(str::to_string);
            match path {
                None => problems.push(format!(
                    "its LogicalCluster has no {ANNOTATION_PATH} annotation, so it is not a provider workspace"
                )),
                Some(p) if provider.is_none() => problems.push(format!(
                    "workspace {p} is not a provider workspace ({}:<name>)",
                    names::PROVIDERS_PATH
                )),
                Some(_) => {}
            }
            let want = provider_workspace_type();
            match workspace_type {
                Some(t) if *t == want => {}
                Some(t) => problems.push(format!("its workspace type is {t}, not {want}")),
                None => problems.push(format!(
                    "its LogicalCluster has no {ANNOTATION_LOGICALCLUSTER_TYPE} annotation (a provider workspace has type {want})"
                )),
            }
            (name.clone(), path.clone(), provider)
        }
        ClusterView::NotAWorkspace => {
            problems.push(format!(
                "the server has no LogicalCluster {LOGICALCLUSTER_NAME:?} there, so it is not a kcp workspace"
            ));
            (None, None, None)
        }
        ClusterView::Unreadable(why) => {
            problems.push(format!(
                "its LogicalCluster {LOGICALCLUSTER_NAME:?} cannot be read: {why}"
            ));
            (None, None, None)
        }
    };
    let identity = match &observed.identity {
        IdentityView::User { username, home_cluster } => {
            if username != names::PROVIDER_SERVICE_ACCOUNT_USER {
                problems.push(format!(
                    "{username} is not the provider's ServiceAccount {}",
                    names::PROVIDER_SERVICE_ACCOUNT_USER
                ));
            } else if let (Some(home), Some(here)) = (home_cluster, &cluster_name)
                && home != here
            {
                problems.push(format!(
                    "the ServiceAccount belongs to logical cluster {home}, not to this one ({here})"
                ));
            }
            username.clone()
        }
        IdentityView::Unknown(why) => {
            problems.push(format!("the identity is unknown ({why})"));
            "an unknown identity".to_string()
        }
    };
    let placement = Placement {
        server: observed.server.clone(),
        workspace: path.clone().unwrap_or_else(|| "of unknown path".to_string()),
        path,
        cluster: cluster_name.unwrap_or_else(|| "unknown".to_string()),
        identity,
        provider,
        foreign: problems,
    };
    if placement.foreign.is_empty() || allow_foreign {
        return Ok(placement);
    }
    Err(WorkspaceError::Refused(format!(
        "refusing to act in workspace {} at {} as {}: {}. A provider acts as {} in its own workspace {}:<name>: \
         point {} at the kubeconfig the hub minted for it (Secret <name>-kubeconfig in {}), or set {}=true \
         ({}) to act here anyway",
        placement.workspace,
        placement.server,
        placement.identity,
        placement.foreign.join("; "),
        names::PROVIDER_SERVICE_ACCOUNT_USER,
        names::PROVIDERS_PATH,
        names::ENV_PROVIDER_KUBECONFIG,
        names::SYSTEM_PROVIDERS_PATH,
        ENV_ALLOW_FOREIGN_WORKSPACE,
        FLAG_ALLOW_FOREIGN_WORKSPACE,
    )))
}

/// Reads what [`decide`] needs from the server `config` points at. What cannot be learned (a
/// forbidden read, a token the server does not know) is recorded as unknown, and [`decide`] refuses
/// it; only a configuration no client can be built from is an error.
pub async fn observe(config: &kube::Config) -> Result<Observed, WorkspaceError> {
    let server = config.cluster_url.to_string();
    let client = Client::try_from(config.clone()).map_err(|source| WorkspaceError::Client {
        server: server.clone(),
        source,
    })?;
    let cluster = match Api::<LogicalCluster>::all(client.clone())
        .get_opt(LOGICALCLUSTER_NAME)
        .await
    {
        Ok(Some(lc)) => {
            let annotation = |key: &str| lc.annotations().get(key).cloned();
            ClusterView::Workspace {
                name: annotation(ANNOTATION_CLUSTER),
                path: annotation(ANNOTATION_PATH),
                workspace_type: annotation(ANNOTATION_LOGICALCLUSTER_TYPE),
            }
        }
        Ok(None) => ClusterView::NotAWorkspace,
        Err(e) => ClusterView::Unreadable(e.to_string()),
    };
    let identity = match bearer_token(config) {
        Ok(token) => review(&client, token).await,
        Err(why) => IdentityView::Unknown(why),
    };
    Ok(Observed {
        server,
        cluster,
        identity,
    })
}

/// [`observe`], [`decide`] and one log line saying where the provider acts.
pub async fn locate(config: &kube::Config, allow_foreign: bool) -> Result<Placement, WorkspaceError> {
    let placement = decide(&observe(config).await?, allow_foreign)?;
    if placement.foreign.is_empty() {
        tracing::info!(
            server = %placement.server,
            workspace = %placement.workspace,
            cluster = %placement.cluster,
            identity = %placement.identity,
            "acting in the provider workspace"
        );
    } else {
        tracing::warn!(
            server = %placement.server,
            workspace = %placement.workspace,
            cluster = %placement.cluster,
            identity = %placement.identity,
            reasons = %placement.foreign.join("; "),
            "acting outside a provider workspace because {ENV_ALLOW_FOREIGN_WORKSPACE} allows it"
        );
    }
    Ok(placement)
}

/// The bearer token the configuration authenticates with, or why there is none.
fn bearer_token(config: &kube::Config) -> Result<String, String> {
    // kube keeps the token in a secret wrapper whose only public way out is its serialization.
    let auth = serde_json::to_value(&config.auth_info).unwrap_or_default();
    if let Some(token) = auth.get("token").and_then(|t| t.as_str())
        && !token.is_empty()
    {
        return Ok(token.to_string());
    }
    if let Some(file) = &config.auth_info.token_file {
        return std::fs::read_to_string(file)
            .map(|t| t.trim().to_string())
            .map_err(|e| format!("reading token file {file}: {e}"));
    }
    Err("the kubeconfig authenticates without a bearer token".to_string())
}

/// Asks the server who `token` is.
async fn review(client: &Client, token: String) -> IdentityView {
    let request = TokenReview {
        spec: TokenReviewSpec {
            token,
            ..Default::default()
        },
        ..Default::default()
    };
    let reviewed = match Api::<TokenReview>::all(client.clone())
        .create(&PostParams::default(), &request)
        .await
    {
        Ok(r) => r,
        Err(e) => return IdentityView::Unknown(format!("TokenReview failed: {e}")),
    };
    let status = reviewed.status.unwrap_or_default();
    match status.user {
        Some(user) if status.authenticated == Some(true) => IdentityView::User {
            username: user.username.unwrap_or_default(),
            home_cluster: user
                .extra
                .and_then(|extra| faros_core::user::cluster_name(&extra).map(str::to_string)),
        },
        _ => IdentityView::Unknown(format!(
            "TokenReview did not authenticate the token{}",
            status.error.map(|e| format!(": {e}")).unwrap_or_default()
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const SERVER: &str = "https://kcp:6443/clusters/root:faros:providers:quickstart";

    fn provider_ws() -> ClusterView {
        ClusterView::Workspace {
            name: Some("abc123".into()),
            path: Some("root:faros:providers:quickstart".into()),
            workspace_type: Some("root:faros:provider".into()),
        }
    }

    fn provider_sa(home: Option<&str>) -> IdentityView {
        IdentityView::User {
            username: names::PROVIDER_SERVICE_ACCOUNT_USER.into(),
            home_cluster: home.map(str::to_string),
        }
    }

    fn observed(cluster: ClusterView, identity: IdentityView) -> Observed {
        Observed {
            server: SERVER.into(),
            cluster,
            identity,
        }
    }

    /// The part of a refusal that explains it (the advice after it is the same for every case).
    fn reason(result: Result<Placement, WorkspaceError>) -> String {
        let text = result.unwrap_err().to_string();
        let (head, _) = text.split_once(". A provider acts as").unwrap();
        head.to_string()
    }

    #[test]
    fn the_provider_service_account_in_its_workspace_is_allowed() {
        for home in [Some("abc123"), None] {
            let placement = decide(&observed(provider_ws(), provider_sa(home)), false).unwrap();
            assert_eq!(
                placement,
                Placement {
                    server: SERVER.into(),
                    workspace: "root:faros:providers:quickstart".into(),
                    path: Some("root:faros:providers:quickstart".into()),
                    cluster: "abc123".into(),
                    identity: names::PROVIDER_SERVICE_ACCOUNT_USER.into(),
                    provider: Some("quickstart".into()),
                    foreign: vec![],
                }
            );
        }
    }

    #[test]
    fn everything_else_is_refused_naming_what_is_wrong() {
        let root = ClusterView::Workspace {
            name: Some("root".into()),
            path: Some("root".into()),
            workspace_type: None,
        };
        let admin = IdentityView::User {
            username: "admin".into(),
            home_cluster: None,
        };
        let prefix = |ws: &str, who: &str| format!("refusing to act in workspace {ws} at {SERVER} as {who}: ");
        let sa = names::PROVIDER_SERVICE_ACCOUNT_USER;
        let cases = [
            (
                observed(root.clone(), admin.clone()),
                format!(
                    "{}workspace root is not a provider workspace (root:faros:providers:<name>); its LogicalCluster \
                     has no internal.tenancy.kcp.io/type annotation (a provider workspace has type root:faros:provider); \
                     admin is not the provider's ServiceAccount {sa}",
                    prefix("root", "admin")
                ),
            ),
            (
                observed(provider_ws(), admin.clone()),
                format!(
                    "{}admin is not the provider's ServiceAccount {sa}",
                    prefix("root:faros:providers:quickstart", "admin")
                ),
            ),
            (
                observed(provider_ws(), provider_sa(Some("other1"))),
                format!(
                    "{}the ServiceAccount belongs to logical cluster other1, not to this one (abc123)",
                    prefix("root:faros:providers:quickstart", sa)
                ),
            ),
            (
                observed(
                    ClusterView::Workspace {
                        name: Some("t1".into()),
                        path: Some("root:faros:tenants:acme:dev".into()),
                        workspace_type: Some("root:faros:workspace".into()),
                    },
                    provider_sa(Some("t1")),
                ),
                format!(
                    "{}workspace root:faros:tenants:acme:dev is not a provider workspace (root:faros:providers:<name>); \
                     its workspace type is root:faros:workspace, not root:faros:provider",
                    prefix("root:faros:tenants:acme:dev", sa)
                ),
            ),
            (
                observed(ClusterView::NotAWorkspace, provider_sa(None)),
                format!(
                    "{}the server has no LogicalCluster \"cluster\" there, so it is not a kcp workspace",
                    prefix("of unknown path", sa)
                ),
            ),
            (
                observed(
                    ClusterView::Unreadable("forbidden".into()),
                    IdentityView::Unknown("TokenReview failed: forbidden".into()),
                ),
                format!(
                    "{}its LogicalCluster \"cluster\" cannot be read: forbidden; the identity is unknown (TokenReview failed: forbidden)",
                    prefix("of unknown path", "an unknown identity")
                ),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(reason(decide(&input, false)), want);
        }
    }

    #[test]
    fn refusals_say_how_to_fix_or_override() {
        let admin = IdentityView::User {
            username: "admin".into(),
            home_cluster: None,
        };
        let text = decide(&observed(provider_ws(), admin.clone()), false)
            .unwrap_err()
            .to_string();
        assert!(
            text.ends_with(
                "A provider acts as system:serviceaccount:default:provider in its own workspace root:faros:providers:<name>: \
                 point FAROS_PROVIDER_KUBECONFIG at the kubeconfig the hub minted for it (Secret <name>-kubeconfig in \
                 root:faros:system:providers), or set FAROS_ALLOW_FOREIGN_WORKSPACE=true (--allow-foreign-workspace) to act here anyway"
            ),
            "{text}"
        );
        // Allowed: the reasons travel with the placement, so the caller can warn.
        let placement = decide(&observed(provider_ws(), admin), true).unwrap();
        assert_eq!(placement.provider.as_deref(), Some("quickstart"));
        assert_eq!(placement.foreign.len(), 1);
        let plain = decide(&observed(ClusterView::NotAWorkspace, provider_sa(None)), true).unwrap();
        assert_eq!(plain.provider, None);
    }
}
