//! The quickstart provider inside `faros dev`, going through the same steps as a real deployment:
//! apply its `Provider`, wait for the hub reconciler's kubeconfig Secret, run `init` with that
//! kubeconfig, then `serve` (controller, backend, MCP tools, UI assets, heartbeats to the hub).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use faros_core::client::ClientFactory;
use faros_core::names;
use faros_core::provider::Provider;
use faros_core::wait::wait_for;
use faros_provider_quickstart as qs;
use faros_sdk::app::{ServeOptions, shutdown_signal};
use faros_sdk::heartbeat::{HeartbeatConfig, TokenSource};
use faros_sdk::identity::IdentityVerifier;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{Patch, PatchParams};
use tokio::sync::watch;

/// How long the platform may take to provision the provider workspace.
const PROVISION_TIMEOUT: Duration = Duration::from_secs(120);

pub struct Dev {
    pub admin: kube::Config,
    pub state_dir: PathBuf,
    pub hub_url: String,
    pub ca_pem: String,
    /// Bound by the caller so the address is known before the provider is provisioned.
    pub listener: tokio::net::TcpListener,
}

pub async fn run(dev: Dev, stop: watch::Receiver<bool>) -> anyhow::Result<()> {
    let factory = ClientFactory::new(dev.admin.clone())?;
    let kubeconfig = provision(&factory, &qs::app().provider_manifest_path(), &dev.hub_url, &stop).await?;
    let Some(kubeconfig) = kubeconfig else { return Ok(()) };
    let path = dev.state_dir.join("quickstart.kubeconfig");
    faros_embedded_kcp::server::write_private(&path, kubeconfig.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    let parsed = kube::config::Kubeconfig::from_yaml(&kubeconfig).context("parsing the provider kubeconfig")?;
    let config = kube::Config::from_custom_kubeconfig(parsed, &Default::default()).await?;

    let listener = dev.listener;
    let url = format!("http://{}", listener.local_addr()?);

    // init, exactly as the provider's own `init` subcommand, with the URL it is really served on.
    let app = qs::app();
    let (schemas, manifest) = app.bundled_paths();
    let mut opts = app.init_options();
    opts.schemas_dir = schemas;
    opts.catalog_entry_file = Some(manifest);
    opts.env.insert("QUICKSTART_URL".into(), url.clone());
    let report = app.init(config.clone(), &opts).await.context("quickstart init")?;
    tracing::info!(objects = report.applied.len(), %url, "quickstart initialised");

    let verifier = IdentityVerifier::from_url(
        qs::PROVIDER,
        &IdentityVerifier::hub_jwks_url(&dev.hub_url),
        Some(dev.ca_pem.as_bytes()),
    )?;
    let mut heartbeat = HeartbeatConfig::new(&dev.hub_url, qs::PROVIDER, qs::VERSION);
    heartbeat.ca_pem = Some(dev.ca_pem.clone().into_bytes());
    heartbeat.token = TokenSource::Kubeconfig(path);
    // The revision init just published, as the provider's own `serve` reports it.
    heartbeat.revision = faros_sdk::heartbeat::serving_revision(qs::PROVIDER, &opts)?;
    let options = ServeOptions {
        provider: qs::PROVIDER.into(),
        verifier: Arc::new(verifier),
        kube: Some(config),
        heartbeat: Some(heartbeat),
        stats: Default::default(),
    };
    app.serve(options, listener, shutdown_signal(super::stopped(stop)))
        .await?;
    Ok(())
}

/// Applies the Provider in `manifest` and waits for its kubeconfig Secret (pointing at this run's
/// hub); None when asked to stop first.
pub(super) async fn provision(
    factory: &ClientFactory,
    manifest: &Path,
    hub_url: &str,
    stop: &watch::Receiver<bool>,
) -> anyhow::Result<Option<String>> {
    let text = std::fs::read_to_string(manifest).with_context(|| format!("reading {}", manifest.display()))?;
    let provider: Provider =
        serde_saphyr::from_str(&text).with_context(|| format!("parsing {}", manifest.display()))?;
    let name = provider.metadata.name.clone().unwrap_or_default();
    if name.is_empty() {
        bail!("{}: metadata.name: required", manifest.display());
    }
    let providers: Api<Provider> = Api::all(factory.cluster(names::SYSTEM_PROVIDERS_PATH)?);
    let params = PatchParams::apply("faros-dev").force();
    let deadline = tokio::time::Instant::now() + PROVISION_TIMEOUT;
    // The workspace holding Providers exists once the reconciler's bootstrap is done.
    let mut delay = Duration::from_millis(100);
    loop {
        if *stop.borrow() {
            return Ok(None);
        }
        match providers.patch(&name, &params, &Patch::Apply(&provider)).await {
            Ok(_) => break,
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::debug!(error = %e, provider = %name, "waiting for the hub bootstrap before registering the provider");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
            }
            Err(e) => bail!("registering the {name} Provider: {e}"),
        }
    }
    let secret_name = names::kubeconfig_secret_name(&name, None);
    let secrets: Api<Secret> = Api::namespaced(factory.cluster(names::SYSTEM_PROVIDERS_PATH)?, "default");
    // After a restart the Secret may still point at the previous run's hub port: wait until the
    // reconciler has rewritten it for this hub.
    let server = format!("server: {hub_url}/clusters/");
    let current = |s: Option<&Secret>| {
        s.and_then(|s| s.data.as_ref())
            .and_then(|d| d.get(names::KUBECONFIG_SECRET_KEY))
            .is_some_and(|k| String::from_utf8_lossy(&k.0).contains(&server))
    };
    let secret = wait_for(secrets, &secret_name, current, PROVISION_TIMEOUT)
        .await
        .with_context(|| format!("waiting for the {name} kubeconfig Secret"))?
        .context("the kubeconfig Secret disappeared")?;
    let data = secret.data.unwrap_or_default();
    let bytes = data
        .get(names::KUBECONFIG_SECRET_KEY)
        .context("the Secret has no kubeconfig key")?;
    Ok(Some(
        String::from_utf8(bytes.0.clone()).context("the kubeconfig is not UTF-8")?,
    ))
}
