//! Backend health probes: `GET backend.url + healthPath` on an interval with a timeout. A newly
//! registered (or re-pointed) backend is probed at once instead of waiting for the next tick, and a
//! backend whose probe failed is probed again soon ([`retry_after`]): a provider registers its
//! backend before its server listens (`init`, then `serve`), and would otherwise stay unready for
//! up to an interval after it does. A provider whose backend is not known healthy is also probed
//! the moment it heartbeats: it beats once it serves, so a restart is seen at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use tokio_util::sync::CancellationToken;

use crate::catalog::record::BackendHealth;
use crate::catalog::registry::Registry;
use crate::proxy::{UpstreamPool, routes};

/// Probe timings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeSettings {
    pub interval: Duration,
    pub timeout: Duration,
}

impl Default for ProbeSettings {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(10),
            timeout: Duration::from_secs(2),
        }
    }
}

/// Probes one URL: healthy on any 2xx.
pub async fn probe(client: &UpstreamPool, target: http::Uri, timeout: Duration) -> BackendHealth {
    let req = match http::Request::get(target.clone())
        .header(http::header::USER_AGENT, "faros-hub-health-probe")
        .body(Body::empty())
    {
        Ok(r) => r,
        Err(e) => return BackendHealth::Unhealthy(format!("GET {target}: {e}")),
    };
    match tokio::time::timeout(timeout, client.request(req)).await {
        Err(_) => BackendHealth::Unhealthy(format!("GET {target}: no answer within {}s", timeout.as_secs_f64())),
        Ok(Err(e)) if e.is_connect() => BackendHealth::Unhealthy(format!("GET {target}: connection failed")),
        Ok(Err(e)) => BackendHealth::Unhealthy(format!("GET {target}: {e}")),
        Ok(Ok(resp)) if resp.status().is_success() => BackendHealth::Healthy,
        Ok(Ok(resp)) => BackendHealth::Unhealthy(format!("GET {target}: HTTP {}", resp.status().as_u16())),
    }
}

/// The first re-probe after a failed probe; each further failure doubles it.
const FIRST_RETRY: Duration = Duration::from_millis(250);

/// IO-free: how long after its `failures`-th failed probe in a row a backend is probed again:
/// 250 ms (`FIRST_RETRY`), doubling; `None` once that reaches the interval (the tick probes it then).
pub fn retry_after(failures: u32, interval: Duration) -> Option<Duration> {
    let delay = FIRST_RETRY.saturating_mul(1u32 << failures.saturating_sub(1).min(16));
    (delay < interval).then_some(delay)
}

/// Which backends a round probes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Round {
    /// The interval's tick: every backend.
    All,
    /// A registration changed: the backends never probed.
    New,
    /// A retry is due: the backends whose last probe failed.
    Failing,
    /// Providers beat while their backend was not known healthy.
    Beat,
}

/// Runs until `cancel`.
pub async fn run(registry: Arc<Registry>, client: UpstreamPool, settings: ProbeSettings, cancel: CancellationToken) {
    let mut changes = registry.subscribe_changes();
    let mut tick = tokio::time::interval(settings.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Failed probes in a row per backend, and when the next retry is due.
    let mut failing: HashMap<String, u32> = HashMap::new();
    let mut retry: Option<tokio::time::Instant> = None;
    loop {
        let due = async {
            match retry {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let round = tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tick.tick() => Round::All,
            r = changes.changed() => {
                if r.is_err() { return }
                Round::New
            }
            _ = due => Round::Failing,
            () = registry.probe_requested() => Round::Beat,
        };
        let unprobed = if round == Round::New {
            registry.unprobed()
        } else {
            Vec::new()
        };
        let beaten = if round == Round::Beat {
            registry.take_probe_requests()
        } else {
            Default::default()
        };
        let targets: Vec<_> = registry
            .backends()
            .into_iter()
            .filter(|(name, _, _)| match round {
                Round::All => true,
                Round::New => unprobed.contains(name),
                Round::Failing => failing.contains_key(name),
                Round::Beat => beaten.contains(name),
            })
            .collect();
        let probes = targets.into_iter().map(|(name, base, path)| {
            let client = client.clone();
            let registry = registry.clone();
            async move {
                let health = match routes::join(&base, &path, None) {
                    Ok(target) => probe(&client, target, settings.timeout).await,
                    Err(e) => BackendHealth::Unhealthy(format!("bad health URL: {e}")),
                };
                let healthy = health == BackendHealth::Healthy;
                registry.set_health(&name, &base.to_string(), health);
                (name, healthy)
            }
        });
        for (name, healthy) in futures::future::join_all(probes).await {
            match healthy {
                true => failing.remove(&name),
                false => Some(*failing.entry(name).and_modify(|n| *n += 1).or_insert(1)),
            };
        }
        // Backends no longer registered are not retried.
        let registered: Vec<String> = registry.backends().into_iter().map(|(name, _, _)| name).collect();
        failing.retain(|name, _| registered.contains(name));
        retry = failing
            .values()
            .filter_map(|n| retry_after(*n, settings.interval))
            .min()
            .map(|delay| tokio::time::Instant::now() + delay);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_table() {
        let interval = Duration::from_secs(10);
        let ms = Duration::from_millis;
        for (failures, want) in [
            (1, Some(ms(250))),
            (2, Some(ms(500))),
            (3, Some(ms(1000))),
            (6, Some(ms(8000))),
            (7, None),
            (40, None),
        ] {
            assert_eq!(retry_after(failures, interval), want, "{failures} failures");
        }
        assert_eq!(
            retry_after(1, ms(200)),
            None,
            "an interval shorter than the first retry"
        );
    }
}
