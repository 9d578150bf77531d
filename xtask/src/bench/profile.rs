//! How big a benchmark run is. `full` is what the targets are stated for (the shipped build:
//! [`MEASURED_PROFILE`]); `smoke`
//! is what `.ci/run` runs on every change: the same code paths with small sizes against the debug
//! build `cargo test` already made, so a suite that stops working (or stops reporting figures) fails
//! CI in seconds. A smoke run's timings mean nothing and are never judged.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The cargo profile full runs measure: the images' (`image`: fat LTO, one codegen unit) with its
/// symbol table, so the figures are the shipped code's and profilers can name its functions.
pub(super) const MEASURED_PROFILE: &str = "image-symbols";

/// Where [`MEASURED_PROFILE`]'s binaries are.
pub(super) fn measured_dir(root: &Path) -> PathBuf {
    root.join("target").join(MEASURED_PROFILE)
}

/// Sizes of the growth curves (`bench scale`); every size list is cumulative, one entry per step.
#[derive(Clone, Debug)]
pub(super) struct ScaleSizes {
    /// Team workspaces after each tenant step.
    pub workspaces: Vec<usize>,
    /// Team workspaces per organization (organizations = workspaces / this).
    pub per_org: usize,
    /// Providers after each provider step.
    pub providers: Vec<usize>,
    /// Timed calls per route and caller at each tenant size.
    pub latency_calls: usize,
    /// Time a route's timed calls may take at one size (slow answers at large sizes end it early).
    pub latency_budget: Duration,
}

#[derive(Clone, Debug)]
pub(super) struct Profile {
    pub smoke: bool,
    /// The `faros` binary under test.
    pub faros: PathBuf,
    /// ConfigMaps created per creates/s measurement.
    pub creates: usize,
    pub watchers: usize,
    pub watch_events: usize,
    pub list_objects: usize,
    pub list_samples: usize,
    pub rss_objects: usize,
    pub redb_commits: usize,
    /// Providers (and bare workspaces) applied at once.
    pub providers: usize,
    /// Rounds of a bare-workspace burst and a Provider burst in the provider suite.
    pub provider_rounds: usize,
    /// wrk's `-d`.
    pub wrk_duration: &'static str,
    pub proxy_rounds: usize,
    /// Rounds of the proxy suite's one-connection latency: a round's p50 moves by ±10 µs with
    /// thread placement, about the difference judged, so more of them than of the throughput rounds.
    pub unloaded_rounds: usize,
    pub startup_runs: usize,
    pub scale: ScaleSizes,
}

impl Profile {
    pub fn full(root: &Path, rss_objects: usize) -> Self {
        Self {
            smoke: false,
            faros: measured_dir(root).join("faros"),
            creates: 4000,
            watchers: 100,
            watch_events: 200,
            list_objects: 10_000,
            list_samples: 20,
            rss_objects,
            redb_commits: 2000,
            providers: 100,
            provider_rounds: 5,
            wrk_duration: "5s",
            proxy_rounds: 3,
            unloaded_rounds: 7,
            startup_runs: 5,
            scale: ScaleSizes {
                workspaces: vec![1000, 5000, 10_000],
                per_org: 10,
                providers: vec![100, 500, 1000],
                latency_calls: 50,
                latency_budget: Duration::from_secs(45),
            },
        }
    }

    pub fn smoke(root: &Path) -> Self {
        Self {
            smoke: true,
            faros: root.join("target/debug/faros"),
            creates: 100,
            watchers: 5,
            watch_events: 10,
            list_objects: 200,
            list_samples: 2,
            rss_objects: 200,
            redb_commits: 50,
            providers: 3,
            provider_rounds: 1,
            wrk_duration: "1s",
            proxy_rounds: 1,
            unloaded_rounds: 1,
            startup_runs: 1,
            scale: ScaleSizes {
                workspaces: vec![8, 20],
                per_org: 4,
                providers: vec![2, 5],
                latency_calls: 5,
                latency_budget: Duration::from_secs(5),
            },
        }
    }

    /// How the build is named in the output.
    pub fn build(&self) -> &'static str {
        if self.smoke {
            "debug build, smoke sizes: timings not meaningful"
        } else if self.faros.ends_with(Path::new(MEASURED_PROFILE).join("faros")) {
            "image-profile builds (fat LTO, as shipped)"
        } else {
            "the faros build given with --faros"
        }
    }
}

/// A suite's result line must carry figures: a smoke run that printed none has rotted.
pub(super) fn check_summary(suite: &str, summary: &str) -> anyhow::Result<()> {
    let has_number = summary
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .any(|t| t.parse::<f64>().is_ok_and(f64::is_finite));
    if summary.trim().is_empty() || !has_number {
        anyhow::bail!("the {suite} benchmark reported no figures (summary: {summary:?})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_need_figures() {
        assert!(check_summary("kcp", "summary: creates/s 1.19x redb limit").is_ok());
        for bad in ["", "summary:", "summary: NaN", "summary: no numbers here"] {
            assert!(check_summary("kcp", bad).is_err(), "{bad:?}");
        }
    }
}
