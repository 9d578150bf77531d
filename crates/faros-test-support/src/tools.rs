//! External tools tests run: where to find them, and a clear error naming how to install each.

use std::process::Command;

/// A tool the tests need is not installed.
#[derive(Debug, thiserror::Error)]
#[error("{tool} not found as {path:?}: {install}")]
pub struct Missing {
    pub tool: &'static str,
    pub path: String,
    pub install: &'static str,
}

/// Helm 3: `$FAROS_HELM`, else `helm` on the PATH, checked with `helm version`.
pub fn helm() -> Result<String, Missing> {
    let path = std::env::var("FAROS_HELM").unwrap_or_else(|_| "helm".into());
    let ok = Command::new(&path)
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Ok(path)
    } else {
        Err(Missing {
            tool: "helm",
            path,
            install: "install helm 3 (see .ci/run) or set FAROS_HELM",
        })
    }
}

/// nginx (Debian's `nginx` or `nginx-light`): `$FAROS_NGINX`, else `/usr/sbin/nginx`, else `nginx` on
/// the PATH, checked with `nginx -v`.
pub fn nginx() -> Result<String, Missing> {
    let path = std::env::var("FAROS_NGINX").unwrap_or_else(|_| {
        if std::path::Path::new("/usr/sbin/nginx").is_file() {
            "/usr/sbin/nginx".into()
        } else {
            "nginx".into()
        }
    });
    let ok = Command::new(&path).arg("-v").output().is_ok_and(|o| o.status.success());
    if ok {
        Ok(path)
    } else {
        Err(Missing {
            tool: "nginx",
            path,
            install: "install Debian's nginx (`apt-get install nginx-light`; .ci/run does) or set FAROS_NGINX",
        })
    }
}
