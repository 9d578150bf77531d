//! The provider workspace of one reconcile, with the fewest requests: taken from the controller's
//! watch of the provider workspaces when it has seen it Ready ([`super::workspaces`]: no request);
//! otherwise created first when the Provider's status names no workspace cluster (it was never
//! provisioned, so the workspace is almost always absent and a read first is a request for
//! nothing), read first otherwise ([`bootstrap::ensure_workspace`]). A workspace just created and not
//! Ready yet parks the Provider on the watch, which queues it again once kcp has readied it: the
//! reconcile does not hold its concurrency slot while kcp works.
//!
//! What it must not do: trust the guess. A create answered 409 (the workspace exists after all: a
//! status write was lost, a deletion is still in progress, or the watch has not caught up) goes the
//! read-first way, which checks the type and a pending deletion, and waits for Ready.

use std::time::Duration;

use faros_core::kcp::Workspace;
use faros_core::names;
use faros_core::provider::ProviderStatus;
use kube::Api;
use kube::api::PostParams;

use super::context::{Context, ProviderKey};
use crate::bootstrap::{self, BootstrapError};

/// What to ask kcp first about the provider workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    /// Never provisioned: create it, and read it only if it exists.
    Create,
    /// Provisioned before (status names its cluster): read it, and create it only if it is gone.
    Read,
}

/// IO-free: the first request for a Provider with `status`.
pub(crate) fn probe(status: Option<&ProviderStatus>) -> Probe {
    match status.and_then(|s| s.workspace_cluster.as_deref()) {
        Some(cluster) if !cluster.is_empty() => Probe::Read,
        _ => Probe::Create,
    }
}

/// Ensures workspace `root:faros:providers:<name>` of type `root:faros:provider` for Provider
/// `key` and returns it once Ready; `None`: created and not Ready yet, the Provider is parked until
/// it is ([`super::workspaces`]).
pub(crate) async fn ensure(
    ctx: &Context,
    key: &ProviderKey,
    status: Option<&ProviderStatus>,
    timeout: Duration,
) -> Result<Option<Workspace>, BootstrapError> {
    let name = key.name.as_str();
    if let Some(ws) = ctx.workspaces.with(|s| s.usable(name)) {
        return Ok(Some(ws));
    }
    let factory = &ctx.factory;
    let type_ = bootstrap::faros_type(names::WORKSPACE_TYPE_PROVIDER);
    if probe(status) == Probe::Read {
        return bootstrap::ensure_workspace(factory, names::PROVIDERS_PATH, name, type_, timeout)
            .await
            .map(Some);
    }
    let path = names::provider_workspace_path(name);
    let client = factory
        .cluster(names::PROVIDERS_PATH)
        .map_err(|source| BootstrapError::Client {
            cluster: names::PROVIDERS_PATH.into(),
            source,
        })?;
    let api: Api<Workspace> = Api::all(client);
    let created = match api
        .create(&PostParams::default(), &bootstrap::workspace(name, type_.clone()))
        .await
    {
        Ok(ws) => ws,
        Err(kube::Error::Api(s)) if s.code == 409 => {
            return bootstrap::ensure_workspace(factory, names::PROVIDERS_PATH, name, type_, timeout)
                .await
                .map(Some);
        }
        Err(source) => {
            return Err(BootstrapError::Kube {
                step: format!("creating workspace {path}"),
                source,
            });
        }
    };
    tracing::info!(%path, "created workspace");
    if created.is_ready() {
        return Ok(Some(created));
    }
    // The watch may have seen it Ready meanwhile; parked otherwise.
    Ok(ctx.workspaces.with(|s| s.take_or_park(name, key)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_table() {
        let with_cluster = |cluster: Option<&str>| ProviderStatus {
            workspace_cluster: cluster.map(str::to_string),
            ..Default::default()
        };
        let cases = [
            ("no status: never provisioned", None, Probe::Create),
            (
                "status without a cluster (failed before scheduling)",
                Some(with_cluster(None)),
                Probe::Create,
            ),
            ("empty cluster", Some(with_cluster(Some(""))), Probe::Create),
            (
                "cluster known: provisioned before",
                Some(with_cluster(Some("abc"))),
                Probe::Read,
            ),
        ];
        for (case, status, want) in cases {
            assert_eq!(probe(status.as_ref()), want, "{case}");
        }
    }
}
