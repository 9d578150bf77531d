use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::*;

#[tokio::test(start_paused = true)]
async fn returns_the_first_value_and_retries_errors() {
    let calls = AtomicU32::new(0);
    let got = eventually("the third call", Duration::from_secs(10), || async {
        match calls.fetch_add(1, Ordering::Relaxed) {
            0 => anyhow::bail!("not yet"),
            1 => Ok(None),
            n => Ok(Some(n)),
        }
    })
    .await
    .unwrap();
    assert_eq!(got, 2);
}

#[tokio::test(start_paused = true)]
async fn times_out_naming_the_condition_and_the_last_error() {
    let err = eventually::<(), _, _>("the moon", Duration::from_secs(1), || async {
        Err(anyhow::anyhow!("cause").context("no moon"))
    })
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "timed out after 1s waiting for the moon; last error: no moon: cause"
    );
    let err = eventually::<(), _, _>("the sun", Duration::from_secs(1), || async { Ok(None) })
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "timed out after 1s waiting for the sun");
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "timed out after 1s waiting for nothing")]
async fn eventually_some_panics_on_timeout() {
    eventually_some::<(), _, _>("nothing", Duration::from_secs(1), || async { None }).await;
}
