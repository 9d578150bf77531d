//! The kube requests the hub reconciler sends to real kcp, from its own counter
//! (`faros_hub_reconciler_kube_requests_total`, by verb: every client it builds counts there), read
//! before and after a Provider burst.

use std::collections::BTreeMap;
use std::time::Duration;

/// The counter's lines start so.
const COUNTER: &str = "faros_hub_reconciler_kube_requests_total{verb=\"";

/// Requests by verb.
pub(super) type ByVerb = BTreeMap<String, u64>;

/// IO-free: the counter by verb from the reconciler's `/metrics` text.
pub(super) fn parse(metrics: &str) -> ByVerb {
    let mut by = ByVerb::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix(COUNTER) else {
            continue;
        };
        let Some((verb, value)) = rest.split_once("\"} ") else {
            continue;
        };
        if let Ok(n) = value.trim().parse::<f64>() {
            *by.entry(verb.to_string()).or_insert(0) += n as u64;
        }
    }
    by
}

/// Reads the reconciler's counter.
pub(super) async fn read(http: &reqwest::Client, metrics_url: &str) -> anyhow::Result<ByVerb> {
    let text = http.get(metrics_url).send().await?.error_for_status()?.text().await?;
    Ok(parse(&text))
}

/// The requests of a burst of `count` Providers: per Provider, less what the reconciler sends
/// while idle (`idle_per_sec` over `elapsed`: lease renewals, watch restarts), and by verb.
pub(super) struct PerProvider {
    pub total: f64,
    pub by_verb: Vec<(String, f64)>,
}

/// IO-free: [`PerProvider`] from the counter before and after.
pub(super) fn per_provider(
    before: &ByVerb,
    after: &ByVerb,
    count: usize,
    idle_per_sec: f64,
    elapsed: Duration,
) -> PerProvider {
    let count = count.max(1) as f64;
    let by_verb: Vec<(String, f64)> = after
        .iter()
        .map(|(verb, n)| {
            let delta = n.saturating_sub(before.get(verb).copied().unwrap_or(0));
            (verb.clone(), delta as f64 / count)
        })
        .filter(|(_, n)| *n > 0.0)
        .collect();
    let sent: f64 = by_verb.iter().map(|(_, n)| n).sum::<f64>() * count;
    let total = (sent - idle_per_sec * elapsed.as_secs_f64()).max(0.0) / count;
    PerProvider { total, by_verb }
}

/// All requests in `by`.
pub(super) fn sum(by: &ByVerb) -> u64 {
    by.values().sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_counter() {
        let text = "# TYPE faros_hub_reconciler_kube_requests counter\n\
            faros_hub_reconciler_kube_requests_total{verb=\"patch\"} 512\n\
            faros_hub_reconciler_kube_requests_total{verb=\"watch\"} 7\n\
            faros_hub_reconciler_reconciles_total{result=\"success\"} 3\n# EOF\n";
        let by = parse(text);
        assert_eq!(by, ByVerb::from([("patch".into(), 512), ("watch".into(), 7)]));
        assert_eq!(sum(&by), 519);
        assert!(parse("").is_empty());
    }

    #[test]
    fn per_provider_table() {
        let by = |pairs: &[(&str, u64)]| pairs.iter().map(|(v, n)| (v.to_string(), *n)).collect::<ByVerb>();
        let cases = [
            (
                "every request of the burst",
                by(&[("patch", 10)]),
                by(&[("patch", 610), ("create", 100)]),
                0.0,
                7.0,
                vec![("create", 1.0), ("patch", 6.0)],
            ),
            (
                "less the idle rate over the burst",
                by(&[("get", 5)]),
                by(&[("get", 5), ("patch", 720)]),
                2.0,
                6.0,
                vec![("patch", 7.2)],
            ),
        ];
        for (case, before, after, idle, want_total, want_by) in cases {
            let got = per_provider(&before, &after, 100, idle, Duration::from_secs(60));
            assert!((got.total - want_total).abs() < 1e-9, "{case}: {}", got.total);
            let want_by: Vec<(String, f64)> = want_by.into_iter().map(|(v, n)| (v.to_string(), n)).collect();
            assert_eq!(got.by_verb, want_by, "{case}");
        }
    }
}
