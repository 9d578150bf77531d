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
    /// Set from the store when scraped ([`Metrics::response`]).
    storage_objects: Gauge,
    storage_image_bytes: Gauge,
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
        // kube-apiserver's `apiserver_storage_objects`, for all resources together; and the bytes of
        // the memory image that serves gets and lists (keys and stored values), which is most of
        // the server's memory once it holds many objects.
        let storage_objects = Gauge::default();
        registry.register("storage_objects", "Stored objects", storage_objects.clone());
        let storage_image_bytes = Gauge::default();
        registry.register(
            "storage_image_bytes",
            "Bytes of the stored objects held in memory (keys and values)",
            storage_image_bytes.clone(),
        );
        Self {
            registry: Mutex::new(registry),
            requests,
            request_duration,
            watchers,
            storage_objects,
            storage_image_bytes,
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

    /// `GET /metrics`: the OpenMetrics text exposition, with the store's size as of now.
    pub fn response(&self, store: crate::store::ImageSize) -> axum::response::Response {
        self.storage_objects
            .set(i64::try_from(store.objects).unwrap_or(i64::MAX));
        self.storage_image_bytes
            .set(i64::try_from(store.bytes).unwrap_or(i64::MAX));
        let registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        faros_core::metrics::response(&registry)
    }
}
