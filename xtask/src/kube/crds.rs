//! The third-party CRDs an operator installs before the charts (cert-manager, Gateway API,
//! prometheus-operator's ServiceMonitor), read from a directory outside the repository (by default
//! `shared/third_party/crds/` beside it) after every file's sha256 is checked against its
//! `SHA256SUMS`. Nothing of it is copied anywhere.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum CrdError {
    #[error("{path}: {error}")]
    Read { path: String, error: String },
    #[error("{sums} line {line}: not `<sha256>  <path>`")]
    BadLine { sums: String, line: usize },
    #[error("{path}: sha256 is {got}, {sums} says {want}")]
    Mismatch {
        path: String,
        got: String,
        want: String,
        sums: String,
    },
    #[error("{sums} lists no CRD of {channel} Gateway API")]
    NoCrds { sums: String, channel: &'static str },
}

/// Which Gateway API channel's TLSRoute is installed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Channel {
    /// The standard channel: TLSRoute served as `v1` only.
    Standard,
    /// The experimental TLSRoute (also `v1alpha2`, `v1alpha3`) in place of the standard one, and
    /// without the standard channel's upgrade-guard ValidatingAdmissionPolicy, which refuses it.
    Experimental,
}

impl Channel {
    fn name(self) -> &'static str {
        match self {
            Channel::Standard => "standard",
            Channel::Experimental => "experimental",
        }
    }
}

/// `SHA256SUMS` (`sha256sum` output: `<hex>  ./path`) as (hash, path) pairs.
pub(crate) fn parse_sums(text: &str, sums: &str) -> Result<Vec<(String, String)>, CrdError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let (hash, path) = l.split_once(char::is_whitespace).ok_or(CrdError::BadLine {
                sums: sums.to_string(),
                line: i + 1,
            })?;
            let path = path.trim().trim_start_matches('*').trim_start_matches("./");
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) || path.is_empty() {
                return Err(CrdError::BadLine {
                    sums: sums.to_string(),
                    line: i + 1,
                });
            }
            Ok((hash.to_ascii_lowercase(), path.to_string()))
        })
        .collect()
}

/// The CRD files to apply, in order, of those `SHA256SUMS` lists: every YAML file but, for the
/// standard channel, the experimental ones; for the experimental channel, the experimental TLSRoute
/// instead of the standard one and without the upgrade guard.
pub(crate) fn select(listed: &[(String, String)], channel: Channel) -> Vec<String> {
    let mut files: Vec<String> = listed
        .iter()
        .map(|(_, p)| p.clone())
        .filter(|p| p.ends_with(".yaml"))
        .filter(|p| match channel {
            Channel::Standard => !p.contains("/experimental/"),
            Channel::Experimental => {
                !p.ends_with("/standard/gateway.networking.k8s.io_tlsroutes.yaml") && !p.contains("vap_safeupgrades")
            }
        })
        .collect();
    files.sort();
    files
}

/// Checks `dir`'s `SHA256SUMS` against every file it lists; the CRD files of `channel`.
pub(crate) fn verified(dir: &Path, channel: Channel) -> Result<Vec<PathBuf>, CrdError> {
    let sums_path = dir.join("SHA256SUMS");
    let sums = sums_path.display().to_string();
    let read = |path: &Path| {
        std::fs::read(path).map_err(|e| CrdError::Read {
            path: path.display().to_string(),
            error: e.to_string(),
        })
    };
    let text = String::from_utf8_lossy(&read(&sums_path)?).into_owned();
    let listed = parse_sums(&text, &sums)?;
    for (want, rel) in &listed {
        let path = dir.join(rel);
        let got = hex(&Sha256::digest(read(&path)?));
        if &got != want {
            return Err(CrdError::Mismatch {
                path: path.display().to_string(),
                got,
                want: want.clone(),
                sums,
            });
        }
    }
    let files = select(&listed, channel);
    if !files.iter().any(|f| f.contains("gateway.networking.k8s.io_tlsroutes")) {
        return Err(CrdError::NoCrds {
            sums,
            channel: channel.name(),
        });
    }
    Ok(files.iter().map(|f| dir.join(f)).collect())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str = "0d48c9e4b53dd9510cf615b9b1192d9d7afb07a1cc0498c9515627cb1c075419";

    fn listed() -> Vec<(String, String)> {
        [
            "./cert-manager-v1.21.1/LICENSE",
            "./cert-manager-v1.21.1/cert-manager.io_certificates.yaml",
            "./gateway-api-v1.6.1/experimental/gateway.networking.k8s.io_tlsroutes.yaml",
            "./gateway-api-v1.6.1/standard/gateway.networking.k8s.io_gateways.yaml",
            "./gateway-api-v1.6.1/standard/gateway.networking.k8s.io_tlsroutes.yaml",
            "./gateway-api-v1.6.1/standard/gateway.networking.k8s.io_vap_safeupgrades.yaml",
        ]
        .iter()
        .map(|p| {
            let text = format!("{H}  {p}\n");
            parse_sums(&text, "S").unwrap().remove(0)
        })
        .collect()
    }

    #[test]
    fn sums_lines() {
        let cases = [
            (
                format!("{H}  ./a/b.yaml\n"),
                Ok(vec![(H.to_string(), "a/b.yaml".to_string())]),
            ),
            (
                format!("{H} *a.yaml\n\n"),
                Ok(vec![(H.to_string(), "a.yaml".to_string())]),
            ),
            (
                "xyz  a.yaml\n".to_string(),
                Err(CrdError::BadLine {
                    sums: "S".into(),
                    line: 1,
                }),
            ),
            (
                format!("{H}\n"),
                Err(CrdError::BadLine {
                    sums: "S".into(),
                    line: 1,
                }),
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse_sums(&text, "S"), want, "{text}");
        }
    }

    #[test]
    fn channels_pick_one_tlsroute() {
        let cases = [
            (
                Channel::Standard,
                vec![
                    "cert-manager-v1.21.1/cert-manager.io_certificates.yaml",
                    "gateway-api-v1.6.1/standard/gateway.networking.k8s.io_gateways.yaml",
                    "gateway-api-v1.6.1/standard/gateway.networking.k8s.io_tlsroutes.yaml",
                    "gateway-api-v1.6.1/standard/gateway.networking.k8s.io_vap_safeupgrades.yaml",
                ],
            ),
            (
                Channel::Experimental,
                vec![
                    "cert-manager-v1.21.1/cert-manager.io_certificates.yaml",
                    "gateway-api-v1.6.1/experimental/gateway.networking.k8s.io_tlsroutes.yaml",
                    "gateway-api-v1.6.1/standard/gateway.networking.k8s.io_gateways.yaml",
                ],
            ),
        ];
        for (channel, want) in cases {
            assert_eq!(select(&listed(), channel), want, "{channel:?}");
        }
    }
}
