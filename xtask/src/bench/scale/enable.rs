//! Enable and Disable at each tenant size: the organizations' owner (an admin of every team
//! workspace) enables `quickstart`, the provider `faros dev` runs, in the first team workspace of
//! each of the organizations a step created, then disables it in each, every call timed. Enable answers once
//! kcp reports the APIBinding bound, so its time is the whole of it: the membership check (from the
//! index), the writes, kcp binding the export and the member role. Measuring is all it does; the
//! workspaces it touches are left as they were.

use std::time::{Duration, Instant};

use super::latency::{CallError, Sampled, call};
use super::plan::TenantStep;
use super::tenants::{org_name, workspace_name};
use crate::bench::faros::Faros;

/// The provider enabled: the one `faros dev` runs unless told not to.
pub(super) const PROVIDER: &str = "quickstart";

/// How long to wait for the provider to be Ready in the catalog (`faros dev` starts it beside the
/// platform; it registers while the first tenants are created).
const CATALOG_WAIT: Duration = Duration::from_secs(120);

#[derive(Debug, thiserror::Error)]
pub(super) enum EnableError {
    #[error(transparent)]
    Call(#[from] CallError),
    #[error("GET /api/providers: {0}")]
    Catalog(serde_json::Error),
    #[error("provider {PROVIDER:?} was not Ready in the catalog within {CATALOG_WAIT:?}")]
    NoProvider,
}

fn path(org: usize, verb: &str) -> String {
    format!(
        "/api/orgs/{}/workspaces/{}/providers/{PROVIDER}/{verb}",
        org_name(org),
        workspace_name(0)
    )
}

async fn post(f: &Faros, token: &str, path: &str) -> Result<(), CallError> {
    call(f, token, reqwest::Method::POST, path).await.map(drop)
}

/// Whether the catalog lists [`PROVIDER`] as Ready.
async fn in_catalog(f: &Faros, token: &str) -> Result<bool, EnableError> {
    let body = call(f, token, reqwest::Method::GET, "/api/providers").await?;
    let catalog: serde_json::Value = serde_json::from_slice(&body).map_err(EnableError::Catalog)?;
    Ok(catalog["items"]
        .as_array()
        .is_some_and(|items| items.iter().any(|i| i["name"] == PROVIDER && i["ready"] == true)))
}

/// Enables then disables in up to `calls` of `step`'s organizations, once the provider is Ready in
/// the catalog, stopping early once `budget` is spent.
pub(super) async fn sample(
    f: &Faros,
    token: &str,
    step: &TenantStep,
    calls: usize,
    budget: Duration,
) -> Result<[Sampled; 2], EnableError> {
    let started = Instant::now();
    while !in_catalog(f, token).await? {
        if started.elapsed() > CATALOG_WAIT {
            return Err(EnableError::NoProvider);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // One more than timed: the last warms up (connections, the provider's first binding of the
    // run) untimed, when the step has more than one organization.
    let mut orgs: Vec<usize> = step.orgs.clone().take(calls.max(1) + 1).collect();
    if orgs.len() > 1
        && let Some(warm) = orgs.pop()
    {
        post(f, token, &path(warm, "enable")).await?;
        post(f, token, &path(warm, "disable")).await?;
    }
    let started = Instant::now();
    let mut enabled = Vec::new();
    let mut enable_times = Vec::new();
    for &org in &orgs {
        if !enable_times.is_empty() && started.elapsed() > budget {
            break;
        }
        let t0 = Instant::now();
        post(f, token, &path(org, "enable")).await?;
        enable_times.push(t0.elapsed());
        enabled.push(org);
    }
    let mut disable_times = Vec::new();
    for org in enabled {
        let t0 = Instant::now();
        post(f, token, &path(org, "disable")).await?;
        disable_times.push(t0.elapsed());
    }
    let sampled = |verb: &str, times| Sampled::of("owner", format!("POST …/{PROVIDER}/{verb}"), times, 0);
    Ok([sampled("enable", enable_times), sampled("disable", disable_times)])
}
