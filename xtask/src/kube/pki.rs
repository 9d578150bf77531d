//! The control plane's keys and certificates, made with openssl: a CA, the API server's serving
//! certificate (127.0.0.1, localhost, the `kubernetes` Service's names and address, and the loopback
//! address the process node's Pods reach it at), and the
//! ServiceAccount token signing key pair.

use std::path::Path;
use std::process::{Command, Stdio};

use super::config::{KUBERNETES_SERVICE_IP, KUBERNETES_SERVICE_LOOPBACK, Paths};

#[derive(Debug, thiserror::Error)]
pub(crate) enum PkiError {
    #[error("running openssl {args}: {source}")]
    Start { args: String, source: std::io::Error },
    #[error("openssl {args} failed: {stderr}")]
    Failed { args: String, stderr: String },
    #[error("writing {path}: {source}")]
    Write { path: String, source: std::io::Error },
}

/// The API server's names in its serving certificate.
fn subject_alt_names() -> String {
    format!(
        "subjectAltName=IP:127.0.0.1,IP:{KUBERNETES_SERVICE_IP},IP:{KUBERNETES_SERVICE_LOOPBACK},DNS:localhost,DNS:kubernetes,\
         DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
    )
}

/// Makes every key and certificate of [`Paths`].
pub(crate) fn make(paths: &Paths) -> Result<(), PkiError> {
    let ca_key = paths.file("ca.key");
    let serving_csr = paths.file("apiserver.csr");
    let ext = paths.file("apiserver.ext");
    std::fs::write(
        &ext,
        format!(
            "{}\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n",
            subject_alt_names()
        ),
    )
    .map_err(|source| PkiError::Write {
        path: ext.display().to_string(),
        source,
    })?;
    let p = |path: &Path| path.display().to_string();
    openssl(&[
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-out",
        &p(&ca_key),
    ])?;
    openssl(&[
        "req",
        "-x509",
        "-new",
        "-key",
        &p(&ca_key),
        "-subj",
        "/CN=faros-kube-ca",
        "-days",
        "30",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
        "-out",
        &p(&paths.ca_cert()),
    ])?;
    openssl(&[
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-out",
        &p(&paths.serving_key()),
    ])?;
    openssl(&[
        "req",
        "-new",
        "-key",
        &p(&paths.serving_key()),
        "-subj",
        "/CN=kube-apiserver",
        "-out",
        &p(&serving_csr),
    ])?;
    openssl(&[
        "x509",
        "-req",
        "-in",
        &p(&serving_csr),
        "-CA",
        &p(&paths.ca_cert()),
        "-CAkey",
        &p(&ca_key),
        "-CAcreateserial",
        "-days",
        "30",
        "-extfile",
        &p(&ext),
        "-out",
        &p(&paths.serving_cert()),
    ])?;
    // ServiceAccount tokens: RS256, the algorithm every Kubernetes client verifies.
    openssl(&[
        "genpkey",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        "rsa_keygen_bits:2048",
        "-out",
        &p(&paths.sa_key()),
    ])?;
    openssl(&[
        "pkey",
        "-in",
        &p(&paths.sa_key()),
        "-pubout",
        "-out",
        &p(&paths.sa_pub()),
    ])?;
    Ok(())
}

/// A random token: 32 hex digits from openssl's generator.
pub(crate) fn token() -> Result<String, PkiError> {
    let out = run(&["rand", "-hex", "16"])?;
    Ok(out.trim().to_string())
}

fn openssl(args: &[&str]) -> Result<(), PkiError> {
    run(args).map(drop)
}

fn run(args: &[&str]) -> Result<String, PkiError> {
    let out = Command::new("openssl")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| PkiError::Start {
            args: args.join(" "),
            source,
        })?;
    if !out.status.success() {
        return Err(PkiError::Failed {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
