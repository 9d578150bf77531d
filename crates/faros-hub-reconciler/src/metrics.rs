//! Prometheus metrics of the reconciler, served on `/metrics`.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// One label pair; fixed-size arrays keep label sets allocation-free.
type Label = [(&'static str, &'static str); 1];

/// The reconciler's metrics. Cheap to share behind an `Arc`; every metric is internally atomic.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    reconciles: Family<Label, Counter>,
    errors: Family<Label, Counter>,
    duration: Histogram,
    queue_depth: Gauge,
    leader: Gauge,
    bootstrapped: Gauge,
    mirror_writes: Family<Label, Counter>,
    mirror_errors: Family<Label, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("faros_hub_reconciler");
        let reconciles = Family::<Label, Counter>::default();
        let errors = Family::<Label, Counter>::default();
        // 5 ms .. ~20 s: a steady-state reconcile is a handful of requests, a first one waits for kcp.
        let duration = Histogram::new(exponential_buckets(0.005, 2.0, 13));
        let queue_depth = Gauge::default();
        let leader = Gauge::default();
        let bootstrapped = Gauge::default();
        let mirror_writes = Family::<Label, Counter>::default();
        let mirror_errors = Family::<Label, Counter>::default();
        registry.register(
            "reconciles",
            "Provider reconciles by result (success, error)",
            reconciles.clone(),
        );
        registry.register(
            "reconcile_errors",
            "Failed Provider reconciles by reason",
            errors.clone(),
        );
        registry.register_with_unit(
            "reconcile_duration",
            "Duration of one Provider reconcile",
            prometheus_client::registry::Unit::Seconds,
            duration.clone(),
        );
        registry.register("queue_depth", "Providers waiting to be reconciled", queue_depth.clone());
        registry.register("leader", "1 while this replica holds the leader Lease", leader.clone());
        registry.register(
            "bootstrapped",
            "1 once the workspace tree bootstrap has completed",
            bootstrapped.clone(),
        );
        registry.register(
            "mirror_writes",
            "Writes of mirrored kubeconfig Secrets in the hosting cluster by action (apply, delete)",
            mirror_writes.clone(),
        );
        registry.register(
            "mirror_errors",
            "Failed kubeconfig mirror steps by operation (sync, remove)",
            mirror_errors.clone(),
        );
        Self {
            registry,
            reconciles,
            errors,
            duration,
            queue_depth,
            leader,
            bootstrapped,
            mirror_writes,
            mirror_errors,
        }
    }

    /// Serves `requests` (every request the reconciler's clients send to kcp, by verb) as
    /// `faros_hub_reconciler_kube_requests_total`.
    pub fn count_kube_requests(&mut self, requests: &faros_core::client::KubeRequests) {
        self.registry.register(
            "kube_requests",
            "Requests sent to kcp by verb (get includes lists)",
            requests.family(),
        );
    }

    /// Records one reconcile; `error_reason` is `None` on success.
    pub fn reconciled(&self, seconds: f64, error_reason: Option<&'static str>) {
        self.duration.observe(seconds);
        let result = if error_reason.is_some() { "error" } else { "success" };
        self.reconciles.get_or_create(&[("result", result)]).inc();
        if let Some(reason) = error_reason {
            self.errors.get_or_create(&[("reason", reason)]).inc();
        }
    }

    pub fn set_queue_depth(&self, depth: usize) {
        self.queue_depth.set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    pub fn set_bootstrapped(&self, done: bool) {
        self.bootstrapped.set(i64::from(done));
    }

    /// One write of a mirrored Secret: `action` is `apply` or `delete`.
    pub fn mirror_written(&self, action: &'static str) {
        self.mirror_writes.get_or_create(&[("action", action)]).inc();
    }

    /// One failed mirror step: `op` is `sync` or `remove`.
    pub fn mirror_failed(&self, op: &'static str) {
        self.mirror_errors.get_or_create(&[("op", op)]).inc();
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        faros_core::metrics::encode(&self.registry)
    }

    /// `GET /metrics`.
    pub fn response(&self) -> axum::response::Response {
        faros_core::metrics::response(&self.registry)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn exposition_has_every_metric_with_values() {
        let mut m = Metrics::new();
        let requests = faros_core::client::KubeRequests::default();
        m.count_kube_requests(&requests);
        requests.record(&http::Request::get("/api/v1/secrets?watch=true").body(()).unwrap());
        m.reconciled(0.01, None);
        m.reconciled(0.02, Some("WorkspaceError"));
        m.reconciled(0.03, Some("WorkspaceError"));
        m.set_queue_depth(7);
        m.set_leader(true);
        m.set_bootstrapped(true);
        m.mirror_written("apply");
        m.mirror_failed("sync");
        let text = m.encode();
        for line in [
            "faros_hub_reconciler_reconciles_total{result=\"success\"} 1",
            "faros_hub_reconciler_reconciles_total{result=\"error\"} 2",
            "faros_hub_reconciler_reconcile_errors_total{reason=\"WorkspaceError\"} 2",
            "faros_hub_reconciler_reconcile_duration_seconds_count 3",
            "faros_hub_reconciler_queue_depth 7",
            "faros_hub_reconciler_leader 1",
            "faros_hub_reconciler_bootstrapped 1",
            "faros_hub_reconciler_mirror_writes_total{action=\"apply\"} 1",
            "faros_hub_reconciler_mirror_errors_total{op=\"sync\"} 1",
            "faros_hub_reconciler_kube_requests_total{verb=\"watch\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
    }
}
