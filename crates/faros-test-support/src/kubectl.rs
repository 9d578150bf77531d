//! kubectl as tests run it against a platform: `kubectl --kubeconfig <file> <args>`, a manifest on
//! its stdin, and what it printed.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

#[derive(Debug, thiserror::Error)]
pub enum KubectlError {
    #[error("running kubectl (is it installed?): {0}")]
    Run(#[source] std::io::Error),
    #[error("writing kubectl's stdin: {0}")]
    Stdin(#[source] std::io::Error),
}

/// Runs `kubectl --kubeconfig <kubeconfig> <args>` with `stdin` (none: kubectl reads an empty
/// stdin) and returns its exit status and output, whether or not it succeeded.
pub fn run(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Result<Output, KubectlError> {
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(KubectlError::Run)?;
    // Dropped after writing, so kubectl sees the end of its input.
    let mut input = child.stdin.take();
    if let (Some(pipe), Some(text)) = (input.as_mut(), stdin) {
        pipe.write_all(text.as_bytes()).map_err(KubectlError::Stdin)?;
    }
    drop(input);
    child.wait_with_output().map_err(KubectlError::Run)
}

/// What kubectl printed: stdout, then stderr (for a failure message).
pub fn printed(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
