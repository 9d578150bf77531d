//! The one `/metrics` exposition: OpenMetrics text of a prometheus-client [`Registry`], with the
//! content type Prometheus negotiates for it. Every faros server (embedded kcp, hub API,
//! reconciler, provider SDK) serves its registry through here, so scrapers see one format.

use prometheus_client::registry::Registry;

/// Content type of the OpenMetrics text format.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The registry as OpenMetrics text.
pub fn encode(registry: &Registry) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail, and prometheus-client fails only when its writer does.
    let _ = prometheus_client::encoding::text::encode(&mut out, registry);
    out
}

/// `GET /metrics` for `registry`.
#[cfg(feature = "axum")]
pub fn response(registry: &Registry) -> axum::response::Response {
    use axum::response::IntoResponse;
    ([(http::header::CONTENT_TYPE, CONTENT_TYPE)], encode(registry)).into_response()
}

#[cfg(test)]
mod tests {
    use prometheus_client::metrics::counter::Counter;

    use super::*;

    #[test]
    fn encodes_openmetrics_text() {
        let mut registry = Registry::default();
        let counter = Counter::<u64>::default();
        registry.register("faros_things", "Things seen.", counter.clone());
        counter.inc();
        let text = encode(&registry);
        assert!(text.contains("# TYPE faros_things counter\n"), "{text}");
        assert!(text.contains("faros_things_total 1\n"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[cfg(feature = "axum")]
    #[test]
    fn responds_with_the_openmetrics_content_type() {
        let resp = response(&Registry::default());
        assert_eq!(resp.status(), http::StatusCode::OK);
        assert_eq!(resp.headers()[http::header::CONTENT_TYPE], CONTENT_TYPE);
    }
}
