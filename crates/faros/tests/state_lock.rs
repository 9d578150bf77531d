//! One `faros dev` per state directory: a second one on a busy directory stops at once, saying so,
//! and changes none of the running one's files; the running one's announcements (`hub.url`,
//! `kcp.url`) go when it stops, so nothing points at a stack that is gone.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests fail loudly by design.

mod devproc;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// The files a second run used to remove or rewrite, with their contents.
fn announced_and_tokens(state: &Path) -> BTreeMap<String, Vec<u8>> {
    [
        "hub.url",
        "kcp.url",
        "tokens.csv",
        "component-tokens.csv",
        "dev-user.token",
    ]
    .into_iter()
    .filter_map(|name| Some((name.to_string(), std::fs::read(state.join(name)).ok()?)))
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_faros_dev_on_a_busy_state_directory_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let mut first = devproc::launch(&state).start().await.unwrap();
    let before = announced_and_tokens(&state);
    for name in ["hub.url", "kcp.url", "tokens.csv", "component-tokens.csv"] {
        assert!(before.contains_key(name), "the first run wrote no {name}");
    }

    let second = tokio::task::spawn_blocking({
        let state = state.clone();
        move || {
            Command::new(env!("CARGO_BIN_EXE_faros"))
                .args([
                    "dev",
                    "--kcp-port",
                    "0",
                    "--hub-port",
                    "0",
                    "--quickstart-port",
                    "0",
                    "--state-dir",
                ])
                .arg(&state)
                .env("FAROS_LOG_LEVEL", "warn")
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "the second faros dev started: {stderr}");
    assert!(
        stderr.contains("another faros dev is running on the state directory"),
        "{stderr}"
    );
    assert_eq!(
        announced_and_tokens(&state),
        before,
        "the second run changed the first one's files"
    );
    // The first one still serves.
    let hub = std::fs::read_to_string(state.join("hub.url")).unwrap();
    let ready = first
        .https()
        .unwrap()
        .get(format!("{hub}/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);

    let status = first.terminate().unwrap();
    assert!(
        status.success(),
        "faros dev did not stop cleanly: {status}\n{}",
        first.log_tail()
    );
    for gone in ["hub.url", "kcp.url"] {
        assert!(!state.join(gone).exists(), "{gone} outlived the run it announced");
    }
}
