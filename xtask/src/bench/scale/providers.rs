//! Providers applied the way `bench provider` applies them (Provider objects in
//! `root:faros:system:providers`, `IN_FLIGHT` at a time) while one watch observes them turn
//! `Ready=True`. It creates and waits; it does not measure memory or print.

use std::ops::Range;
use std::time::{Duration, Instant};

use serde_json::json;

use super::tenants::{IN_FLIGHT, bounded};
use crate::bench::faros::Faros;
use crate::bench::watch::{ready, watch_until};

pub(super) const PROVIDERS: &str = "/clusters/root:faros:system:providers/apis/admin.faros.sh/v1alpha1/providers";

/// How long one step may take to become Ready.
const TIMEOUT: Duration = Duration::from_secs(1800);

/// Applies Providers `p<i>` for `step` and waits until all are Ready; returns the wall time.
pub(super) async fn apply_step(f: &Faros, step: Range<usize>) -> anyhow::Result<Duration> {
    let names: Vec<String> = step.map(|i| format!("p{i}")).collect();
    let t0 = Instant::now();
    let applies = names.iter().map(|n| {
        let body =
            json!({"apiVersion": "admin.faros.sh/v1alpha1", "kind": "Provider", "metadata": {"name": n}, "spec": {}});
        async move { f.post(PROVIDERS, &body).await }
    });
    tokio::try_join!(
        bounded(applies, IN_FLIGHT),
        watch_until(f, PROVIDERS, &names, t0, TIMEOUT, ready)
    )?;
    Ok(t0.elapsed())
}
