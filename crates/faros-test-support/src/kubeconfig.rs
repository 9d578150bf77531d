//! kube configs and clients from kubeconfig YAML (a minted provider kubeconfig, the embedded kcp's
//! admin kubeconfig, what the hub hands a tenant) or from a kubeconfig file.

use std::path::Path;

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

async fn load(kubeconfig: Kubeconfig) -> Result<kube::Config, KubeconfigError> {
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(KubeconfigError::Load)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
