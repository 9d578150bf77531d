//! helm 3 as the chart tests run it: `helm lint`, `helm template` and `helm dependency update` of a
//! chart on disk, with values files and `--set`s, and helm's own words when it refuses. Tests that
//! drive a release against a server run [`Helm::program`] themselves.

use std::path::Path;
use std::process::Command;

use crate::tools::{self, Missing};

#[derive(Debug, thiserror::Error)]
pub enum HelmError {
    #[error(transparent)]
    Missing(#[from] Missing),
    #[error("running {command}: {source}")]
    Run { command: String, source: std::io::Error },
    /// helm ran and refused; `output` is what it printed (stdout, then stderr).
    #[error("{command} failed:\n{output}")]
    Failed { command: String, output: String },
}

impl HelmError {
    /// What helm printed when it refused (tests match its message); any other error's text.
    pub fn output(&self) -> String {
        match self {
            HelmError::Failed { output, .. } => output.clone(),
            other => other.to_string(),
        }
    }
}

/// The helm program ([`tools::helm`]: `$FAROS_HELM` or `helm` on the PATH).
#[derive(Debug, Clone)]
pub struct Helm {
    program: String,
}

impl Helm {
    /// helm, checked with `helm version`; the error says how to install it.
    pub fn find() -> Result<Self, Missing> {
        Ok(Self {
            program: tools::helm()?,
        })
    }

    /// The program to run, for commands this module has no method for (`helm install` against a
    /// test's server).
    pub fn program(&self) -> &str {
        &self.program
    }

    /// `helm lint [--strict] CHART -f FILE… --set SET…`.
    pub fn lint(&self, chart: &Path, strict: bool, files: &[&Path], sets: &[&str]) -> Result<(), HelmError> {
        let mut cmd = Command::new(&self.program);
        cmd.arg("lint");
        if strict {
            cmd.arg("--strict");
        }
        cmd.arg(chart);
        values(&mut cmd, files, sets);
        run(&mut cmd).map(drop)
    }

    /// `helm template RELEASE CHART --namespace NAMESPACE -f FILE… --set SET…`: the rendered YAML.
    pub fn template(
        &self,
        release: &str,
        namespace: &str,
        chart: &Path,
        files: &[&Path],
        sets: &[&str],
    ) -> Result<String, HelmError> {
        let mut cmd = Command::new(&self.program);
        cmd.args(["template", release])
            .arg(chart)
            .args(["--namespace", namespace]);
        values(&mut cmd, files, sets);
        run(&mut cmd)
    }

    /// `helm dependency update --skip-refresh CHART`: vendors the chart's dependencies from its
    /// `file://` paths, without reaching a repository.
    pub fn dependency_update(&self, chart: &Path) -> Result<(), HelmError> {
        let mut cmd = Command::new(&self.program);
        cmd.args(["dependency", "update", "--skip-refresh"]).arg(chart);
        run(&mut cmd).map(drop)
    }
}

/// Values files first, then `--set`s, which helm applies over them.
fn values(cmd: &mut Command, files: &[&Path], sets: &[&str]) {
    for f in files {
        cmd.arg("-f").arg(f);
    }
    for s in sets {
        cmd.args(["--set", s]);
    }
}

/// Runs `cmd`; its stdout when helm succeeded.
fn run(cmd: &mut Command) -> Result<String, HelmError> {
    let command = describe(cmd);
    let out = cmd.output().map_err(|source| HelmError::Run {
        command: command.clone(),
        source,
    })?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(HelmError::Failed {
            command,
            output: stdout + &String::from_utf8_lossy(&out.stderr),
        })
    }
}

/// `helm lint --strict …` as a person would type it, for messages.
fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
