//! Prometheus metrics of the hub API, served on `/metrics`.

use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

type RequestLabels = ([(&'static str, &'static str); 1], [(&'static str, u16); 1]);
type RouteLabel = [(&'static str, &'static str); 1];

/// The proxy routes' metric labels.
const PROXY_ROUTES: [&str; 3] = ["ui_proxy", "backend_proxy", "kcp"];

/// One proxy route's latency histogram and its count of 200 answers.
#[derive(Debug)]
struct ProxySeries {
    route: &'static str,
    latency: Histogram,
    ok: Counter,
}

/// The hub API's metrics; every metric is internally atomic.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    proxy_latency: Family<RouteLabel, Histogram>,
    /// The proxies' series, held rather than looked up: a family lookup hashes its labels with
    /// SipHash under a lock every thread shares, on every proxied request.
    proxies: [ProxySeries; 3],
    heartbeats: Family<RouteLabel, Counter>,
    ready_providers: Gauge,
    status_writes: Family<RouteLabel, Counter>,
    /// MCP federation.
    pub mcp: McpMetrics,
    /// Membership decisions and the index behind them.
    pub membership: MembershipMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("faros_hub_api");
        let requests = Family::<RequestLabels, Counter>::default();
        // 100 µs .. ~3 s: time to upstream response headers.
        let proxy_latency = Family::<RouteLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.0001, 2.5, 12))
        });
        let heartbeats = Family::<RouteLabel, Counter>::default();
        let ready_providers = Gauge::default();
        let status_writes = Family::<RouteLabel, Counter>::default();
        registry.register("requests", "HTTP requests by route and status code", requests.clone());
        registry.register_with_unit(
            "proxy_latency",
            "Time until the upstream answered with headers, by proxy route",
            prometheus_client::registry::Unit::Seconds,
            proxy_latency.clone(),
        );
        registry.register("heartbeats", "Provider heartbeats by result", heartbeats.clone());
        registry.register("ready_providers", "Providers currently Ready", ready_providers.clone());
        registry.register(
            "status_writes",
            "CatalogEntry status writes by result",
            status_writes.clone(),
        );
        let mcp = McpMetrics::register(&mut registry);
        let membership = MembershipMetrics::register(&mut registry);
        let proxies = PROXY_ROUTES.map(|route| ProxySeries {
            route,
            latency: proxy_latency.get_or_create(&[("route", route)]).clone(),
            ok: requests.get_or_create(&([("route", route)], [("code", 200)])).clone(),
        });
        Self {
            registry,
            proxies,
            mcp,
            membership,
            requests,
            proxy_latency,
            heartbeats,
            ready_providers,
            status_writes,
        }
    }

    pub fn request(&self, route: &'static str, code: u16) {
        if code == 200
            && let Some(p) = self.proxy(route)
        {
            p.ok.inc();
            return;
        }
        self.requests
            .get_or_create(&([("route", route)], [("code", code)]))
            .inc();
    }

    fn proxy(&self, route: &str) -> Option<&ProxySeries> {
        self.proxies.iter().find(|p| p.route == route)
    }

    pub fn proxied(&self, route: &'static str, took: Duration) {
        if let Some(p) = self.proxy(route) {
            p.latency.observe(took.as_secs_f64());
            return;
        }
        self.proxy_latency
            .get_or_create(&[("route", route)])
            .observe(took.as_secs_f64());
    }

    pub fn heartbeat(&self, result: &'static str) {
        self.heartbeats.get_or_create(&[("result", result)]).inc();
    }

    pub fn set_ready_providers(&self, n: usize) {
        self.ready_providers.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    pub fn status_write(&self, result: &'static str) {
        self.status_writes.get_or_create(&[("result", result)]).inc();
    }

    /// OpenMetrics text.
    pub fn encode(&self) -> String {
        faros_core::metrics::encode(&self.registry)
    }

    /// `GET /metrics`.
    pub fn response(&self) -> axum::response::Response {
        faros_core::metrics::response(&self.registry)
    }
}

/// Metrics of membership decisions ([`crate::tenancy::index`], [`crate::tenancy::access`]).
#[derive(Clone, Debug, Default)]
pub struct MembershipMetrics {
    decisions: Family<[(&'static str, &'static str); 1], Counter>,
    bindings: Gauge,
}

impl MembershipMetrics {
    fn register(registry: &mut Registry) -> Self {
        let m = Self::default();
        registry.register(
            "membership_decisions",
            "Membership decisions by source: the watch-fed index, or a kcp SubjectAccessReview",
            m.decisions.clone(),
        );
        registry.register(
            "membership_bindings",
            "Membership ClusterRoleBindings held by the index",
            m.bindings.clone(),
        );
        m
    }

    /// One decision answered by `source` (`index` or `review`).
    pub fn decided(&self, source: &'static str) {
        self.decided_n(source, 1);
    }

    /// `n` decisions at once (a list decided in one pass).
    pub fn decided_n(&self, source: &'static str, n: u64) {
        self.decisions.get_or_create(&[("source", source)]).inc_by(n);
    }

    pub fn set_bindings(&self, n: usize) {
        self.bindings.set(i64::try_from(n).unwrap_or(i64::MAX));
    }
}

type ProviderLabel = [(&'static str, String); 1];
type ProviderOutcomeLabels = ([(&'static str, String); 1], [(&'static str, &'static str); 1]);

/// Metrics of the MCP federation. Provider names label them: their set is bounded by the catalog.
#[derive(Clone, Debug)]
pub struct McpMetrics {
    tools: Family<ProviderLabel, Gauge>,
    calls: Family<ProviderOutcomeLabels, Counter>,
    discovery: Family<ProviderOutcomeLabels, Histogram>,
}

impl McpMetrics {
    fn register(registry: &mut Registry) -> Self {
        let m = Self {
            tools: Family::default(),
            calls: Family::default(),
            // 1 ms .. ~60 s: a discovery is an MCP handshake plus tools/list.
            discovery: Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.001, 2.5, 13))),
        };
        registry.register(
            "mcp_tools",
            "Tools federated per provider (last discovery)",
            m.tools.clone(),
        );
        registry.register(
            "mcp_calls",
            "Federated tool calls by provider and outcome",
            m.calls.clone(),
        );
        registry.register_with_unit(
            "mcp_discovery",
            "Time to discover a provider's tools, by provider and outcome",
            prometheus_client::registry::Unit::Seconds,
            m.discovery.clone(),
        );
        m
    }

    pub fn set_tools(&self, provider: &str, n: usize) {
        self.tools
            .get_or_create(&[("provider", provider.to_string())])
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// `outcome`: `ok`, `tool_error`, `provider_error`, `timeout`.
    pub fn call(&self, provider: &str, outcome: &'static str) {
        self.calls
            .get_or_create(&([("provider", provider.to_string())], [("outcome", outcome)]))
            .inc();
    }

    /// `outcome`: `ok`, `no_endpoint`, `error`, `timeout`.
    pub fn discovered(&self, provider: &str, outcome: &'static str, took: Duration) {
        self.discovery
            .get_or_create(&([("provider", provider.to_string())], [("outcome", outcome)]))
            .observe(took.as_secs_f64());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn renders_what_was_recorded() {
        let m = Metrics::new();
        m.request("ui_proxy", 503);
        m.request("ui_proxy", 503);
        m.heartbeat("ok");
        m.set_ready_providers(2);
        m.proxied("backend_proxy", Duration::from_millis(1));
        // The proxies' held series are the families' own: they render like any other.
        m.request("backend_proxy", 200);
        m.request("backend_proxy", 200);
        m.request("backend_proxy", 502);
        m.request("tenancy", 200);
        let text = m.encode();
        for line in [
            "faros_hub_api_requests_total{route=\"backend_proxy\",code=\"200\"} 2",
            "faros_hub_api_requests_total{route=\"backend_proxy\",code=\"502\"} 1",
            "faros_hub_api_requests_total{route=\"tenancy\",code=\"200\"} 1",
            "faros_hub_api_proxy_latency_seconds_count{route=\"ui_proxy\"} 0",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(
            text.contains("faros_hub_api_requests_total{route=\"ui_proxy\",code=\"503\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("faros_hub_api_heartbeats_total{result=\"ok\"} 1"),
            "{text}"
        );
        assert!(text.contains("faros_hub_api_ready_providers 2"), "{text}");
        assert!(
            text.contains("faros_hub_api_proxy_latency_seconds_count{route=\"backend_proxy\"} 1"),
            "{text}"
        );
    }

    #[test]
    fn renders_mcp_metrics() {
        let m = Metrics::new();
        m.mcp.set_tools("quickstart", 2);
        m.mcp.call("quickstart", "ok");
        m.mcp.discovered("quickstart", "ok", Duration::from_millis(3));
        let text = m.encode();
        for want in [
            "faros_hub_api_mcp_tools{provider=\"quickstart\"} 2",
            "faros_hub_api_mcp_calls_total{provider=\"quickstart\",outcome=\"ok\"} 1",
            "faros_hub_api_mcp_discovery_seconds_count{provider=\"quickstart\",outcome=\"ok\"} 1",
        ] {
            assert!(text.contains(want), "{want} in {text}");
        }
    }
}
