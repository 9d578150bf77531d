//! Warm latency of the hub's tenancy reads (`/api/me`, the organization list, an organization's
//! workspace list) for one caller: a few calls to warm caches and connections, then up to a number
//! of timed calls within a time budget (at the largest sizes a call may take seconds). It only
//! reads.

use std::time::{Duration, Instant};

use crate::bench::faros::Faros;
use crate::bench::stats::{ms, percentile};

/// Untimed calls before the timed ones.
const WARM_UP: usize = 2;

#[derive(Debug, thiserror::Error)]
pub(super) enum LatencyError {
    #[error("GET {path}: {source}")]
    Http { path: String, source: reqwest::Error },
    #[error("GET {path}: {status}")]
    Refused { path: String, status: reqwest::StatusCode },
}

/// The timed calls of one route for one caller.
#[derive(Debug)]
pub(super) struct Sampled {
    pub who: &'static str,
    pub path: String,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub calls: usize,
    /// Size of the answer, bytes (it grows with what the caller belongs to).
    pub bytes: usize,
}

async fn call(f: &Faros, token: &str, path: &str) -> Result<usize, LatencyError> {
    let http = |source| LatencyError::Http {
        path: path.to_string(),
        source,
    };
    let resp = f
        .http
        .get(format!("{}{path}", f.hub))
        .bearer_auth(token)
        .send()
        .await
        .map_err(http)?;
    let status = resp.status();
    let body = resp.bytes().await.map_err(http)?;
    if !status.is_success() {
        return Err(LatencyError::Refused {
            path: path.to_string(),
            status,
        });
    }
    Ok(body.len())
}

/// Times up to `calls` sequential GETs of `path` as `token`'s owner, stopping early once `budget`
/// is spent (at least one timed call is always made).
pub(super) async fn sample(
    f: &Faros,
    who: &'static str,
    token: &str,
    path: &str,
    calls: usize,
    budget: Duration,
) -> Result<Sampled, LatencyError> {
    let mut bytes = 0;
    for _ in 0..WARM_UP {
        bytes = call(f, token, path).await?;
    }
    let started = Instant::now();
    let mut times = Vec::with_capacity(calls);
    while times.len() < calls.max(1) && (times.is_empty() || started.elapsed() < budget) {
        let t0 = Instant::now();
        call(f, token, path).await?;
        times.push(t0.elapsed());
    }
    Ok(Sampled {
        who,
        path: path.to_string(),
        p50_ms: ms(percentile(&mut times, 50.0)),
        p95_ms: ms(percentile(&mut times, 95.0)),
        calls: times.len(),
        bytes,
    })
}
