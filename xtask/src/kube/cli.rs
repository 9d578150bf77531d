//! kubectl and helm as the chart checks and the control plane run them: against one kubeconfig,
//! output kept (stdout and stderr apart: warnings come on stderr even when a command succeeds).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    #[error("running {command}: {source}")]
    Start { command: String, source: std::io::Error },
    #[error("{command} failed:\n{stdout}{stderr}")]
    Failed {
        command: String,
        stdout: String,
        stderr: String,
    },
}

/// What a command printed.
#[derive(Clone, Debug, Default)]
pub(crate) struct Output {
    pub stdout: String,
    pub stderr: String,
}

/// A program (`kubectl`, helm) bound to a kubeconfig.
#[derive(Clone, Debug)]
pub(crate) struct Tool {
    pub program: String,
    pub kubeconfig: PathBuf,
    /// The working directory (the docs' relative chart paths resolve there).
    pub cwd: Option<PathBuf>,
    /// A directory put first on PATH (where the docs' `helm` is found).
    pub path_first: Option<PathBuf>,
}

impl Tool {
    pub fn new(program: impl Into<String>, kubeconfig: &Path) -> Self {
        Self {
            program: program.into(),
            kubeconfig: kubeconfig.to_path_buf(),
            cwd: None,
            path_first: None,
        }
    }

    /// The same program with another kubeconfig.
    pub fn as_user(&self, kubeconfig: &Path) -> Self {
        Self {
            kubeconfig: kubeconfig.to_path_buf(),
            ..self.clone()
        }
    }

    /// Runs `ARGS`, failing with its output when it fails.
    pub fn run(&self, args: &[&str]) -> Result<Output, CliError> {
        self.run_with_stdin(args, None)
    }

    /// Runs `ARGS` with `stdin` piped in.
    pub fn run_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> Result<Output, CliError> {
        let (ok, out, command) = self.output(args, stdin)?;
        if ok {
            Ok(out)
        } else {
            Err(CliError::Failed {
                command,
                stdout: out.stdout,
                stderr: out.stderr,
            })
        }
    }

    /// Runs `ARGS`; whether it succeeded, and its output, either way.
    pub fn output(&self, args: &[&str], stdin: Option<&str>) -> Result<(bool, Output, String), CliError> {
        let command = format!("{} {}", self.program, args.join(" "));
        let mut cmd = Command::new(&self.program);
        cmd.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(cwd) = &self.cwd {
            cmd.current_dir(cwd);
        }
        if let Some(dir) = &self.path_first {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let paths = std::iter::once(dir.clone()).chain(std::env::split_paths(&path));
            if let Ok(joined) = std::env::join_paths(paths) {
                cmd.env("PATH", joined);
            }
        }
        let start = |source| CliError::Start {
            command: command.clone(),
            source,
        };
        let mut child = cmd.spawn().map_err(start)?;
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(text.as_bytes()).map_err(start)?;
        }
        let out = child.wait_with_output().map_err(start)?;
        Ok((
            out.status.success(),
            Output {
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            },
            command,
        ))
    }
}
