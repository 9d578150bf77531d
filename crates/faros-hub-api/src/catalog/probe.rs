//! Backend health probes: `GET backend.url + healthPath` on an interval with a timeout. A newly
//! registered (or re-pointed) backend is probed at once instead of waiting for the next tick.

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

/// Runs until `cancel`.
pub async fn run(registry: Arc<Registry>, client: UpstreamPool, settings: ProbeSettings, cancel: CancellationToken) {
    let mut changes = registry.subscribe_changes();
    let mut tick = tokio::time::interval(settings.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let only_new = tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tick.tick() => false,
            r = changes.changed() => {
                if r.is_err() { return }
                true
            }
        };
        let unprobed = if only_new { registry.unprobed() } else { Vec::new() };
        let targets: Vec<_> = registry
            .backends()
            .into_iter()
            .filter(|(name, _, _)| !only_new || unprobed.contains(name))
            .collect();
        let probes = targets.into_iter().map(|(name, base, path)| {
            let client = client.clone();
            let registry = registry.clone();
            async move {
                let health = match routes::join(&base, &path, None) {
                    Ok(target) => probe(&client, target, settings.timeout).await,
                    Err(e) => BackendHealth::Unhealthy(format!("bad health URL: {e}")),
                };
                registry.set_health(&name, &base.to_string(), health);
            }
        });
        futures::future::join_all(probes).await;
    }
}
