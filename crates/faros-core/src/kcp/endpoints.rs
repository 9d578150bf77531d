//! Following an APIExportEndpointSlice, IO-free: which virtual workspace URLs it publishes, and
//! which per-URL watches to start and stop when that set changes.
//!
//! A sharded kcp publishes one URL per shard that hosts a workspace bound to the export; a tenant
//! on a shard is seen only through that shard's URL. So every consumer watches every URL, and, as
//! kcp's multicluster-provider does, starts a watch for a URL that appears and stops the watch of a
//! URL that goes, leaving the others running (their caches and queues stay warm).

use std::collections::BTreeSet;

use super::apis::v1alpha1::APIExportEndpointSlice;

/// The slice's URLs: non-empty, each once, in status order (empty while kcp has published none).
pub fn urls(slice: Option<&APIExportEndpointSlice>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    slice
        .map(APIExportEndpointSlice::urls)
        .unwrap_or_default()
        .into_iter()
        .map(|u| u.trim_end_matches('/'))
        .filter(|u| !u.is_empty() && seen.insert(*u))
        .map(str::to_string)
        .collect()
}

/// What to do with the watches when the slice goes from `current` to `next` URLs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UrlChanges {
    /// URLs of `next` not watched yet, in `next`'s order.
    pub start: Vec<String>,
    /// Watched URLs `next` no longer lists, in `current`'s order.
    pub stop: Vec<String>,
}

impl UrlChanges {
    /// Start first, then stop: a URL that replaces another (a shard moved) is listed before the old
    /// one's objects are forgotten.
    pub fn between<'a>(current: impl IntoIterator<Item = &'a str>, next: &[String]) -> Self {
        let current: Vec<&str> = current.into_iter().collect();
        Self {
            start: next
                .iter()
                .filter(|u| !current.contains(&u.as_str()))
                .cloned()
                .collect(),
            stop: current
                .iter()
                .filter(|u| !next.iter().any(|n| n == *u))
                .map(|u| (*u).to_string())
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty() && self.stop.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_string()).collect()
    }

    /// (current, next, start, stop)
    type Case<'a> = (&'a [&'a str], &'a [&'a str], &'a [&'a str], &'a [&'a str]);

    #[test]
    fn changes_between_url_sets() {
        let cases: &[Case<'_>] = &[
            (&[], &[], &[], &[]),
            (&[], &["a"], &["a"], &[]),
            (&["a"], &["a"], &[], &[]),
            // a second shard gains a tenant
            (&["a"], &["a", "b"], &["b"], &[]),
            // the second shard's last tenant left
            (&["a", "b"], &["a"], &[], &["b"]),
            // order changes are not changes
            (&["a", "b"], &["b", "a"], &[], &[]),
            // a shard moved to another address
            (&["a", "b"], &["a", "c"], &["c"], &["b"]),
            (&["a", "b"], &["c"], &["c"], &["a", "b"]),
            // every tenant unbound
            (&["a", "b"], &[], &[], &["a", "b"]),
        ];
        for (current, next, start, stop) in cases {
            let got = UrlChanges::between(current.iter().copied(), &strings(next));
            assert_eq!(
                got,
                UrlChanges {
                    start: strings(start),
                    stop: strings(stop)
                },
                "{current:?} -> {next:?}"
            );
            assert_eq!(got.is_empty(), start.is_empty() && stop.is_empty());
        }
    }

    #[test]
    fn urls_of_a_slice() {
        let slice = |endpoints: serde_json::Value| -> APIExportEndpointSlice {
            serde_json::from_value(
                json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExportEndpointSlice",
                "metadata": {"name": "s"}, "spec": {"export": {"name": "e"}}, "status": {"endpoints": endpoints}}),
            )
            .unwrap()
        };
        assert!(urls(None).is_empty());
        assert_eq!(
            urls(Some(&slice(
                json!([{"url": "https://s1/vw"}, {"url": ""}, {"url": "https://s2/vw/"}, {"url": "https://s1/vw"}])
            ))),
            strings(&["https://s1/vw", "https://s2/vw"])
        );
        assert!(urls(Some(&slice(json!([])))).is_empty());
    }
}
