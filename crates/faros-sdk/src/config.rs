//! Where a provider finds its kubeconfig: `FAROS_PROVIDER_KUBECONFIG` (default
//! `/var/run/secrets/faros/faros-provider-kubeconfig`, the mounted Secret the hub minted), else
//! `KUBECONFIG` / `~/.kube/config`, else the in-cluster ServiceAccount.

use std::path::{Path, PathBuf};

use faros_core::names;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Errors finding or reading the kubeconfig.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{var}={path} does not exist; point it at the provider kubeconfig the hub minted")]
    Missing { var: &'static str, path: String },
    #[error("reading kubeconfig {path}: {source}")]
    Kubeconfig {
        path: String,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("no kubeconfig: set {var} (or KUBECONFIG), or run in a cluster: {source}")]
    Infer {
        var: &'static str,
        #[source]
        source: kube::config::InferConfigError,
    },
}

/// The provider workspace's client configuration, following the precedence above.
pub async fn provider_config() -> Result<kube::Config, ConfigError> {
    let explicit = std::env::var(names::ENV_PROVIDER_KUBECONFIG)
        .ok()
        .filter(|s| !s.is_empty());
    let path = PathBuf::from(explicit.as_deref().unwrap_or(names::DEFAULT_PROVIDER_KUBECONFIG));
    if path.exists() {
        return from_file(&path).await;
    }
    if explicit.is_some() {
        return Err(ConfigError::Missing {
            var: names::ENV_PROVIDER_KUBECONFIG,
            path: path.display().to_string(),
        });
    }
    kube::Config::infer().await.map_err(|source| ConfigError::Infer {
        var: names::ENV_PROVIDER_KUBECONFIG,
        source,
    })
}

/// A configuration from one kubeconfig file (its current context).
pub async fn from_file(path: &Path) -> Result<kube::Config, ConfigError> {
    let err = |source| ConfigError::Kubeconfig {
        path: path.display().to_string(),
        source,
    };
    let kubeconfig = Kubeconfig::read_from(path).map_err(err)?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(err)
}
