//! The one kube client factory.
//!
//! kcp addresses a logical cluster by URL prefix (`/clusters/<path|name|*>`), and an APIExport virtual
//! workspace by its own URL plus the same prefix. Components talk to many workspaces, so the factory
//! builds every client on one shared connection pool (one TLS connector, one pool of keep-alive
//! connections) and only varies the base URI. kube-rs keeps any path of the base URL when joining request
//! paths, which is what makes this work.

use std::path::PathBuf;
use std::sync::Arc;

use hyper_util::client::legacy::Client as PoolClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

pub mod requests;

pub use requests::KubeRequests;

/// Errors building clients.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("invalid kube configuration: {0}")]
    Config(#[source] kube::Error),
    #[error("invalid URL {url:?}: {reason}")]
    Url { url: String, reason: String },
    #[error("reading the kcp kubeconfig {path} (--kubeconfig, FAROS_KCP_KUBECONFIG): {source}")]
    ReadKubeconfig {
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("loading kcp credentials from {from}: {source}")]
    LoadKubeconfig {
        from: String,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("no kcp credentials: pass --kubeconfig (FAROS_KCP_KUBECONFIG), set $KUBECONFIG, or run in a pod: {0}")]
    Infer(#[source] kube::config::InferConfigError),
}

/// How a component finds kcp: the one pair of flags (and environment names) every faros binary
/// that talks to kcp as its admin takes, so charts and scripts set them the same way everywhere.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct KcpArgs {
    /// Admin kubeconfig for kcp. Unset: $KUBECONFIG, ~/.kube/config, then in-cluster.
    #[arg(long = "kubeconfig", env = "FAROS_KCP_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Context in that kubeconfig (default: its current context).
    #[arg(long = "context", env = "FAROS_KCP_CONTEXT")]
    pub context: Option<String>,
}

impl KcpArgs {
    /// The kube configuration these flags select.
    pub async fn load(&self) -> Result<Config, ClientError> {
        let options = KubeConfigOptions {
            context: self.context.clone(),
            ..Default::default()
        };
        match &self.kubeconfig {
            Some(path) => {
                let kubeconfig = Kubeconfig::read_from(path).map_err(|source| ClientError::ReadKubeconfig {
                    path: path.clone(),
                    source,
                })?;
                Config::from_custom_kubeconfig(kubeconfig, &options)
                    .await
                    .map_err(|source| ClientError::LoadKubeconfig {
                        from: path.display().to_string(),
                        source,
                    })
            }
            None if self.context.is_some() => {
                Config::from_kubeconfig(&options)
                    .await
                    .map_err(|source| ClientError::LoadKubeconfig {
                        from: "the default kubeconfig".into(),
                        source,
                    })
            }
            None => Config::infer().await.map_err(ClientError::Infer),
        }
    }
}

type Pool = PoolClient<hyper_rustls::HttpsConnector<HttpConnector>, kube::client::Body>;

/// Builds kube clients for kcp logical clusters and virtual workspaces over one connection pool.
#[derive(Clone)]
pub struct ClientFactory {
    config: Arc<Config>,
    /// The server root: the configured cluster URL with any `/clusters/...` suffix removed.
    server: String,
    pool: Pool,
    /// Every request any client of this factory sends, by verb.
    requests: KubeRequests,
}

impl std::fmt::Debug for ClientFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Deliberately omits the config: it holds credentials.
        f.debug_struct("ClientFactory").field("server", &self.server).finish()
    }
}

impl ClientFactory {
    /// A factory for the server `config` points at. A `/clusters/<x>` suffix on the configured URL
    /// (as in kcp kubeconfigs) is dropped: callers name the cluster per client.
    pub fn new(config: Config) -> Result<Self, ClientError> {
        let server = server_root(&config.cluster_url.to_string());
        let connector = config.rustls_https_connector().map_err(ClientError::Config)?;
        let pool = PoolClient::builder(TokioExecutor::new()).build(connector);
        Ok(Self {
            config: Arc::new(config),
            server,
            pool,
            requests: KubeRequests::default(),
        })
    }

    /// The requests every client of this factory has sent, by verb (for the component's `/metrics`).
    pub fn requests(&self) -> &KubeRequests {
        &self.requests
    }

    /// The server root URL, without a trailing slash or cluster prefix.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The configuration the factory was built from.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// A client for logical cluster `cluster` (a path like `root:faros`, a cluster name, or `*`).
    pub fn cluster(&self, cluster: &str) -> Result<Client, ClientError> {
        self.at(&format!("{}/clusters/{cluster}", self.server))
    }

    /// A client for the root workspace.
    pub fn root(&self) -> Result<Client, ClientError> {
        self.cluster("root")
    }

    /// A client for a virtual workspace URL (e.g. an APIExport endpoint) scoped to one logical cluster
    /// name, or to all of them with `*`.
    pub fn virtual_workspace(&self, url: &str, cluster: &str) -> Result<Client, ClientError> {
        self.at(&format!("{}/clusters/{cluster}", url.trim_end_matches('/')))
    }

    /// A client whose every request path is prefixed by `url`.
    pub fn at(&self, url: &str) -> Result<Client, ClientError> {
        let uri: http::Uri = url.parse().map_err(|e: http::uri::InvalidUri| ClientError::Url {
            url: url.into(),
            reason: e.to_string(),
        })?;
        if uri.scheme().is_none() || uri.authority().is_none() {
            return Err(ClientError::Url {
                url: url.into(),
                reason: "must be an absolute http(s) URL".into(),
            });
        }
        let mut config = (*self.config).clone();
        config.cluster_url = uri;
        let requests = self.requests.clone();
        let service = tower::ServiceBuilder::new()
            .map_request(move |request: http::Request<kube::client::Body>| {
                requests.record(&request);
                request
            })
            .layer(config.base_uri_layer())
            .layer(config.extra_headers_layer().map_err(ClientError::Config)?)
            .option_layer(config.auth_layer().map_err(ClientError::Config)?)
            .map_err(tower::BoxError::from)
            .service(self.pool.clone());
        Ok(Client::new(service, config.default_namespace))
    }
}

/// Strips a trailing slash and any `/clusters/<x>[/...]` suffix from a server URL.
pub fn server_root(url: &str) -> String {
    let url = url.trim_end_matches('/');
    match url.find("/clusters/") {
        Some(i) => url[..i].to_string(),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_root_drops_cluster_suffix() {
        for (input, want) in [
            ("https://127.0.0.1:6443", "https://127.0.0.1:6443"),
            ("https://127.0.0.1:6443/", "https://127.0.0.1:6443"),
            ("https://h:6443/clusters/root", "https://h:6443"),
            ("https://h:6443/clusters/root:faros:system", "https://h:6443"),
            ("https://h/prefix/clusters/abc/", "https://h/prefix"),
        ] {
            assert_eq!(server_root(input), want, "{input}");
        }
    }

    #[tokio::test]
    async fn kcp_args_name_the_flag_and_file_they_failed_on() {
        let dir = std::env::temp_dir().join(format!("faros-kcp-args-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.kubeconfig");
        let err = KcpArgs {
            kubeconfig: Some(missing.clone()),
            context: None,
        }
        .load()
        .await
        .unwrap_err()
        .to_string();
        assert!(
            err.contains(&missing.display().to_string()) && err.contains("FAROS_KCP_KUBECONFIG"),
            "{err}"
        );

        let file = dir.join("admin.kubeconfig");
        std::fs::write(
            &file,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kcp\n  cluster: {server: 'https://127.0.0.1:6443/clusters/root'}\n\
             users:\n- name: admin\n  user: {token: t}\ncontexts:\n- name: admin\n  context: {cluster: kcp, user: admin}\n\
             - name: other\n  context: {cluster: kcp, user: admin, namespace: ns}\ncurrent-context: admin\n",
        )
        .unwrap();
        let current = KcpArgs {
            kubeconfig: Some(file.clone()),
            context: None,
        };
        assert_eq!(current.load().await.unwrap().default_namespace, "default");
        let other = KcpArgs {
            kubeconfig: Some(file.clone()),
            context: Some("other".into()),
        };
        assert_eq!(other.load().await.unwrap().default_namespace, "ns");
        let unknown = KcpArgs {
            kubeconfig: Some(file),
            context: Some("nope".into()),
        };
        let err = unknown.load().await.unwrap_err().to_string();
        assert!(err.contains("admin.kubeconfig") && err.contains("nope"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn rejects_relative_urls() {
        let config = Config::new("https://127.0.0.1:6443/clusters/root".parse().unwrap());
        let factory = ClientFactory::new(config).unwrap();
        assert_eq!(factory.server(), "https://127.0.0.1:6443");
        assert!(factory.at("/clusters/x").is_err());
        assert!(factory.cluster("root:faros").is_ok());
    }
}
