//! Polling for conditions nothing can be watched for: an HTTP answer, a file, a process, a
//! reloaded token file. Kubernetes objects have a watch: wait on them with
//! `faros_core::wait::wait_for` instead.

use std::future::Future;
use std::time::Duration;

/// The first interval between checks; it doubles up to [`MAX_INTERVAL`].
const FIRST_INTERVAL: Duration = Duration::from_millis(20);
/// Conditions observed over HTTP or through a child process change in tens of milliseconds at
/// best; checking more often than this only loads the machine.
const MAX_INTERVAL: Duration = Duration::from_millis(500);

/// A condition did not hold before its deadline.
#[derive(thiserror::Error)]
#[error("timed out after {timeout:?} waiting for {what}{}", last_error.as_ref().map(|e| format!("; last error: {e}")).unwrap_or_default())]
pub struct TimedOut {
    pub what: String,
    pub timeout: Duration,
    /// The last error a check returned, with its causes.
    pub last_error: Option<String>,
}

/// Tests `unwrap` this: print the message, not a struct dump.
impl std::fmt::Debug for TimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// Runs `check` until it yields `Some`, failing after `timeout` with what was awaited and the last
/// error `check` returned (an error is a failed check, not the end of the wait).
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<T, TimedOut>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<T>>>,
{
    let start = tokio::time::Instant::now();
    let mut interval = FIRST_INTERVAL;
    let mut last_error = None;
    loop {
        match check().await {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e) => last_error = Some(format!("{e:#}")),
        }
        if start.elapsed() > timeout {
            return Err(TimedOut {
                what: what.to_string(),
                timeout,
                last_error,
            });
        }
        tokio::time::sleep(interval).await;
        interval = (interval * 2).min(MAX_INTERVAL);
    }
}

/// [`eventually`] for checks that cannot fail, panicking on timeout: the test fails there, naming
/// what it waited for.
pub async fn eventually_some<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    match eventually(what, timeout, || {
        let next = check();
        async move { Ok(next.await) }
    })
    .await
    {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
