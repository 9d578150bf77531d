//! Enable and Disable at each tenant size: the organizations' owner (an admin of every team
//! workspace) enables `quickstart`, the provider `faros dev` runs, in the first team workspace of
//! each of the organizations a step created, then disables it in each, every call timed. Enable answers once
//! kcp reports the APIBinding bound, so its time is the whole of it: the membership check (from the
//! index), the writes, kcp binding the export and the member role. Measuring is all it does; the
//! workspaces it touches are left as they were.

use std::time::{Duration, Instant};

use super::latency::Sampled;
use super::plan::TenantStep;
use super::tenants::{org_name, workspace_name};
use crate::bench::faros::Faros;
use crate::bench::stats::{ms, percentile};

/// The provider enabled: the one `faros dev` runs unless told not to.
pub(super) const PROVIDER: &str = "quickstart";

/// How long to wait for the provider to be Ready in the catalog (`faros dev` starts it beside the
/// platform; it registers while the first tenants are created).
const CATALOG_WAIT: Duration = Duration::from_secs(120);

#[derive(Debug, thiserror::Error)]
pub(super) enum EnableError {
    #[error("POST {path}: {source}")]
    Http { path: String, source: reqwest::Error },
    #[error("POST {path}: {status} {body}")]
    Refused {
        path: String,
        status: reqwest::StatusCode,
        body: String,
    },
    #[error("GET /api/providers: {0}")]
    Catalog(reqwest::Error),
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

async fn post(f: &Faros, token: &str, path: &str) -> Result<(), EnableError> {
    let http = |source| EnableError::Http {
        path: path.to_string(),
        source,
    };
    let resp = f
        .http
        .post(format!("{}{path}", f.hub))
        .bearer_auth(token)
        .json(&serde_json::json!({}))
        .send()
        .await
        .map_err(http)?;
    let status = resp.status();
    // Read the body: dropping it cancels the HTTP/2 stream (see `Faros::post`).
    let body = resp.text().await.map_err(http)?;
    if !status.is_success() {
        return Err(EnableError::Refused {
            path: path.to_string(),
            status,
            body,
        });
    }
    Ok(())
}

/// Whether the catalog lists [`PROVIDER`] as Ready.
async fn in_catalog(f: &Faros, token: &str) -> Result<bool, EnableError> {
    let catalog: serde_json::Value = f
        .http
        .get(format!("{}/api/providers", f.hub))
        .bearer_auth(token)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(EnableError::Catalog)?
        .json()
        .await
        .map_err(EnableError::Catalog)?;
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
    let sampled = |verb: &str, mut times: Vec<Duration>| Sampled {
        who: "owner",
        path: format!("POST …/{PROVIDER}/{verb}"),
        p50_ms: ms(percentile(&mut times, 50.0)),
        p95_ms: ms(percentile(&mut times, 95.0)),
        calls: times.len(),
        bytes: 0,
    };
    Ok([sampled("enable", enable_times), sampled("disable", disable_times)])
}
