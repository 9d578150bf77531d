//! kube configs and clients from kubeconfig YAML (a minted provider kubeconfig, the embedded kcp's
//! admin kubeconfig, what the hub hands a tenant) or from a kubeconfig file, including one a
//! server is about to write.

use std::path::Path;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};

#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("reading kubeconfig {path}: {source}")]
    Read {
        path: String,
        source: kube::config::KubeconfigError,
    },
    #[error("parsing kubeconfig YAML: {0}")]
    Parse(#[source] kube::config::KubeconfigError),
    #[error("loading the kubeconfig's current context: {0}")]
    Load(#[source] kube::config::KubeconfigError),
    #[error("building a client: {0}")]
    Client(#[from] kube::Error),
    #[error(transparent)]
    NotWritten(#[from] crate::eventually::TimedOut),
}

/// The config of the current context of kubeconfig `yaml`.
pub async fn config_from_yaml(yaml: &str) -> Result<kube::Config, KubeconfigError> {
    load(Kubeconfig::from_yaml(yaml).map_err(KubeconfigError::Parse)?).await
}

/// A client for the current context of kubeconfig `yaml`.
pub async fn client_from_yaml(yaml: &str) -> Result<kube::Client, KubeconfigError> {
    Ok(kube::Client::try_from(config_from_yaml(yaml).await?)?)
}

/// The config of the current context of the kubeconfig file at `path`.
pub async fn config_from_file(path: &Path) -> Result<kube::Config, KubeconfigError> {
    let kubeconfig = Kubeconfig::read_from(path).map_err(|source| KubeconfigError::Read {
        path: path.display().to_string(),
        source,
    })?;
    load(kubeconfig).await
}

/// A client for the current context of the kubeconfig file at `path`.
pub async fn client_from_file(path: &Path) -> Result<kube::Client, KubeconfigError> {
    Ok(kube::Client::try_from(config_from_file(path).await?)?)
}

/// A client for the kubeconfig a starting server writes at `path` (`faros kcp
/// --admin-kubeconfig-file`), once the file is there and whole: a missing or half-written file is
/// read again until `timeout`.
pub async fn client_once_written(path: &Path, timeout: Duration) -> Result<kube::Client, KubeconfigError> {
    let what = format!("a kubeconfig at {}", path.display());
    Ok(crate::eventually(&what, timeout, || async {
        let Ok(yaml) = std::fs::read_to_string(path) else {
            return Ok(None);
        };
        Ok(Some(client_from_yaml(&yaml).await?))
    })
    .await?)
}

async fn load(kubeconfig: Kubeconfig) -> Result<kube::Config, KubeconfigError> {
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(KubeconfigError::Load)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
