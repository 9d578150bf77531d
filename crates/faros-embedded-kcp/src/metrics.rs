//! Prometheus metrics of the API server, served on `/metrics` (OpenMetrics text).

use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub method: String,
    pub code: u16,
}

/// The server's metrics and their registry.
pub struct Metrics {
    registry: Mutex<Registry>,
    pub requests: Family<RequestLabels, Counter>,
    pub request_duration: Histogram,
    pub watchers: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("faros_kcp");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "apiserver_requests",
            "API requests by method and response code",
            requests.clone(),
        );
        let request_duration = Histogram::new(exponential_buckets(0.0005, 2.0, 16));
        registry.register(
            "apiserver_request_duration_seconds",
            "Time to first response byte",
            request_duration.clone(),
        );
        let watchers = Gauge::default();
        registry.register("apiserver_watchers", "Open watch streams", watchers.clone());
        Self {
            registry: Mutex::new(registry),
            requests,
            request_duration,
            watchers,
        }
    }
}

impl Metrics {
    pub fn observe_request(&self, method: &str, code: u16, elapsed: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                method: method.to_string(),
                code,
            })
            .inc();
        self.request_duration.observe(elapsed.as_secs_f64());
    }

    /// `GET /metrics`: the OpenMetrics text exposition.
    pub fn response(&self) -> axum::response::Response {
        let registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        faros_core::metrics::response(&registry)
    }
}
