//! Warm latency of the hub's tenancy reads (`/api/me`, the organization list, an organization's
//! workspace list) for one caller: a few calls to warm caches and connections, then up to a number
//! of timed calls within a time budget (at the largest sizes a call may take seconds). It only
//! reads.

use std::time::{Duration, Instant};

use crate::bench::faros::Faros;
use crate::bench::stats::{ms, percentile};

/// Untimed calls before the timed ones.
const WARM_UP: usize = 2;

/// A call of the hub's API that failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum CallError {
    #[error("{method} {path}: {source}")]
    Http {
        method: reqwest::Method,
        path: String,
        source: reqwest::Error,
    },
    #[error("{method} {path}: {status} {body}")]
    Refused {
        method: reqwest::Method,
        path: String,
        status: reqwest::StatusCode,
        body: String,
    },
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

/// One call of the hub's API as `token`'s owner, without a body; the answer's body when it is a
/// success.
pub(super) async fn call(f: &Faros, token: &str, method: reqwest::Method, path: &str) -> Result<Vec<u8>, CallError> {
    let http = |source| CallError::Http {
        method: method.clone(),
        path: path.to_string(),
        source,
    };
    let resp = f
        .http
        .request(method.clone(), format!("{}{path}", f.hub))
        .bearer_auth(token)
        .send()
        .await
        .map_err(http)?;
    let status = resp.status();
    // Read the body, also of a failure: dropping it cancels the HTTP/2 stream (see `Faros::post`).
    let body = resp.bytes().await.map_err(http)?;
    if !status.is_success() {
        return Err(CallError::Refused {
            method,
            path: path.to_string(),
            status,
            body: String::from_utf8_lossy(&body).into_owned(),
        });
    }
    Ok(body.to_vec())
}

impl Sampled {
    /// The percentiles of `times`, the timed calls of `path` as `who`.
    pub(super) fn of(who: &'static str, path: String, mut times: Vec<Duration>, bytes: usize) -> Self {
        Self {
            who,
            path,
            p50_ms: ms(percentile(&mut times, 50.0)),
            p95_ms: ms(percentile(&mut times, 95.0)),
            calls: times.len(),
            bytes,
        }
    }
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
) -> Result<Sampled, CallError> {
    let mut bytes = 0;
    for _ in 0..WARM_UP {
        bytes = call(f, token, reqwest::Method::GET, path).await?.len();
    }
    let started = Instant::now();
    let mut times = Vec::with_capacity(calls);
    while times.len() < calls.max(1) && (times.is_empty() || started.elapsed() < budget) {
        let t0 = Instant::now();
        call(f, token, reqwest::Method::GET, path).await?;
        times.push(t0.elapsed());
    }
    Ok(Sampled::of(who, path.to_string(), times, bytes))
}
