//! Running `go` for the builds from Go modules (`kcp build`, `kube build`): which Go, CGO off, its
//! stderr echoed as it comes and kept, a module's release as the proxy reports it, and a module the
//! Go module proxy refused told apart from a failure ([`crate::kcp::gomod::refused`]).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::kcp::gomod::{self, Refused};

/// Exit status when the Go module proxy refused a module (a "no", not a failure of ours), so
/// scripts can tell it apart.
pub(crate) const EXIT_REFUSED: i32 = 3;

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
    #[error("`go mod download -json {module}`: {error}")]
    Download { module: String, error: String },
}

/// A module at a version, as `go mod download -json` reports it.
pub(crate) struct Release {
    /// Its go.mod in the module cache.
    pub go_mod: PathBuf,
    /// Its extracted files in the module cache.
    pub dir: PathBuf,
    /// The commit the proxy names, if it names one.
    pub commit: Option<String>,
    /// The release's time (RFC 3339), for a reproducible build date.
    pub time: String,
}

/// `go mod download -json MODULE@VERSION`; a refusal is [`GoError::Refused`].
pub(crate) fn download(module: &str) -> Result<Release, GoError> {
    let program = go_program();
    let failed = |error: String| GoError::Download {
        module: module.to_string(),
        error,
    };
    let out = download_json(&program, &[module])?;
    let json: Value = serde_json::from_slice(&out.stdout)
        .map_err(|_| failed(format!("printed no JSON: {}", String::from_utf8_lossy(&out.stderr))))?;
    if let Some(error) = json["Error"].as_str() {
        return Err(match gomod::refused(error) {
            Some(refused) => GoError::Refused(refused),
            None => failed(error.to_string()),
        });
    }
    let path = |key: &str| {
        json[key]
            .as_str()
            .map(PathBuf::from)
            .ok_or_else(|| failed(format!("reported no {key}")))
    };
    let info_path = path("Info")?;
    let info: Value = std::fs::read_to_string(&info_path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .ok_or_else(|| failed(format!("no readable .info at {}", info_path.display())))?;
    Ok(Release {
        go_mod: path("GoMod")?,
        dir: path("Dir")?,
        commit: json["Origin"]["Hash"]
            .as_str()
            .or(info["Origin"]["Hash"].as_str())
            .map(str::to_string),
        time: info["Time"].as_str().unwrap_or("1970-01-01T00:00:00Z").to_string(),
    })
}

/// Runs `go mod download -json <modules>` (outside any module: `-mod=mod`), its output whatever
/// the exit status, since Go reports a refused module as JSON on stdout.
fn download_json<S: AsRef<std::ffi::OsStr>>(program: &str, modules: &[S]) -> Result<std::process::Output, GoError> {
    Command::new(program)
        .args(["mod", "download", "-json"])
        .args(modules)
        .env("GOFLAGS", "-mod=mod")
        .stdin(Stdio::null())
        .output()
        .map_err(|source| GoError::Start {
            program: program.to_string(),
            source,
        })
}

/// `go mod download -json` of every one of `modules` (`path@version`), in one call: the ones the
/// proxy refused (those it serves land in the module cache). Any other failure is an error.
pub(crate) fn refusals(modules: &[String]) -> Result<Vec<Refused>, GoError> {
    let program = go_program();
    let failed = |module: &str, error: String| GoError::Download {
        module: module.to_string(),
        error,
    };
    let out = download_json(&program, modules)?;
    let mut refused = Vec::new();
    for answer in serde_json::Deserializer::from_slice(&out.stdout).into_iter::<Value>() {
        let answer = answer.map_err(|e| {
            failed(
                &modules.join(" "),
                format!("printed no JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)),
            )
        })?;
        let Some(error) = answer["Error"].as_str() else {
            continue;
        };
        match gomod::refused(error) {
            Some(r) => refused.push(r),
            None => return Err(failed(answer["Path"].as_str().unwrap_or_default(), error.to_string())),
        }
    }
    Ok(refused)
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
