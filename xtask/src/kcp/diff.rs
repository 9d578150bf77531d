//! `cargo xtask kcp diff`: the scripts of `e2e/kcp-diff/` run against a fresh real kcp and a fresh
//! embedded kcp per script, answers normalised and compared step by step.
//!
//! - [`script`]: the script format and `${var}` substitution;
//! - [`normalize`]: what must differ between two servers, replaced by placeholders;
//! - [`compare`]: a step's verdict;
//! - [`exec`]: one script against one server;
//! - [`servers`]: starting real kcp and `faros kcp`;
//! - [`recorded`]: real kcp's recorded answers, for runs without it;
//! - [`report`]: the tables, `docs/kcp-diff.md`, and reading back its `same` steps;
//! - `ratchet` (tests): every script against the embedded kcp in-process, held to the report.

pub(crate) mod compare;
pub(crate) mod exec;
pub(crate) mod normalize;
#[cfg(test)]
mod ratchet;
pub(crate) mod recorded;
pub(crate) mod report;
pub(crate) mod script;
pub(crate) mod servers;

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;

use super::gomod::PINNED_VERSION;

pub(crate) const SCRIPTS: &str = "e2e/kcp-diff";
pub(crate) const RECORDINGS: &str = "e2e/kcp-diff/recorded";
pub(crate) const REPORT: &str = "docs/kcp-diff.md";

#[derive(Args)]
pub struct Diff {
    /// Only the scripts whose file name contains this.
    filter: Option<String>,
    /// Write real kcp's answers to e2e/kcp-diff/recorded/ (needs real kcp).
    #[arg(long)]
    record: bool,
    /// Compare with the recorded answers instead of starting real kcp.
    #[arg(long, conflicts_with = "record")]
    recorded: bool,
    /// Write docs/kcp-diff.md (all scripts only).
    #[arg(long)]
    report: bool,
    /// The kcp binary (default: `target/kcp/<pinned version>/kcp`, from `cargo xtask kcp build`).
    #[arg(long)]
    kcp_binary: Option<PathBuf>,
    /// The faros binary serving `faros kcp` (default: target/debug/faros, built first).
    #[arg(long)]
    faros_binary: Option<PathBuf>,
    /// Write both normalised answers of every step that is not `same` to
    /// `target/kcp-diff/<script>/answers/`, to read a difference whole (the table shows the first).
    #[arg(long)]
    dump: bool,
}

impl Diff {
    pub fn run(self, root: &Path) -> anyhow::Result<()> {
        if self.report && self.filter.is_some() {
            bail!("--report covers every script: drop the filter");
        }
        let scripts = script::load_dir(&root.join(SCRIPTS), self.filter.as_deref())?;
        let faros = match &self.faros_binary {
            Some(path) => path.clone(),
            None => {
                let sh = xshell::Shell::new()?;
                sh.change_dir(root);
                xshell::cmd!(sh, "cargo build -p faros --bin faros").run()?;
                root.join("target/debug/faros")
            }
        };
        let kcp = self
            .kcp_binary
            .clone()
            .unwrap_or_else(|| super::build::bin_dir(root, PINNED_VERSION).join("kcp"));
        if !self.recorded && !kcp.is_file() {
            bail!(
                "{} is missing: build it with `cargo xtask kcp build`, pass --kcp-binary, or compare with the recordings (--recorded)",
                kcp.display()
            );
        }
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let runtime = tokio::runtime::Runtime::new()?;
        let work = root.join("target/kcp-diff");
        let recordings = root.join(RECORDINGS);
        let mut rows = Vec::new();
        let mut stale = Vec::new();
        let mut version = PINNED_VERSION.to_string();
        for script in &scripts {
            eprintln!("{}: {} steps", script.name, script.steps.len());
            let dir = work.join(&script.name);
            let (kcp_outcomes, embedded_outcomes) = runtime.block_on(async {
                let embedded = async {
                    let log = dir.join("embedded/faros-kcp.log");
                    let mut server = servers::embedded(&faros, &dir.join("embedded"), &servers::tokens()?)?;
                    server.ready(&log).await.context("faros kcp")?;
                    anyhow::Ok(exec::run(&server.target, script, "embedded").await)
                };
                let real = async {
                    if self.recorded {
                        let (v, outcomes) = recorded::read(&recordings, script)?;
                        version = v;
                        return anyhow::Ok(outcomes);
                    }
                    let log = dir.join("kcp/kcp.log");
                    let mut server = servers::real_kcp(&kcp, &dir.join("kcp"), &servers::tokens()?)?;
                    server.ready(&log).await.context("kcp")?;
                    server.schedulable(&log).await.context("kcp")?;
                    anyhow::Ok(exec::run(&server.target, script, "kcp").await)
                };
                let (k, e) = tokio::join!(real, embedded);
                anyhow::Ok((k?, e?))
            })?;
            if self.record {
                std::fs::create_dir_all(&recordings)?;
                recorded::write(&recordings, script, PINNED_VERSION, &kcp_outcomes)?;
            }
            let script_rows = report::rows(script, &kcp_outcomes, &embedded_outcomes);
            if !self.record && !self.recorded {
                // Live: would the recordings the in-process ratchet reads give the same verdicts?
                match recorded::read(&recordings, script) {
                    Ok((_, before)) => stale.extend(report::stale_recordings(
                        &report::rows(script, &before, &embedded_outcomes),
                        &script_rows,
                    )),
                    Err(e) => stale.push(format!("RECORDING MISSING {}: {e}", script.name)),
                }
            }
            if self.dump {
                dump(&dir.join("answers"), &script_rows, &kcp_outcomes, &embedded_outcomes)?;
            }
            rows.extend(script_rows);
        }
        print!("{}", report::terminal(&rows));
        let summary = report::Summary::of(&rows);
        eprintln!(
            "{} steps against {}: {} same, {} different, {} looser",
            summary.steps,
            if self.recorded {
                "real kcp's recordings"
            } else {
                "real kcp, live"
            },
            summary.same,
            summary.different + summary.one_side,
            summary.looser
        );
        for line in &stale {
            eprintln!("{line}");
        }
        if !stale.is_empty() {
            eprintln!(
                "{} step(s) get another verdict from real kcp live than from its recordings: `cargo xtask kcp diff \
                 --record` refreshes them (then `--recorded --report` rewrites {REPORT})",
                stale.len()
            );
        }
        // A report on disk that is not this repository's (an older checkout) holds nothing to
        // compare with: only looser steps fail then.
        let committed = std::fs::read_to_string(root.join(REPORT))
            .map(|text| report::committed(&text))
            .unwrap_or_default();
        let failures = report::failures(&rows, &committed);
        for line in &failures {
            eprintln!("{line}");
        }
        if self.report {
            std::fs::write(root.join(REPORT), report::markdown(&scripts, &rows, &version))?;
            eprintln!("wrote {REPORT}");
        }
        if !failures.is_empty() {
            bail!(
                "{} step(s) fail the diff: the embedded kcp must never accept what kcp refuses, and a step \
                 {REPORT} calls same must stay same",
                failures.len()
            );
        }
        Ok(())
    }
}

/// `<dir>/<step number>.kcp.json` and `.embedded.json` for each step not `same` (a fresh `dir`).
fn dump(
    dir: &Path,
    rows: &[report::Row],
    kcp: &[compare::Outcome],
    embedded: &[compare::Outcome],
) -> anyhow::Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    for (i, row) in rows.iter().enumerate() {
        if row.verdict == compare::Verdict::Same {
            continue;
        }
        for (side, outcomes) in [("kcp", kcp), ("embedded", embedded)] {
            let text = match outcomes.get(i) {
                Some(Ok(answer)) => serde_json::to_string_pretty(answer)?,
                Some(Err(why)) => why.clone(),
                None => "step not run".into(),
            };
            std::fs::write(dir.join(format!("{:02}.{side}.json", i + 1)), text)?;
        }
    }
    eprintln!("wrote the differing answers to {}", dir.display());
    Ok(())
}
