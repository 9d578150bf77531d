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

/// Where [`provider_config`] takes the configuration from; `init` and `serve` log it, because the
/// fallback to `KUBECONFIG` is how an author's admin kubeconfig ends up being used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// `FAROS_PROVIDER_KUBECONFIG` names this file.
    Explicit(PathBuf),
    /// The mounted default `/var/run/secrets/faros/faros-provider-kubeconfig` exists.
    Mounted(PathBuf),
    /// Neither: kube's inference (`KUBECONFIG`, `~/.kube/config`, in-cluster ServiceAccount).
    Inferred,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Explicit(p) => write!(f, "{}={}", names::ENV_PROVIDER_KUBECONFIG, p.display()),
            Self::Mounted(p) => write!(f, "{} (the mounted provider kubeconfig)", p.display()),
            Self::Inferred => write!(
                f,
                "KUBECONFIG, ~/.kube/config or the in-cluster ServiceAccount ({} is unset and {} does not exist)",
                names::ENV_PROVIDER_KUBECONFIG,
                names::DEFAULT_PROVIDER_KUBECONFIG
            ),
        }
    }
}

/// The [`Source`] the environment selects.
pub fn source() -> Source {
    match std::env::var(names::ENV_PROVIDER_KUBECONFIG)
        .ok()
        .filter(|s| !s.is_empty())
    {
        Some(explicit) => Source::Explicit(explicit.into()),
        None => {
            let mounted = PathBuf::from(names::DEFAULT_PROVIDER_KUBECONFIG);
            if mounted.exists() {
                Source::Mounted(mounted)
            } else {
                Source::Inferred
            }
        }
    }
}

/// The provider workspace's client configuration, following the precedence above.
pub async fn provider_config() -> Result<kube::Config, ConfigError> {
    match source() {
        Source::Explicit(path) if !path.exists() => Err(ConfigError::Missing {
            var: names::ENV_PROVIDER_KUBECONFIG,
            path: path.display().to_string(),
        }),
        Source::Explicit(path) | Source::Mounted(path) => from_file(&path).await,
        Source::Inferred => kube::Config::infer().await.map_err(|source| ConfigError::Infer {
            var: names::ENV_PROVIDER_KUBECONFIG,
            source,
        }),
    }
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
