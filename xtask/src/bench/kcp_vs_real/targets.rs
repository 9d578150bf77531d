//! The platform's targets on real kcp, each a ratio (or a count) against real kcp's own figures
//! measured on the same kcp in the same run, and whether it is met.

use std::time::Duration;

use super::super::stats::ms;

/// Real kcp's own figures and the platform's, from one run on one kcp.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct OnRealKcp {
    /// kcp's start to `/readyz`.
    pub kcp_ready: Duration,
    /// One bare `provider` workspace, create to Ready.
    pub one_workspace: Duration,
    /// N bare `provider` workspaces created at once, to Ready.
    pub bare_p95: Duration,
    /// N Providers applied at once, to Ready.
    pub providers_p95: Duration,
    /// The platform's start to quickstart Ready.
    pub to_quickstart_ready: Duration,
    /// The reconciler's kube requests per Provider, idle traffic deducted.
    pub requests_per_provider: f64,
}

/// One target: its figure and the most it may be.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Target {
    pub name: &'static str,
    pub value: f64,
    pub limit: f64,
}

impl Target {
    pub fn met(&self) -> bool {
        self.value.is_finite() && self.value <= self.limit
    }

    /// The line the bench prints.
    pub fn line(&self) -> String {
        format!(
            "target: {:<66} {:>6.2} (<= {}) {}",
            self.name,
            self.value,
            self.limit,
            if self.met() { "met" } else { "NOT MET" }
        )
    }
}

/// `a / b`, `NaN` when `b` is zero.
fn ratio(a: Duration, b: Duration) -> f64 {
    if b.is_zero() { f64::NAN } else { ms(a) / ms(b) }
}

/// IO-free: the targets of issue 57 from one run's figures.
pub(super) fn targets(f: &OnRealKcp) -> Vec<Target> {
    vec![
        Target {
            name: "Providers to Ready p95 / bare provider workspaces to Ready p95",
            value: ratio(f.providers_p95, f.bare_p95),
            limit: 1.5,
        },
        Target {
            name: "kube requests per Provider (reconciler)",
            value: f.requests_per_provider,
            limit: 12.0,
        },
        Target {
            name: "start to quickstart Ready / (kcp's /readyz + one workspace Ready)",
            value: ratio(f.to_quickstart_ready, f.kcp_ready + f.one_workspace),
            limit: 1.5,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_table() {
        let s = Duration::from_secs;
        let figures = OnRealKcp {
            kcp_ready: s(10),
            one_workspace: s(2),
            bare_p95: s(20),
            providers_p95: s(30),
            to_quickstart_ready: s(24),
            requests_per_provider: 12.5,
        };
        let got: Vec<(f64, bool)> = targets(&figures).iter().map(|t| (t.value, t.met())).collect();
        assert_eq!(got, [(1.5, true), (12.5, false), (2.0, false)]);
        let unmeasured = targets(&OnRealKcp::default());
        assert!(unmeasured[0].value.is_nan() && !unmeasured[0].met());
        assert!(targets(&figures)[1].line().ends_with("NOT MET"));
        assert!(targets(&figures)[0].line().ends_with(" met"));
    }
}
