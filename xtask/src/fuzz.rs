//! `cargo xtask fuzz`: run every `cargo fuzz` target in `fuzz/` for a while, keep the corpus, and
//! report executions, coverage and findings per target.
//!
//! The targets call the crates' `properties` modules, the same functions their property tests
//! run, so a finding here reproduces as an ordinary unit test. The build uses no sanitizer by
//! default: the workspace forbids `unsafe`, so AddressSanitizer would only watch dependencies'
//! unsafe code at several times the cost; `--sanitizer address` turns it on for long runs by hand.
//!
//! The stable toolchain runs cargo fuzz with `RUSTC_BOOTSTRAP=1` (libFuzzer needs the nightly-only
//! `-Zsanitizer`/coverage flags); that is set for the child processes only.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};

#[derive(Args)]
pub struct Fuzz {
    /// Seconds to fuzz each target.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Only these targets (repeatable); default: every file in fuzz/fuzz_targets.
    #[arg(long = "target")]
    targets: Vec<String>,
    /// Sanitizer for the build.
    #[arg(long, value_enum, default_value_t = Sanitizer::None)]
    sanitizer: Sanitizer,
    /// Minimize each target's corpus after the run (`cargo fuzz cmin`), before committing it.
    #[arg(long)]
    minimize: bool,
    /// Print the commands instead of running them.
    #[arg(long)]
    dry_run: bool,
    /// List the targets and exit.
    #[arg(long)]
    list: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Sanitizer {
    None,
    Address,
}

impl Sanitizer {
    fn flag(self) -> &'static str {
        match self {
            Sanitizer::None => "none",
            Sanitizer::Address => "address",
        }
    }
}

/// One process to start: its arguments after `cargo`, and what it is for.
#[derive(Debug, PartialEq, Eq)]
struct Step {
    what: String,
    args: Vec<String>,
    target: Option<String>,
}

/// What one target's run reported.
#[derive(Debug, Default, PartialEq, Eq)]
struct RunStats {
    executions: Option<u64>,
    seconds: Option<u64>,
    coverage: Option<u64>,
    corpus: Option<u64>,
    artifact: Option<String>,
}

impl Fuzz {
    pub fn run(self, root: &Path) -> anyhow::Result<()> {
        let fuzz_dir = root.join("fuzz");
        let targets = select(&discover(&fuzz_dir)?, &self.targets)?;
        if self.list {
            for t in &targets {
                println!("{t}");
            }
            return Ok(());
        }
        let steps = plan(&targets, self.seconds, self.sanitizer, self.minimize);
        if self.dry_run {
            for step in &steps {
                println!("RUSTC_BOOTSTRAP=1 cargo {}", step.args.join(" "));
            }
            return Ok(());
        }
        require_cargo_fuzz()?;
        for t in &targets {
            // libFuzzer refuses a corpus directory that does not exist.
            let corpus = fuzz_dir.join("corpus").join(t);
            std::fs::create_dir_all(&corpus).with_context(|| format!("creating {}", corpus.display()))?;
        }
        let mut report = Vec::new();
        for step in &steps {
            eprintln!("==> {}", step.what);
            let output = Command::new("cargo")
                .args(&step.args)
                .current_dir(&fuzz_dir)
                .env("RUSTC_BOOTSTRAP", "1")
                .output()
                .with_context(|| format!("starting cargo for {}", step.what))?;
            let stderr = String::from_utf8_lossy(&output.stderr);
            match &step.target {
                Some(target)
                    if step.args.first().map(String::as_str) == Some("fuzz")
                        && step.args.get(1).map(String::as_str) == Some("run") =>
                {
                    let stats = parse_stats(&stderr);
                    if !output.status.success() && stats.artifact.is_none() {
                        // Not a finding but a failure to run: show why.
                        eprintln!("{}", tail(&stderr, 20));
                    }
                    report.push((target.clone(), stats, output.status.success()));
                }
                _ if !output.status.success() => {
                    eprintln!("{stderr}");
                    bail!("{} failed ({})", step.what, output.status);
                }
                _ => {}
            }
        }
        print_report(&report);
        let failed: Vec<&str> = report
            .iter()
            .filter(|(_, _, ok)| !ok)
            .map(|(t, _, _)| t.as_str())
            .collect();
        if !failed.is_empty() {
            bail!(
                "fuzz targets found failures: {} (inputs under fuzz/artifacts/<target>/; reproduce with \
                 `cargo fuzz run <target> <file>` in fuzz/, then add the input to the crate's property tests)",
                failed.join(", ")
            );
        }
        Ok(())
    }
}

/// The targets: one per file in `fuzz/fuzz_targets`, sorted.
fn discover(fuzz_dir: &Path) -> anyhow::Result<Vec<String>> {
    let dir = fuzz_dir.join("fuzz_targets");
    let mut targets = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let path: PathBuf = entry?.path();
        if path.extension().is_some_and(|e| e == "rs")
            && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
        {
            targets.push(stem.to_string());
        }
    }
    targets.sort();
    Ok(targets)
}

/// `wanted` checked against the known targets; empty means all of them.
fn select(known: &[String], wanted: &[String]) -> anyhow::Result<Vec<String>> {
    if wanted.is_empty() {
        return Ok(known.to_vec());
    }
    for w in wanted {
        if !known.contains(w) {
            bail!("unknown fuzz target {w:?}; the targets are: {}", known.join(", "));
        }
    }
    Ok(wanted.to_vec())
}

/// The commands: one build of every target, then a run (and optionally a corpus minimization)
/// per target. Runs write new inputs into `corpus/<target>` and findings into `artifacts/`.
fn plan(targets: &[String], seconds: u64, sanitizer: Sanitizer, minimize: bool) -> Vec<Step> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let mut steps = vec![Step {
        what: format!("build {} fuzz targets", targets.len()),
        args: s(&["fuzz", "build", "-O", "-s", sanitizer.flag()]),
        target: None,
    }];
    for t in targets {
        let corpus = format!("corpus/{t}");
        steps.push(Step {
            what: format!("fuzz {t} for {seconds} s"),
            args: s(&[
                "fuzz",
                "run",
                "-O",
                "-s",
                sanitizer.flag(),
                t,
                &corpus,
                "--",
                &format!("-max_total_time={seconds}"),
                // A parser that needs more than 10 s or 2 GB for one input is a finding too.
                "-timeout=10",
                "-rss_limit_mb=2048",
                "-max_len=4096",
                "-print_final_stats=1",
            ]),
            target: Some(t.clone()),
        });
        if minimize {
            steps.push(Step {
                what: format!("minimize the {t} corpus"),
                args: s(&["fuzz", "cmin", "-O", "-s", sanitizer.flag(), t, &corpus]),
                target: Some(t.clone()),
            });
        }
    }
    steps
}

/// Reads libFuzzer's closing lines: `Done N runs in S second(s)`, the `#N DONE cov: C ... corp:
/// K/...` status line, and `Test unit written to <path>` when it found something.
fn parse_stats(stderr: &str) -> RunStats {
    let mut stats = RunStats::default();
    for line in stderr.lines() {
        if let Some(rest) = line.strip_prefix("Done ") {
            let mut words = rest.split_whitespace();
            stats.executions = words.next().and_then(|n| n.parse().ok());
            stats.seconds = words.nth(2).and_then(|n| n.parse().ok());
        }
        if line.contains(" cov: ") {
            let field = |name: &str| {
                line.split_whitespace()
                    .skip_while(|w| *w != name)
                    .nth(1)
                    .and_then(|v| v.split('/').next())
                    .and_then(|v| v.parse::<u64>().ok())
            };
            stats.coverage = field("cov:").or(stats.coverage);
            stats.corpus = field("corp:").or(stats.corpus);
        }
        if let Some(path) = line.split("Test unit written to ").nth(1) {
            stats.artifact = Some(path.trim().to_string());
        }
    }
    stats
}

/// The last `n` lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn print_report(report: &[(String, RunStats, bool)]) {
    let show = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    println!(
        "{:<24} {:>12} {:>8} {:>8} {:>8}  result",
        "target", "executions", "seconds", "cov", "corpus"
    );
    for (target, stats, ok) in report {
        let result = match (&stats.artifact, ok) {
            (Some(path), _) => format!("FOUND {path}"),
            (None, true) => "ok".to_string(),
            (None, false) => "FAILED (see output)".to_string(),
        };
        println!(
            "{:<24} {:>12} {:>8} {:>8} {:>8}  {result}",
            target,
            show(stats.executions),
            show(stats.seconds),
            show(stats.coverage),
            show(stats.corpus)
        );
    }
}

fn require_cargo_fuzz() -> anyhow::Result<()> {
    let found = Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        bail!("cargo-fuzz is not installed: run `cargo install cargo-fuzz --locked`, then `cargo xtask fuzz` again");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn plan_builds_once_then_runs_each_target_on_its_corpus() {
        let steps = plan(&names(&["a", "b"]), 30, Sanitizer::None, false);
        let cmds: Vec<String> = steps.iter().map(|s| s.args.join(" ")).collect();
        assert_eq!(
            cmds,
            [
                "fuzz build -O -s none",
                "fuzz run -O -s none a corpus/a -- -max_total_time=30 -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1",
                "fuzz run -O -s none b corpus/b -- -max_total_time=30 -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1",
            ]
        );
    }

    #[test]
    fn minimize_and_sanitizer_reach_every_command() {
        let steps = plan(&names(&["a"]), 5, Sanitizer::Address, true);
        let cmds: Vec<String> = steps.iter().map(|s| s.args.join(" ")).collect();
        assert_eq!(cmds[0], "fuzz build -O -s address");
        assert!(cmds[1].starts_with("fuzz run -O -s address a corpus/a -- -max_total_time=5 "));
        assert_eq!(cmds[2], "fuzz cmin -O -s address a corpus/a");
    }

    #[test]
    fn selecting_an_unknown_target_names_the_known_ones() {
        let known = names(&["json_patch", "token_file"]);
        assert_eq!(select(&known, &[]).unwrap(), known);
        assert_eq!(select(&known, &names(&["token_file"])).unwrap(), names(&["token_file"]));
        let err = select(&known, &names(&["nope"])).unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown fuzz target \"nope\"; the targets are: json_patch, token_file"
        );
    }

    #[test]
    fn the_targets_are_the_files_in_fuzz_targets() {
        let root = crate::locate::project_root();
        let targets = discover(&root.join("fuzz")).unwrap();
        assert!(targets.contains(&"label_selector".to_string()), "{targets:?}");
        assert!(targets.contains(&"token_file".to_string()), "{targets:?}");
        assert!(targets.windows(2).all(|w| w[0] < w[1]), "sorted: {targets:?}");
    }

    #[test]
    fn libfuzzer_output_is_read() {
        let out = "INFO: Seed: 1\n#2\tINITED cov: 10 ft: 10 corp: 1/1b exec/s: 0 rss: 30Mb\n\
                   #123456\tDONE   cov: 812 ft: 2048 corp: 97/3120b lim: 4096 exec/s: 12345 rss: 60Mb\n\
                   Done 123456 runs in 10 second(s)\n";
        assert_eq!(
            parse_stats(out),
            RunStats {
                executions: Some(123_456),
                seconds: Some(10),
                coverage: Some(812),
                corpus: Some(97),
                artifact: None,
            }
        );
        let crash = "==1== ERROR: libFuzzer: deadly signal\n\
                     artifact_prefix='/f/artifacts/json_patch/'; Test unit written to /f/artifacts/json_patch/crash-abc\n";
        assert_eq!(
            parse_stats(crash).artifact.as_deref(),
            Some("/f/artifacts/json_patch/crash-abc")
        );
    }
}
