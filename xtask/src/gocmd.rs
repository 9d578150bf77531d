//! Running `go` for the builds from Go modules (`kube build`): which Go, CGO off, its stderr echoed
//! as it comes and kept, and a module the Go module proxy refused told apart from a failure, in the
//! words [`crate::kcp::gomod::refused`] recognises for the kcp build.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::kcp::gomod::{self, Refused};

/// Exit status when the Go module proxy refused a module (a "no", not a failure of ours), so
/// scripts can tell it apart: the same as `kcp build`'s.
pub(crate) use crate::kcp::build::EXIT_REFUSED;

/// How much of `go`'s stderr is echoed.
const SHOWN_GO_LINES: usize = 12;

#[derive(Debug, thiserror::Error)]
pub(crate) enum GoError {
    #[error("starting {program} (is Go installed? FAROS_GO names it): {source}")]
    Start { program: String, source: std::io::Error },
    #[error("the Go module proxy does not serve {}: {}", .0.module, .0.error)]
    Refused(Refused),
    #[error("`{command}` in {dir} failed ({status})")]
    Failed {
        command: String,
        dir: String,
        status: String,
    },
}

/// `FAROS_GO`, else `go` on PATH, else the Go the machine image installs.
pub(crate) fn go_program() -> String {
    if let Ok(go) = std::env::var("FAROS_GO") {
        return go;
    }
    if crate::locate::which("go") {
        return "go".into();
    }
    "/usr/local/go/bin/go".into()
}

/// Runs `go ARGS` in `dir` with CGO off, resolving what go.sum lacks (so a refusal shows as the
/// proxy's answer, not "missing go.sum entry").
pub(crate) fn run(args: &[&str], dir: &Path) -> Result<(), GoError> {
    let program = go_program();
    let mut cmd = Command::new(&program);
    cmd.args(args)
        .current_dir(dir)
        .env("CGO_ENABLED", "0")
        .env("GOFLAGS", "-mod=mod")
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|source| GoError::Start {
        program: program.clone(),
        source,
    })?;
    let mut stderr = String::new();
    if let Some(pipe) = child.stderr.take() {
        // go repeats a refusal for every package of the module: show the first lines only.
        let mut shown = 0;
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if !line.starts_with("go: downloading") && shown < SHOWN_GO_LINES {
                eprintln!("    {line}");
                shown += 1;
            }
            stderr.push_str(&line);
            stderr.push('\n');
        }
    }
    let status = child.wait().map_err(|source| GoError::Start { program, source })?;
    if status.success() {
        return Ok(());
    }
    Err(match gomod::refused(&stderr) {
        Some(refused) => GoError::Refused(refused),
        None => GoError::Failed {
            command: format!("go {}", args.join(" ")),
            dir: dir.display().to_string(),
            status: status.to_string(),
        },
    })
}
