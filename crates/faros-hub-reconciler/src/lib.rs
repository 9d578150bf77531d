//! `faros-hub-reconciler`: the workspace tree and the provisioning step of the provider lifecycle
//! (docs/architecture.md#provider-lifecycle).
//!
//! On start it bootstraps the faros workspace tree in kcp (retrying until kcp answers), then takes
//! part in leader election; the leader runs the Provider controller through the `admin.faros.sh`
//! virtual workspace. It talks to kcp only through kube-rs, so it runs unchanged against real kcp
//! and against the embedded one (`faros dev` composes it in-process through [`Reconciler`]).
//!
//! Layering: this file composes the modules and none imports it; what several share is a leaf
//! ([`message`] for kube error messages, [`state`] for what the health endpoints read,
//! [`controller::context`] for what every reconcile shares), so no two modules import each other.

pub mod bootstrap;
pub mod controller;
pub mod health;
pub mod identity;
pub mod kubeconfig;
pub mod leader;
pub mod message;
pub mod metrics;
pub mod mirror;
pub mod registrar;
pub mod revision;
pub mod state;
pub mod status;
pub mod tree;

pub use message::kube_message;
pub use mirror::MirrorConfig;
pub use state::State;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use faros_core::client::{ClientError, ClientFactory};
use faros_core::kcp::apis::v1alpha1::APIExportEndpointSlice;
use faros_core::names;
use faros_core::wait::wait_for;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use tokio_util::sync::CancellationToken;

use crate::bootstrap::BootstrapSettings;
use crate::leader::{LeaseSettings, Role};

/// Everything the reconciler needs; [`Config::new`] fills defaults that work in `faros dev`.
#[derive(Clone)]
pub struct Config {
    /// The reconciler's kcp identity: its own user after [`identity::grant`], or kcp's admin (any
    /// `/clusters/<x>` suffix on its URL is ignored).
    pub kube: kube::Config,
    /// Base URL written into provider kubeconfigs (`<hub-url>/clusters/<id>`). `None`: the kcp
    /// server itself, which is right when providers reach kcp directly (dev).
    pub hub_url: Option<String>,
    /// PEM CA written into provider kubeconfigs. `None`: the CA of `kube` (PEM-encoded).
    pub ca_pem: Option<String>,
    /// Write `insecure-skip-tls-verify: true` into provider kubeconfigs instead of a CA.
    pub insecure_provider_kubeconfigs: bool,
    /// Leader election.
    pub lease: LeaseSettings,
    /// Address of `/healthz`, `/readyz` and `/metrics`; `None` serves nothing (the caller may mount
    /// [`health::router`] itself).
    pub listen: Option<SocketAddr>,
    pub bootstrap: BootstrapSettings,
    pub controller: ControllerSettings,
    /// Mirror every provider kubeconfig Secret into a namespace of the hosting Kubernetes cluster
    /// (where the providers' pods mount them). `None`: off.
    pub mirror: Option<MirrorConfig>,
    /// The hub API's own kcp user: the reconciler grants it its roles in the tree on bootstrap and
    /// in each provider workspace it provisions ([`identity::hub`]). `None`: the hub runs as kcp's
    /// admin and needs no grant.
    pub hub_user: Option<String>,
}

/// Provider controller settings other than the kubeconfig contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControllerSettings {
    pub concurrency: usize,
    pub workspace_timeout: Duration,
    pub token_timeout: Duration,
    pub resync: Duration,
    /// How long to wait for the `admin.faros.sh` endpoint slice to publish a URL.
    pub endpoint_timeout: Duration,
}

impl Default for ControllerSettings {
    fn default() -> Self {
        Self {
            concurrency: 64,
            workspace_timeout: Duration::from_secs(60),
            token_timeout: Duration::from_secs(30),
            resync: Duration::from_secs(300),
            endpoint_timeout: Duration::from_secs(60),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The kube config holds credentials; show only where it points.
        f.debug_struct("Config")
            .field("kcp", &self.kube.cluster_url.to_string())
            .field("hub_url", &self.hub_url)
            .field("insecure_provider_kubeconfigs", &self.insecure_provider_kubeconfigs)
            .field("lease", &self.lease)
            .field("listen", &self.listen)
            .field("bootstrap", &self.bootstrap)
            .field("controller", &self.controller)
            .field("mirror", &self.mirror)
            .field("hub_user", &self.hub_user)
            .finish()
    }
}

impl Config {
    /// Defaults: lease `faros-hub-reconciler` (15 s / renew deadline 10 s / retry 2 s) with a random
    /// identity, no listener, hub URL and CA from `kube`, no kubeconfig mirror.
    pub fn new(kube: kube::Config) -> Self {
        Self {
            kube,
            hub_url: None,
            ca_pem: None,
            insecure_provider_kubeconfigs: false,
            lease: LeaseSettings {
                name: names::RECONCILER_LEASE.into(),
                namespace: names::SYSTEM_NAMESPACE.into(),
                identity: default_identity(),
                duration: Duration::from_secs(15),
                renew_deadline: Duration::from_secs(10),
                retry_period: Duration::from_secs(2),
            },
            listen: None,
            bootstrap: BootstrapSettings::default(),
            controller: ControllerSettings::default(),
            mirror: None,
            hub_user: None,
        }
    }
}

/// `<HOSTNAME or "faros-hub-reconciler">-<8 random hex>`: unique per process.
pub fn default_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "faros-hub-reconciler".into());
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    format!("{host}-{}", &suffix[..8])
}

/// Errors that stop the reconciler (everything else is retried and logged).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kcp client: {0}")]
    Client(#[from] ClientError),
    #[error("binding {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("kubeconfig mirror: {0}")]
    Mirror(#[from] mirror::MirrorError),
    #[error(
        "invalid lease timings: renew deadline {renew_deadline:?} must be shorter than the lease duration {duration:?}"
    )]
    LeaseTimings {
        duration: Duration,
        renew_deadline: Duration,
    },
}

/// A reconciler ready to run. Build it, keep [`Reconciler::state`] to observe it, then
/// [`Reconciler::run`] it.
pub struct Reconciler {
    config: Config,
    factory: ClientFactory,
    state: Arc<State>,
}

impl Reconciler {
    pub fn new(config: Config) -> Result<Self, Error> {
        if config.lease.renew_deadline >= config.lease.duration {
            return Err(Error::LeaseTimings {
                duration: config.lease.duration,
                renew_deadline: config.lease.renew_deadline,
            });
        }
        if let Some(mirror) = &config.mirror {
            mirror.validate()?;
        }
        let factory = ClientFactory::new(config.kube.clone())?;
        let mut metrics = metrics::Metrics::new();
        metrics.count_kube_requests(factory.requests());
        Ok(Self {
            config,
            factory,
            state: Arc::new(State::new(metrics)),
        })
    }

    pub fn state(&self) -> Arc<State> {
        self.state.clone()
    }

    /// Runs until `shutdown` completes: serves health (if configured), bootstraps, elects, and while
    /// leader runs the Provider controller. A leader releases its Lease on shutdown.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), Error> {
        // Built here rather than in `new`: a kube client needs the runtime.
        let mirror = self.config.mirror.as_ref().map(mirror::Mirror::new).transpose()?;
        if let Some(mirror) = &mirror {
            tracing::info!(
                namespace = mirror.namespace(),
                "mirroring provider kubeconfig Secrets into the hosting cluster"
            );
        }
        let cancel = CancellationToken::new();
        let mut background = tokio::task::JoinSet::new();
        if let Some(addr) = self.config.listen {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|source| Error::Listen { addr, source })?;
            tracing::info!(addr = %listener.local_addr().unwrap_or(addr), "serving /healthz, /readyz, /metrics");
            let app = health::router(self.state.clone());
            let stop = cancel.clone();
            background.spawn(async move {
                let served = axum::serve(listener, app)
                    .with_graceful_shutdown(stop.cancelled_owned())
                    .await;
                if let Err(error) = served {
                    tracing::error!(%error, "health server failed");
                }
            });
        }
        let mut work = std::pin::pin!(self.work(mirror, cancel.clone()));
        let finished = tokio::select! {
            _ = shutdown => false,
            _ = &mut work => true,
        };
        cancel.cancel();
        // Let the work wind down: a leader releases its lease on the way out.
        if !finished {
            work.await;
        }
        while background.join_next().await.is_some() {}
        Ok(())
    }

    /// Bootstrap, then supervise the controller by leadership. Returns only when `cancel` fires.
    async fn work(&self, mirror: Option<mirror::Mirror>, cancel: CancellationToken) {
        tracing::info!(kcp = %self.factory.server(), "bootstrapping the faros workspace tree");
        if !bootstrap::bootstrap_until_done(
            &self.factory,
            self.config.bootstrap,
            self.config.hub_user.as_deref(),
            &cancel,
        )
        .await
        {
            return;
        }
        self.state.set_bootstrapped();

        let lease_api: Api<Lease> = match self.factory.cluster(names::SYSTEM_CONTROLLERS_PATH) {
            Ok(client) => Api::namespaced(client, &self.config.lease.namespace),
            Err(error) => {
                tracing::error!(%error, "cannot build the lease client");
                return;
            }
        };
        // In a JoinSet so that dropping this future (a crash, in tests) stops the elector without
        // releasing the lease, exactly like a dead process.
        let mut elector = tokio::task::JoinSet::new();
        elector.spawn(leader::run(
            lease_api,
            self.config.lease.clone(),
            self.state.role.clone(),
            cancel.clone(),
        ));
        let mut roles = self.state.subscribe_role();
        let metrics = self.state.metrics.clone();
        loop {
            // Wait to lead.
            let leading = roles.wait_for(|r| *r == Role::Leader);
            tokio::select! {
                _ = cancel.cancelled() => break,
                r = leading => if r.is_err() { break },
            }
            metrics.set_leader(true);
            let term = cancel.child_token();
            // The GitOps registrar is the leader's too: it writes into the mirror namespace.
            let registrar = registrar::run(
                self.factory.clone(),
                self.controller_settings(),
                mirror.clone(),
                term.clone(),
            );
            let controller = futures::future::join(self.lead(mirror.clone(), term.clone()), registrar);
            let lost = roles.wait_for(|r| *r != Role::Leader);
            tokio::select! {
                _ = cancel.cancelled() => {}
                _ = lost => tracing::warn!("lost leadership; stopping the Provider controller"),
                _ = controller => {}
            }
            term.cancel();
            metrics.set_leader(false);
            if cancel.is_cancelled() {
                break;
            }
        }
        // The elector sees the same cancellation and releases the lease.
        while elector.join_next().await.is_some() {}
    }

    /// One leadership term: find the virtual workspace URL(s), run the controller until `term`
    /// ends, and restart it when the endpoint slice publishes other URLs (a restarted kcp, or one
    /// moved behind another address, rewrites them; the slice may still show the old ones when
    /// this term begins).
    async fn lead(&self, mirror: Option<mirror::Mirror>, term: CancellationToken) {
        let Some(mut endpoints) = self.changed_endpoints(&[], &term).await else {
            return;
        };
        loop {
            tracing::info!(?endpoints, "starting the Provider controller");
            let ctx = Arc::new(
                controller::Context::new(
                    self.factory.clone(),
                    self.controller_settings(),
                    self.state.metrics.clone(),
                )
                .with_mirror(mirror.clone()),
            );
            let run_term = term.child_token();
            let controller = controller::run(ctx, endpoints.clone(), run_term.clone());
            let next = tokio::select! {
                result = controller => {
                    if term.is_cancelled() {
                        return;
                    }
                    if let Err(error) = result {
                        tracing::error!(%error, "the Provider controller could not start; waiting for other endpoints");
                    }
                    self.changed_endpoints(&endpoints, &term).await
                }
                next = self.changed_endpoints(&endpoints, &term) => next,
            };
            run_term.cancel();
            match next {
                Some(urls) => {
                    tracing::info!(from = ?endpoints, to = ?urls, "the admin.faros.sh endpoints changed; restarting the Provider controller");
                    endpoints = urls;
                }
                None => return,
            }
        }
    }

    fn controller_settings(&self) -> controller::Settings {
        controller::Settings {
            hub_url: self
                .config
                .hub_url
                .clone()
                .unwrap_or_else(|| self.factory.server().to_string()),
            ca_pem: provider_ca_bundle(self.config.ca_pem.as_deref(), &self.config.kube),
            insecure_provider_kubeconfigs: self.config.insecure_provider_kubeconfigs,
            workspace_timeout: self.config.controller.workspace_timeout,
            token_timeout: self.config.controller.token_timeout,
            resync: self.config.controller.resync,
            concurrency: self.config.controller.concurrency,
            hub_user: self.config.hub_user.clone(),
        }
    }

    /// The admin endpoint slice's URLs once they are non-empty and differ from `current`; `None`
    /// when `term` ends first.
    async fn changed_endpoints(&self, current: &[String], term: &CancellationToken) -> Option<Vec<String>> {
        let mut delay = Duration::from_millis(100);
        loop {
            let found = tokio::select! {
                _ = term.cancelled() => return None,
                r = self.admin_endpoints(current) => r,
            };
            match found {
                Ok(urls) => return Some(urls),
                Err(error) if current.is_empty() => {
                    tracing::info!(%error, "waiting for the admin.faros.sh virtual workspace URL")
                }
                // Watching for a change that did not come within the timeout: watch again.
                Err(error) => tracing::debug!(%error, "admin.faros.sh endpoints unchanged"),
            }
            tokio::select! {
                _ = term.cancelled() => return None,
                _ = tokio::time::sleep(delay) => {}
            }
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }

    async fn admin_endpoints(&self, current: &[String]) -> Result<Vec<String>, String> {
        let client = self
            .factory
            .cluster(names::SYSTEM_CONTROLLERS_PATH)
            .map_err(|e| e.to_string())?;
        let slices: Api<APIExportEndpointSlice> = Api::all(client);
        let slice = wait_for(
            slices,
            names::ADMIN_EXPORT,
            |s| {
                let urls = endpoint_urls(s);
                !urls.is_empty() && urls != current
            },
            self.config.controller.endpoint_timeout,
        )
        .await
        .map_err(|e| e.to_string())?;
        Ok(endpoint_urls(slice.as_ref()))
    }
}

fn endpoint_urls(slice: Option<&APIExportEndpointSlice>) -> Vec<String> {
    slice
        .and_then(|s| s.status.as_ref())
        .and_then(|s| s.endpoints.as_ref())
        .map(|eps| eps.iter().map(|e| e.url.clone()).filter(|u| !u.is_empty()).collect())
        .unwrap_or_default()
}

/// Builds a [`Reconciler`] from `config` and runs it until `shutdown`.
pub async fn run(config: Config, shutdown: impl Future<Output = ()> + Send) -> Result<(), Error> {
    Reconciler::new(config)?.run(shutdown).await
}

/// The CA bundle written into provider kubeconfigs: the configured one (the hub's CA), plus the kcp
/// kubeconfig's CA certificates it lacks. Providers dial both: the hub through the kubeconfig's
/// server URL, and kcp's virtual workspaces at the URLs kcp publishes in endpoint slices. Without a
/// configured CA, kcp's alone.
pub fn provider_ca_bundle(configured: Option<&str>, kcp: &kube::Config) -> Option<String> {
    let Some(configured) = configured else {
        return ca_pem_of(kcp);
    };
    let present = pem_certificates(configured);
    let missing: Vec<Vec<u8>> = kcp
        .root_cert
        .iter()
        .flatten()
        .filter(|der| !present.contains(der))
        .cloned()
        .collect();
    if missing.is_empty() {
        return Some(configured.to_string());
    }
    let mut bundle = configured.to_string();
    if !bundle.ends_with('\n') {
        bundle.push('\n');
    }
    bundle.push_str(&der_to_pem(&missing));
    Some(bundle)
}

/// The DER certificates of a PEM bundle (unparseable blocks are skipped: they cannot match).
fn pem_certificates(pem: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut block: Option<String> = None;
    for line in pem.lines().map(str::trim) {
        match (line, block.as_mut()) {
            ("-----BEGIN CERTIFICATE-----", _) => block = Some(String::new()),
            ("-----END CERTIFICATE-----", Some(b64)) => {
                if let Ok(der) = base64::engine::general_purpose::STANDARD.decode(b64.as_bytes()) {
                    out.push(der);
                }
                block = None;
            }
            (text, Some(b64)) => b64.push_str(text),
            _ => {}
        }
    }
    out
}

/// The CA certificates of a kube config as PEM (kube keeps them as DER).
pub fn ca_pem_of(config: &kube::Config) -> Option<String> {
    let certs = config.root_cert.as_ref().filter(|c| !c.is_empty())?;
    Some(der_to_pem(certs))
}

/// PEM-encodes DER certificates, 64 base64 characters per line.
pub fn der_to_pem(ders: &[Vec<u8>]) -> String {
    let mut out = String::new();
    for der in ders {
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        out.push_str("-----BEGIN CERTIFICATE-----\n");
        for chunk in b64.as_bytes().chunks(64) {
            // base64 output is ASCII, so every chunk is valid UTF-8.
            out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
            out.push('\n');
        }
        out.push_str("-----END CERTIFICATE-----\n");
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn pem_encoding() {
        let der: Vec<u8> = (0u8..60).collect();
        let pem = der_to_pem(&[der.clone(), vec![1, 2, 3]]);
        let lines: Vec<&str> = pem.lines().collect();
        assert_eq!(lines[0], "-----BEGIN CERTIFICATE-----");
        assert_eq!(lines[1].len(), 64);
        assert_eq!(lines[3], "-----END CERTIFICATE-----");
        let body = format!("{}{}", lines[1], lines[2]);
        assert_eq!(base64::engine::general_purpose::STANDARD.decode(body).unwrap(), der);
        assert_eq!(
            &lines[4..],
            ["-----BEGIN CERTIFICATE-----", "AQID", "-----END CERTIFICATE-----"]
        );
    }

    #[test]
    fn provider_ca_bundle_adds_the_kcp_certificates_the_hub_ca_lacks() {
        let (hub, kcp, other) = (vec![1u8, 2, 3], vec![4u8, 5, 6], vec![7u8, 8, 9]);
        let mut config = kube::Config::new("https://kcp:6443".parse().unwrap());
        let hub_pem = der_to_pem(std::slice::from_ref(&hub));
        for (configured, kcp_certs, want) in [
            // No configured CA: kcp's alone.
            (None, vec![kcp.clone()], Some(der_to_pem(std::slice::from_ref(&kcp)))),
            (None, vec![], None),
            // One CA for both (faros dev): unchanged, byte for byte.
            (Some(hub_pem.clone()), vec![hub.clone()], Some(hub_pem.clone())),
            // Different CAs: the hub's first, then kcp's missing ones.
            (
                Some(hub_pem.clone()),
                vec![hub.clone(), kcp.clone(), other.clone()],
                Some(format!("{hub_pem}{}", der_to_pem(&[kcp.clone(), other.clone()]))),
            ),
            (Some(hub_pem.clone()), vec![], Some(hub_pem.clone())),
        ] {
            config.root_cert = (!kcp_certs.is_empty()).then_some(kcp_certs.clone());
            assert_eq!(
                provider_ca_bundle(configured.as_deref(), &config),
                want,
                "{kcp_certs:?}"
            );
        }
    }

    #[test]
    fn lease_timings_are_checked() {
        let mut config = Config::new(kube::Config::new("https://127.0.0.1:1".parse().unwrap()));
        config.lease.renew_deadline = config.lease.duration;
        assert!(matches!(Reconciler::new(config), Err(Error::LeaseTimings { .. })));
    }

    #[test]
    fn mirror_namespace_is_checked() {
        let kube = || kube::Config::new("https://127.0.0.1:1".parse().unwrap());
        let mut config = Config::new(kube());
        config.mirror = Some(MirrorConfig {
            namespace: "Not_A_Namespace".into(),
            kube: kube(),
        });
        let error = Reconciler::new(config).err().unwrap();
        assert!(matches!(
            error,
            Error::Mirror(mirror::MirrorError::InvalidNamespace { .. })
        ));
        assert!(error.to_string().contains("--mirror-namespace"), "{error}");
    }

    #[test]
    fn identities_are_unique() {
        assert_ne!(default_identity(), default_identity());
    }

    #[test]
    fn endpoint_urls_from_slice() {
        let slice: APIExportEndpointSlice = serde_json::from_value(serde_json::json!({
            "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExportEndpointSlice",
            "metadata": {"name": "admin.faros.sh"},
            "spec": {"export": {"name": "admin.faros.sh"}},
            "status": {"endpoints": [{"url": "https://kcp/services/apiexport/abc/admin.faros.sh"}, {"url": ""}]}
        }))
        .unwrap();
        assert_eq!(
            endpoint_urls(Some(&slice)),
            ["https://kcp/services/apiexport/abc/admin.faros.sh"]
        );
        assert!(endpoint_urls(None).is_empty());
    }
}
