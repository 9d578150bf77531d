//! `faros kcp`: the embedded kcp served alone, for clusters without real kcp (the `faros-kcp` Helm
//! chart runs it as a one-replica StatefulSet). `faros dev` composes the same server in process.
//!
//! Besides serving, it hands its admin kubeconfig to whoever needs it: as a file
//! (`--admin-kubeconfig-file`) and/or as a Secret in the hosting cluster
//! (`--admin-kubeconfig-secret`), the way kcp's own chart and operator publish an admin kubeconfig.
//! The kubeconfig's server is the external URL (`--external-url`, e.g. the Service's DNS name), and
//! its CA is the server's own generated CA, whose serving certificate covers every `--hostname`.
//!
//! With `--hub-kubeconfig-secret` / `--reconciler-kubeconfig-secret` it also mints the hub API's and
//! the hub reconciler's own kcp users (docs/install.md#kcp-identities): their tokens are made once
//! and kept in the state directory, listed in a token file only this server reads
//! ([`crate::identities`]); on every start it grants them what `faros grant --hub-user` grants (it
//! is admin of itself), then publishes a kubeconfig Secret per component, so neither pod needs the
//! admin kubeconfig.
//!
//! With `--hub-signing-key-secret` it also makes the hub API's identity-assertion signing key, once,
//! in the state directory (by the hub's own key store, so in the format of the hub's
//! `--signing-key-file`), and publishes it on every start as a Secret, key `signing-key.json`: every
//! hub replica mounts it and signs with the one key providers trust. No chart can make that Secret
//! itself without a random value at render time, which GitOps tools would see change on every render.
//!
//! What it must not do: run the hub or anything else (that is `faros dev`), or write to the hosting
//! cluster beyond the Secrets it is told to publish.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use faros_core::names::{HUB_KCP_USER, RECONCILER_KCP_USER};
use faros_embedded_kcp::{Config, Server};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};

/// Field manager of the Secrets this server publishes.
const FIELD_MANAGER: &str = "faros-kcp";
/// Longest pause between attempts to grant the components or publish a Secret.
const PUBLISH_RETRY_MAX: Duration = Duration::from_secs(30);
/// Longest wait of one grant for an existing faros workspace to be Ready (as `faros grant`'s default).
const GRANT_TIMEOUT: Duration = Duration::from_secs(120);
/// Key of the kubeconfig in each component's Secret.
pub const COMPONENT_KUBECONFIG_KEY: &str = "kubeconfig";
/// Key of the hub's signing key file in its Secret (the hub chart's `signingKey.key` default).
pub const HUB_SIGNING_KEY_KEY: &str = "signing-key.json";
/// The hub's signing key file in the state directory (the name `faros dev` gives it in its own).
pub const HUB_SIGNING_KEY_FILE: &str = "hub-signing-key.json";

#[derive(Args, Debug, Clone)]
pub struct KcpArgs {
    /// Address to listen on.
    #[arg(long, env = "FAROS_KCP_LISTEN", default_value = "0.0.0.0:6443")]
    pub listen: SocketAddr,
    /// Directory for the data file, CA, serving certificate, admin token and ServiceAccount key
    /// (a persistent volume in a cluster).
    #[arg(long, env = "FAROS_STATE_DIR", default_value = "/var/lib/faros-kcp")]
    pub state_dir: PathBuf,
    /// The URL clients reach this server at, e.g. `https://faros-kcp.faros.svc:6443`: published in
    /// workspace and endpoint slice URLs and in the admin kubeconfig. Default: `https://<listen>`.
    #[arg(long, env = "FAROS_KCP_EXTERNAL_URL")]
    pub external_url: Option<String>,
    /// Extra DNS name or IP for the serving certificate (repeatable); localhost and 127.0.0.1 are
    /// always included, and so is the external URL's host.
    #[arg(long = "hostname", env = "FAROS_KCP_HOSTNAMES", value_delimiter = ',')]
    pub hostnames: Vec<String>,
    /// Static token file in kcp's format (`token,user,uid,"group1,group2"`), reloaded when it changes.
    #[arg(long, env = "FAROS_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "FAROS_KCP_MAX_BODY_BYTES", default_value_t = 3 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Number of change events kept in memory for watch resumption.
    #[arg(long, env = "FAROS_KCP_WATCH_HISTORY", default_value_t = 10_000)]
    pub watch_history: usize,
    /// Commit each write on its own instead of batching concurrent writes into one durable commit.
    #[arg(long, env = "FAROS_KCP_NO_GROUP_COMMIT", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_group_commit: bool,
    /// Write the admin kubeconfig (root workspace) to this file (mode 0600).
    #[arg(long, env = "FAROS_KCP_ADMIN_KUBECONFIG_FILE")]
    pub admin_kubeconfig_file: Option<PathBuf>,
    /// Publish the admin kubeconfig as this Secret in the hosting cluster (created or updated).
    #[arg(long, env = "FAROS_KCP_ADMIN_KUBECONFIG_SECRET")]
    pub admin_kubeconfig_secret: Option<String>,
    /// Namespace of the Secrets this server publishes (the admin's and the components'). Default:
    /// the namespace of the pod's ServiceAccount.
    #[arg(long, env = "FAROS_KCP_ADMIN_KUBECONFIG_SECRET_NAMESPACE")]
    pub admin_kubeconfig_secret_namespace: Option<String>,
    /// Key of the kubeconfig in that Secret (kcp's chart and operator use `admin.kubeconfig`).
    #[arg(
        long,
        env = "FAROS_KCP_ADMIN_KUBECONFIG_SECRET_KEY",
        default_value = "admin.kubeconfig"
    )]
    pub admin_kubeconfig_secret_key: String,
    /// Mint the hub API's own kcp user (`faros-hub-api`), grant it as `faros grant --hub-user`
    /// does, and publish its kubeconfig as this Secret (key `kubeconfig`) in the hosting cluster.
    #[arg(long, env = "FAROS_KCP_HUB_KUBECONFIG_SECRET")]
    pub hub_kubeconfig_secret: Option<String>,
    /// Mint the hub reconciler's own kcp user (`faros-hub-reconciler`), grant it as `faros grant`
    /// does, and publish its kubeconfig as this Secret (key `kubeconfig`) in the hosting cluster.
    #[arg(long, env = "FAROS_KCP_RECONCILER_KUBECONFIG_SECRET")]
    pub reconciler_kubeconfig_secret: Option<String>,
    /// Make the hub API's identity-assertion signing key once (in the state directory, in the format
    /// of the hub's `--signing-key-file`) and publish it as this Secret (key `signing-key.json`) in
    /// the hosting cluster, for every hub replica to mount.
    #[arg(long, env = "FAROS_KCP_HUB_SIGNING_KEY_SECRET")]
    pub hub_signing_key_secret: Option<String>,
    /// Kubeconfig of the hosting cluster, for publishing the Secret. Default: the in-cluster
    /// ServiceAccount (never `$KUBECONFIG`, so a stray variable cannot redirect it).
    #[arg(long, env = "FAROS_HOSTING_KUBECONFIG")]
    pub hosting_kubeconfig: Option<PathBuf>,
    /// OIDC users (kcp's `--oidc-*` flags).
    #[command(flatten)]
    pub oidc: crate::oidc::OidcArgs,
}

impl KcpArgs {
    /// Whether the components' own kcp users are minted (either of their Secrets is asked for).
    pub fn mints_components(&self) -> bool {
        self.hub_kubeconfig_secret.is_some() || self.reconciler_kubeconfig_secret.is_some()
    }

    /// The embedded kcp's configuration; checks the external URL.
    pub fn server_config(&self) -> anyhow::Result<Config> {
        let mut config = Config::new(&self.state_dir);
        config.listen = self.listen;
        config.token_file = self.token_file.clone();
        if self.mints_components() {
            config.extra_token_files = vec![self.state_dir.join(crate::identities::TOKEN_FILE)];
        }
        config.max_body_bytes = self.max_body_bytes;
        config.history_capacity = self.watch_history;
        // As fast as kcp: no pause between workspace phases.
        config.phase_delay = std::time::Duration::ZERO;
        config.group_commit = !self.no_group_commit;
        config.oidc = crate::oidc::settings(&self.oidc)?;
        config.hostnames = self.hostnames.iter().filter(|h| !h.is_empty()).cloned().collect();
        if let Some(url) = &self.external_url {
            let host = external_host(url)?;
            if !config.hostnames.contains(&host) {
                config.hostnames.push(host);
            }
            config.external_url = Some(url.trim_end_matches('/').to_string());
        }
        Ok(config)
    }
}

/// The host of `--external-url`, which must be an `https` URL with no path.
fn external_host(url: &str) -> anyhow::Result<String> {
    let parsed: http::Uri = url
        .parse()
        .with_context(|| format!("--external-url {url:?} is not a URL"))?;
    if parsed.scheme_str() != Some("https") {
        bail!("--external-url {url:?} must be an https:// URL (the server only speaks TLS)");
    }
    if !matches!(parsed.path(), "" | "/") || parsed.query().is_some() {
        bail!("--external-url {url:?} must not have a path: clients add /clusters/<workspace> themselves");
    }
    let host = parsed
        .host()
        .with_context(|| format!("--external-url {url:?} has no host"))?;
    // `[::1]` in a URL is `::1` in a certificate.
    Ok(host.trim_start_matches('[').trim_end_matches(']').to_string())
}

/// The hub's signing key file, made in `state_dir` on the first call and the same bytes on every
/// later one. The hub's own key store makes it, so it is exactly what the hub's `--signing-key-file`
/// loads (an ES256 PKCS#8 key and the retired public keys, owner-only on disk).
pub fn hub_signing_key(state_dir: &Path) -> anyhow::Result<Vec<u8>> {
    let path = state_dir.join(HUB_SIGNING_KEY_FILE);
    faros_hub_api::keys::KeyStore::load_or_create(&path).context("making the hub's signing key")?;
    std::fs::read(&path).with_context(|| format!("reading {}", path.display()))
}

/// Serves until SIGINT/SIGTERM.
pub async fn run(args: KcpArgs) -> anyhow::Result<()> {
    if args.mints_components() || args.hub_signing_key_secret.is_some() {
        // The state directory is the server's (owner-only); made here because the token file must
        // exist before the server reads it, and the signing key is made beside it.
        faros_embedded_kcp::state_dir::secure(&args.state_dir)?;
    }
    let identities = if args.mints_components() {
        Some(crate::identities::ensure(&args.state_dir)?)
    } else {
        None
    };
    let signing_key = match &args.hub_signing_key_secret {
        Some(_) => Some(hub_signing_key(&args.state_dir)?),
        None => None,
    };
    let server = Server::start(args.server_config()?)
        .await
        .context("starting the embedded kcp")?;
    let kubeconfig = server.admin_kubeconfig();
    if let Some(path) = &args.admin_kubeconfig_file {
        faros_embedded_kcp::server::write_private(path, kubeconfig.as_bytes())
            .with_context(|| format!("writing --admin-kubeconfig-file {}", path.display()))?;
        tracing::info!(path = %path.display(), "admin kubeconfig written");
    }
    // What goes to the hosting cluster, retried until it lands; served alongside until SIGTERM.
    // (Not spawned: the grants' futures are not `Send` for every lifetime, as `spawn` needs.)
    let mut admin_secret = None;
    let mut key_secret = None;
    let mut components = None;
    if args.admin_kubeconfig_secret.is_some() || identities.is_some() || signing_key.is_some() {
        let hosting = Hosting::resolve(&args).await?;
        if let Some(name) = &args.admin_kubeconfig_secret {
            admin_secret = Some(hosting.target(name, &args.admin_kubeconfig_secret_key, "the admin kubeconfig"));
        }
        if let (Some(name), Some(key)) = (&args.hub_signing_key_secret, signing_key) {
            key_secret = Some((hosting.target(name, HUB_SIGNING_KEY_KEY, "the hub's signing key"), key));
        }
        if let Some(ids) = identities {
            let admin = server
                .admin_config("root")
                .await
                .context("loading the admin kubeconfig")?;
            let admin = faros_core::client::ClientFactory::new(admin).context("a kcp client for the grants")?;
            let mut targets = Vec::new();
            for (secret, user, token) in [
                (&args.hub_kubeconfig_secret, HUB_KCP_USER, &ids.hub),
                (&args.reconciler_kubeconfig_secret, RECONCILER_KCP_USER, &ids.reconciler),
            ] {
                if let Some(name) = secret {
                    let target = hosting.target(name, COMPONENT_KUBECONFIG_KEY, &format!("the kubeconfig of {user}"));
                    targets.push((target, server.kubeconfig("root", user, token).into_bytes()));
                }
            }
            components = Some((admin, targets));
        }
    }
    let publish = async {
        let admin = async {
            if let Some(target) = admin_secret {
                target.publish_until_done(kubeconfig.into_bytes()).await;
            }
        };
        // Not after the grants: the key is the hub's whatever its kcp user may do.
        let key = async {
            if let Some((target, key)) = key_secret {
                target.publish_until_done(key).await;
            }
        };
        let components = async {
            if let Some((admin, targets)) = components {
                grant_until_done(&admin).await;
                for (target, kubeconfig) in targets {
                    target.publish_until_done(kubeconfig).await;
                }
            }
        };
        tokio::join!(admin, key, components);
        std::future::pending::<()>().await
    };
    tracing::info!(url = %server.url(), "faros kcp is serving");
    tokio::select! {
        () = faros_core::telemetry::shutdown_signal() => {}
        () = publish => {}
    }
    server.shutdown().await;
    Ok(())
}

/// Grants both components' users what they use, as `faros grant --hub-user` does (idempotent, so on
/// every start: organizations made since are covered), retrying with backoff until it succeeds;
/// their kubeconfigs are published only after, so a component never starts on a user not granted yet.
async fn grant_until_done(admin: &faros_core::client::ClientFactory) {
    use faros_hub_reconciler::identity;
    let mut delay = Duration::from_millis(500);
    loop {
        let granted = async {
            identity::grant(admin, RECONCILER_KCP_USER, GRANT_TIMEOUT)
                .await
                .context("granting the reconciler's kcp user")?;
            identity::grant_hub(admin, HUB_KCP_USER, GRANT_TIMEOUT)
                .await
                .context("granting the hub API's kcp user")?;
            anyhow::Ok(())
        }
        .await;
        match granted {
            Ok(()) => {
                tracing::info!(
                    reconciler = RECONCILER_KCP_USER,
                    hub = HUB_KCP_USER,
                    "granted the components their kcp users"
                );
                return;
            }
            Err(e) => {
                tracing::warn!(error = format!("{e:#}"), retry_in = ?delay, "cannot grant the components their kcp users yet");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(PUBLISH_RETRY_MAX);
            }
        }
    }
}

/// The hosting cluster's API and the namespace the Secrets go to.
struct Hosting {
    client: kube::Client,
    namespace: String,
}

impl Hosting {
    async fn resolve(args: &KcpArgs) -> anyhow::Result<Self> {
        let config = match &args.hosting_kubeconfig {
            Some(path) => {
                let kubeconfig = kube::config::Kubeconfig::read_from(path)
                    .with_context(|| format!("reading --hosting-kubeconfig {}", path.display()))?;
                kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                    .await
                    .with_context(|| format!("loading --hosting-kubeconfig {}", path.display()))?
            }
            None => kube::Config::incluster().context(
                "publishing Secrets needs the hosting cluster's API: run in a pod with a \
                 ServiceAccount token, or pass --hosting-kubeconfig",
            )?,
        };
        let namespace = args
            .admin_kubeconfig_secret_namespace
            .clone()
            .unwrap_or_else(|| config.default_namespace.clone());
        let client = kube::Client::try_from(config).context("building the hosting cluster client")?;
        Ok(Self { client, namespace })
    }

    /// Where `what` goes: Secret `name`, under `key`.
    fn target(&self, name: &str, key: &str, what: &str) -> SecretTarget {
        SecretTarget {
            api: Api::namespaced(self.client.clone(), &self.namespace),
            namespace: self.namespace.clone(),
            name: name.to_string(),
            key: key.to_string(),
            what: what.to_string(),
        }
    }
}

/// Where one published Secret goes.
struct SecretTarget {
    api: Api<Secret>,
    namespace: String,
    name: String,
    key: String,
    /// What it holds, for the log (never the value).
    what: String,
}

impl SecretTarget {
    fn secret(&self, value: &[u8]) -> Secret {
        let mut secret = Secret::default();
        secret.metadata.name = Some(self.name.clone());
        secret.metadata.namespace = Some(self.namespace.clone());
        secret.metadata.labels = Some(
            [(
                faros_core::names::LABEL_MANAGED_BY.to_string(),
                faros_core::names::MANAGED_BY_FAROS.to_string(),
            )]
            .into(),
        );
        secret.type_ = Some("Opaque".into());
        secret.data = Some([(self.key.clone(), k8s_openapi::ByteString(value.to_vec()))].into());
        secret
    }

    /// Applies the Secret, retrying with backoff until it lands: the API or the Role may come up
    /// after this pod, and the components waiting on the Secret have nothing else to go on.
    async fn publish_until_done(self, value: Vec<u8>) {
        let secret = self.secret(&value);
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let mut delay = Duration::from_millis(500);
        loop {
            match self.api.patch(&self.name, &params, &Patch::Apply(&secret)).await {
                Ok(_) => {
                    tracing::info!(namespace = %self.namespace, name = %self.name, key = %self.key, what = %self.what, "Secret published");
                    return;
                }
                Err(e) => {
                    tracing::warn!(namespace = %self.namespace, name = %self.name, what = %self.what, error = %e, retry_in = ?delay, "cannot publish the Secret yet");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(PUBLISH_RETRY_MAX);
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        kcp: KcpArgs,
    }

    fn parse(args: &[&str]) -> KcpArgs {
        Cli::try_parse_from(std::iter::once("kcp").chain(args.iter().copied()))
            .unwrap()
            .kcp
    }

    #[test]
    fn external_url_host_joins_the_certificate_names() {
        let args = parse(&[
            "--external-url",
            "https://faros-kcp.faros.svc:6443/",
            "--hostname",
            "faros-kcp,faros-kcp.faros",
            "--hostname",
            "kcp.example.com",
        ]);
        let config = args.server_config().unwrap();
        assert_eq!(config.external_url.as_deref(), Some("https://faros-kcp.faros.svc:6443"));
        assert_eq!(
            config.hostnames,
            ["faros-kcp", "faros-kcp.faros", "kcp.example.com", "faros-kcp.faros.svc"]
        );
    }

    #[test]
    fn bad_external_urls_are_refused_by_name() {
        for (url, needle) in [
            ("http://kcp:6443", "must be an https:// URL"),
            ("https://kcp:6443/clusters/root", "must not have a path"),
            ("not a url", "is not a URL"),
        ] {
            let err = parse(&["--external-url", url]).server_config().unwrap_err();
            let text = format!("{err:#}");
            assert!(
                text.contains("--external-url") && text.contains(needle),
                "{url}: {text}"
            );
        }
    }

    #[test]
    fn component_secrets_add_the_kcp_only_token_file() {
        assert!(parse(&[]).server_config().unwrap().extra_token_files.is_empty());
        for flag in ["--hub-kubeconfig-secret", "--reconciler-kubeconfig-secret"] {
            let config = parse(&["--state-dir", "/s", flag, "x"]).server_config().unwrap();
            assert_eq!(
                config.extra_token_files,
                [PathBuf::from("/s").join(crate::identities::TOKEN_FILE)],
                "{flag}"
            );
        }
    }

    #[test]
    fn the_signing_key_secret_alone_mints_no_component_user() {
        let args = parse(&["--state-dir", "/s", "--hub-signing-key-secret", "k"]);
        assert_eq!(args.hub_signing_key_secret.as_deref(), Some("k"));
        assert!(!args.mints_components());
        assert!(args.server_config().unwrap().extra_token_files.is_empty());
    }

    #[test]
    fn the_hub_signing_key_is_made_once_and_is_what_the_hub_loads() {
        let state = tempfile::tempdir().unwrap();
        let first = hub_signing_key(state.path()).unwrap();
        // Every start publishes the same key: replicas and providers' cached JWKS stay valid.
        assert_eq!(hub_signing_key(state.path()).unwrap(), first);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(state.path().join(HUB_SIGNING_KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "the key file is owner-only: {mode:o}");
        }
        // What a hub replica mounts from the Secret, loaded as its `--signing-key-file`.
        let mounted = tempfile::tempdir().unwrap();
        let path = mounted.path().join(HUB_SIGNING_KEY_KEY);
        std::fs::write(&path, &first).unwrap();
        let file: serde_json::Value = serde_json::from_slice(&first).unwrap();
        let kid = file["current"]["kid"].as_str().unwrap();
        for _replica in 0..2 {
            let store = faros_hub_api::keys::KeyStore::load_or_create(&path).unwrap();
            assert_eq!(store.jwks().keys[0].kid, kid);
        }
        assert_eq!(std::fs::read(&path).unwrap(), first, "loading does not rewrite it");
    }

    #[test]
    fn ipv6_external_host_is_a_bare_address() {
        assert_eq!(external_host("https://[::1]:6443").unwrap(), "::1");
    }
}
