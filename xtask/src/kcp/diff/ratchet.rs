//! The ratchet, run by `cargo test`: every script against a fresh in-process embedded kcp, compared
//! with real kcp's recorded answers. A step `docs/kcp-diff.md` calls `same` must stay the same, and
//! no step the report does not already list as LOOSER may accept what kcp refused, so fidelity is checked where real kcp is not available and
//! can only improve (regenerate the report with `cargo xtask kcp diff --recorded --report` after
//! closing a difference).

use std::time::Duration;

use faros_embedded_kcp::testing::TempServer;

use super::exec::{Target, run};
use super::report::{Row, committed, rows};
use super::script::load_dir;
use super::servers::{token_file, tokens};
use super::{RECORDINGS, REPORT, SCRIPTS, recorded};

async fn script_rows(script: &super::script::Script) -> Vec<Row> {
    let root = crate::project_root();
    let tokens = tokens().expect("random tokens");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("tokens.csv");
    std::fs::write(&file, token_file(&tokens)).expect("writing the token file");
    // As `faros kcp` runs: workspaces move through their phases as fast as the controllers do.
    let server = TempServer::start_with(|c| {
        c.token_file = Some(file);
        c.phase_delay = Duration::ZERO;
    })
    .await;
    let target = Target::new(server.server.url(), tokens).expect("an HTTP client");
    let embedded = run(&target, script, "embedded").await;
    let (_, kcp) = recorded::read(&root.join(RECORDINGS), script).expect("the script's recording");
    server.server.shutdown().await;
    rows(script, &kcp, &embedded)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_kcp_keeps_every_step_the_report_calls_same() {
    let root = crate::project_root();
    let scripts = load_dir(&root.join(SCRIPTS), None).expect("the scripts parse");
    let report = std::fs::read_to_string(root.join(REPORT)).expect("the committed report");
    let committed = committed(&report);
    let mut failures = Vec::new();
    for script in &scripts {
        for row in script_rows(script).await {
            let key = (row.script.clone(), row.step.clone());
            let was_same = committed.same.contains(&key);
            if row.looser && !committed.looser.contains(&key) {
                failures.push(format!(
                    "{} / {}: looser than kcp: {}",
                    row.script,
                    row.step,
                    row.verdict.detail()
                ));
            } else if was_same && row.label() != "same" {
                failures.push(format!(
                    "{} / {}: was same, now {}",
                    row.script,
                    row.step,
                    row.verdict.detail()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} regressions:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
