//! The kube requests a component sends, counted by verb where every client is built
//! ([`super::ClientFactory`]), so a component's `/metrics` says how many requests its work costs the
//! API server (`bench kcp-vs-real` divides them by the Providers provisioned).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

/// One label pair; fixed-size arrays keep label sets allocation-free.
type Label = [(&'static str, &'static str); 1];

/// Requests sent by every client of one factory, by verb. Clones share the counts.
#[derive(Clone, Debug, Default)]
pub struct KubeRequests {
    by_verb: Family<Label, Counter>,
}

impl KubeRequests {
    /// Counts one request.
    pub fn record<B>(&self, request: &http::Request<B>) {
        let verb = verb(request.method(), request.uri().query());
        self.by_verb.get_or_create(&[("verb", verb)]).inc();
    }

    /// The counter family, for a component's registry.
    pub fn family(&self) -> Family<Label, Counter> {
        self.by_verb.clone()
    }
}

/// IO-free: the verb of a request from its method and query. A list and a get are both `get`
/// (telling them apart would mean parsing every path); a watch is a GET with `watch=true` (or `1`).
pub fn verb(method: &http::Method, query: Option<&str>) -> &'static str {
    match *method {
        http::Method::GET => {
            let watch = query
                .unwrap_or_default()
                .split('&')
                .any(|pair| pair == "watch=true" || pair == "watch=1");
            if watch { "watch" } else { "get" }
        }
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ => "other",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn verb_table() {
        for (method, query, want) in [
            (http::Method::GET, None, "get"),
            (http::Method::GET, Some("limit=500"), "get"),
            (
                http::Method::GET,
                Some("fieldSelector=metadata.name%3Dx&watch=true&resourceVersion=5"),
                "watch",
            ),
            (http::Method::GET, Some("watch=1"), "watch"),
            (http::Method::GET, Some("watch=false"), "get"),
            (http::Method::GET, Some("allowWatchBookmarks=true"), "get"),
            (http::Method::POST, None, "create"),
            (http::Method::PUT, None, "update"),
            (http::Method::PATCH, Some("fieldManager=x&force=true"), "patch"),
            (http::Method::DELETE, None, "delete"),
            (http::Method::HEAD, None, "other"),
        ] {
            assert_eq!(verb(&method, query), want, "{method} {query:?}");
        }
    }

    #[test]
    fn clones_share_counts() {
        let requests = KubeRequests::default();
        let clone = requests.clone();
        clone.record(&http::Request::get("/api/v1/namespaces?watch=true").body(()).unwrap());
        requests.record(&http::Request::patch("/api/v1/namespaces/x").body(()).unwrap());
        requests.record(&http::Request::patch("/api/v1/namespaces/y").body(()).unwrap());
        let family = requests.family();
        assert_eq!(family.get_or_create(&[("verb", "watch")]).get(), 1);
        assert_eq!(family.get_or_create(&[("verb", "patch")]).get(), 2);
    }
}
