//! The documentation is a test: every block of README.md and docs/*.md marked runnable (see
//! [`doctest`] for the markers and the block syntax) runs here, with bash, and its output is
//! compared where the doc shows one. A doc command that stops working, or prints something other
//! than the doc shows, fails this test.
//!
//! - `doctest` blocks run against one `faros dev` (started like the README says, ports picked by
//!   the OS) from a directory whose `.faros` is its state directory; the addresses the docs name
//!   (`https://127.0.0.1:8443`, `:6443`, `127.0.0.1:8081`, `/home/me/faros-rs/.faros`) are replaced
//!   by this run's. The blocks of one file share their shell variables, in order; files run README
//!   first, then docs/ by name.
//! - `doctest: banner` blocks are compared with that `faros dev`'s banner.
//! - `doctest: standalone` blocks run in an empty directory of their own, without `faros dev`
//!   (docs/install.md's "without Kubernetes": the separate binaries wired by hand), with the
//!   binaries of this build first on `PATH` and the docs' fixed ports replaced by free ones; what
//!   they start in the background is stopped at the end.
//!
//! In every block, `curl` fails on an HTTP error (`--fail-with-body`, unless the doc asks for
//! `-f` itself) and pipelines fail when any part does (`pipefail`), so a command the docs show succeeding must succeed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod devproc;
mod doctest;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use doctest::{Block, Mode};
use faros_test_support::ports::free_port;

/// Longest a single documented command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(180);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// README.md, then docs/*.md by name, with their runnable blocks.
fn all_blocks() -> Vec<Block> {
    let root = repo();
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut out = Vec::new();
    for file in files {
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        out.extend(doctest::blocks(&name, &text).unwrap_or_else(|e| panic!("{e}")));
    }
    out
}

/// A bash that runs documented commands one by one, keeping the shell variables they set.
struct Shell {
    dir: PathBuf,
    env_file: PathBuf,
    path: String,
    subs: Vec<(String, String)>,
    /// Where each command appends the ids of the background jobs it started (`jobs -p`): they
    /// are stopped, by id, on drop, so what a doc starts does not outlive the test.
    jobs_file: PathBuf,
}

impl Shell {
    fn new(dir: &Path, subs: Vec<(String, String)>) -> Self {
        let bin_dir = Path::new(env!("CARGO_BIN_EXE_faros")).parent().unwrap().to_path_buf();
        let env_file = dir.join(".doctest-env");
        std::fs::write(&env_file, "").unwrap();
        let jobs_file = dir.join(".doctest-jobs");
        std::fs::write(&jobs_file, "").unwrap();
        Self {
            dir: dir.to_path_buf(),
            env_file,
            jobs_file,
            path: format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default()),
            subs,
        }
    }

    /// Runs one command; stdout, stderr and success.
    fn run(&mut self, command: &str) -> (String, String, bool) {
        let command = doctest::substitute(command, &self.subs);
        // `set -a`: plain assignments (`HUB=…`) reach the next command too.
        let script = format!(
            "set -a -o pipefail\n. '{env}'\ncurl() {{ local a; for a in \"$@\"; do if [[ $a == --fail || $a == --fail-with-body || $a =~ ^-[a-zA-Z]*f[a-zA-Z]*$ ]]; then command curl \"$@\"; return; fi; done; command curl --fail-with-body \"$@\"; }}\n{command}\n__rc=$?\nset +a\njobs -p >> '{jobs}'\nexport -p > '{env}'\nexit $__rc\n",
            env = self.env_file.display(),
            jobs = self.jobs_file.display(),
        );
        let child = Command::new("timeout")
            .arg(COMMAND_TIMEOUT.as_secs().to_string())
            .args(["bash", "-c", &script])
            .current_dir(&self.dir)
            .env("PATH", &self.path)
            .env("HOME", &self.dir)
            .env_remove("KUBECONFIG")
            .env_remove("CURL_CA_BUNDLE")
            .env("FAROS_LOG_LEVEL", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status.success(),
        )
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        let jobs = std::fs::read_to_string(&self.jobs_file).unwrap_or_default();
        for pid in jobs.split_whitespace().filter(|p| p.parse::<u32>().is_ok()) {
            let _ = Command::new("kill").arg("-TERM").arg(pid).status();
        }
    }
}

/// Runs `block`'s steps in `shell`; the problems found.
fn run_block(shell: &mut Shell, block: &Block) -> Vec<String> {
    let mut problems = Vec::new();
    for step in &block.steps {
        let (stdout, stderr, ok) = shell.run(&step.command);
        let expected: Vec<String> = step
            .output
            .iter()
            .map(|l| doctest::substitute(l, &shell.subs))
            .collect();
        let where_ = format!("{}:{}: $ {}", block.file, block.line, step.command);
        if !ok {
            problems.push(format!("{where_}\nfailed; stdout:\n{stdout}\nstderr:\n{stderr}"));
            // Later steps build on this one.
            break;
        }
        if !expected.is_empty() && !doctest::output_matches(&expected, &stdout) {
            problems.push(format!(
                "{where_}\nprinted:\n{stdout}\nthe doc shows:\n{}\nstderr:\n{stderr}",
                expected.join("\n")
            ));
        }
    }
    problems
}

#[test]
fn the_docs_mark_their_runnable_blocks() {
    let blocks = all_blocks();
    let readme = |mode| blocks.iter().any(|b| b.file == "README.md" && b.mode == mode);
    assert!(
        readme(Mode::Dev) && readme(Mode::Banner),
        "README.md's run-it blocks are not marked"
    );
    assert!(
        blocks
            .iter()
            .any(|b| b.file == "docs/install.md" && b.mode == Mode::Standalone),
        "docs/install.md's without-Kubernetes path is not marked"
    );
}

/// Every `doctest` and `doctest: banner` block against one `faros dev`.
#[test]
fn the_docs_commands_work_against_faros_dev() {
    faros_core::telemetry::install_crypto_provider();
    let blocks: Vec<Block> = all_blocks()
        .into_iter()
        .filter(|b| b.mode != Mode::Standalone)
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let dev = devproc::launch(&state).start_blocking().unwrap();
    let kcp = dev.server.trim_end_matches("/clusters/root").to_string();
    let quickstart = dev
        .banner
        .lines()
        .find_map(|l| l.split("backend on ").nth(1))
        .expect("the banner names quickstart's backend")
        .trim()
        .to_string();
    let subs = vec![
        ("https://127.0.0.1:8443".to_string(), dev.hub.clone()),
        ("https://127.0.0.1:6443".to_string(), kcp),
        ("127.0.0.1:8081".to_string(), quickstart),
        (
            "/home/me/faros-rs/.faros".to_string(),
            state.canonicalize().unwrap().display().to_string(),
        ),
    ];
    let mut problems = Vec::new();
    let mut files: Vec<&str> = blocks.iter().map(|b| b.file.as_str()).collect();
    files.dedup();
    for file in files {
        let work = tmp.path().join("work").join(file.replace('/', "_"));
        std::fs::create_dir_all(&work).unwrap();
        std::os::unix::fs::symlink(&state, work.join(".faros")).unwrap();
        let mut shell = Shell::new(&work, subs.clone());
        for block in blocks.iter().filter(|b| b.file == file) {
            match block.mode {
                Mode::Banner => {
                    let expected: Vec<String> = block
                        .steps
                        .iter()
                        .flat_map(|s| &s.output)
                        .map(|l| doctest::substitute(l, &subs))
                        .collect();
                    if !doctest::output_matches(&expected, &dev.banner) {
                        problems.push(format!(
                            "{}:{}: faros dev printed:\n{}\nthe doc shows:\n{}",
                            block.file,
                            block.line,
                            dev.banner,
                            expected.join("\n")
                        ));
                    }
                }
                _ => problems.extend(run_block(&mut shell, block)),
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n\nfaros dev's log ends:\n{}",
        problems.join("\n\n"),
        dev.log_tail()
    );
    drop(dev);
}

/// docs/install.md's "without Kubernetes": the separate binaries wired by hand, as documented.
#[test]
fn the_separate_binaries_work_as_docs_install_wires_them() {
    faros_core::telemetry::install_crypto_provider();
    let blocks: Vec<Block> = all_blocks()
        .into_iter()
        .filter(|b| b.mode == Mode::Standalone)
        .collect();
    // The binaries the doc runs are this build's (`cargo test --workspace` builds them all).
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_faros")).parent().unwrap().to_path_buf();
    for bin in ["faros-hub-api", "faros-hub-reconciler", "faros-provider-quickstart"] {
        assert!(
            bin_dir.join(bin).exists(),
            "{bin} is not built in {}: run `cargo build --workspace --bins` (cargo test --workspace does)",
            bin_dir.display()
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let subs: Vec<(String, String)> = ["6443", "8443", "8081", "8080"]
        .iter()
        .map(|p| (format!("127.0.0.1:{p}"), format!("127.0.0.1:{}", free_port().unwrap())))
        .collect();
    let mut problems = Vec::new();
    // The doc runs from the repository root: its provider files are there.
    std::os::unix::fs::symlink(repo().join("providers"), tmp.path().join("providers")).unwrap();
    let mut shell = Shell::new(tmp.path(), subs);
    for block in &blocks {
        problems.extend(run_block(&mut shell, block));
        if !problems.is_empty() {
            break;
        }
    }
    let logs: String = std::fs::read_dir(tmp.path().join("platform"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            format!(
                "--- {}\n{}",
                p.display(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            )
        })
        .collect();
    drop(shell);
    assert!(problems.is_empty(), "{}\n\nlogs:\n{logs}", problems.join("\n\n"));
}
