//! The hub API against an in-process embedded kcp, with the hub reconciler provisioning a real
//! provider workspace: registry from the virtual workspace watch, heartbeats by TokenReview, status
//! write-back, conflicts, restart recovery and the kcp pass-through with kube-rs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Upstream, WAIT, eventually, upstream};
use faros_core::catalog::{BackendSpec, CatalogEntry, CatalogEntrySpec, UiSpec};
use faros_core::client::ClientFactory;
use faros_core::conditions;
use faros_core::names;
use faros_core::provider::{Provider, ProviderSpec};
use faros_core::wait::wait_for;
use faros_embedded_kcp::{Config as KcpConfig, Server};
use faros_hub_api::catalog::clock::{Clock, ManualClock};
use faros_hub_api::{Config, Hub, Tls};
use faros_test_support::kubeconfig::config_from_yaml;
use faros_test_support::users::{static_token, write_token_file};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::Api;
use kube::api::{ListParams, PostParams};
use pretty_assertions::assert_eq;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

const ALICE: &str = "alice-token-0123456789abcdef";

/// The hub's serving certificate (self-signed, one per test process): kubectl sends bearer tokens
/// only over TLS, so the hub serves HTTPS here as in `faros dev`.
fn hub_cert() -> &'static (String, String) {
    static CERT: std::sync::OnceLock<(String, String)> = std::sync::OnceLock::new();
    CERT.get_or_init(|| {
        let c = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
        (c.cert.pem(), c.signing_key.serialize_pem())
    })
}

fn hub_tls(dir: &std::path::Path) -> Tls {
    let (cert, key) = hub_cert();
    let (cert_file, key_file) = (dir.join("hub.crt"), dir.join("hub.key"));
    std::fs::write(&cert_file, cert).unwrap();
    std::fs::write(&key_file, key).unwrap();
    Tls::Files {
        cert: cert_file,
        key: key_file,
    }
}

/// An HTTP client trusting the hub's certificate.
fn http() -> reqwest::Client {
    faros_test_support::https::client_trusting(hub_cert().0.as_bytes()).unwrap()
}

struct Kcp {
    server: Server,
    _dir: tempfile::TempDir,
}

impl Kcp {
    async fn start() -> Self {
        common::init_tracing_and_crypto();
        let dir = tempfile::tempdir().unwrap();
        let tokens = dir.path().join("tokens.csv");
        write_token_file(&tokens, &[static_token(ALICE, "alice", "alice-uid", &["devs"])]).unwrap();
        let mut config = KcpConfig::new(dir.path().join("state"));
        config.token_file = Some(tokens);
        let server = Server::start(config).await.unwrap();
        Self { server, _dir: dir }
    }

    async fn admin(&self) -> kube::Config {
        config_from_yaml(&self.server.admin_kubeconfig()).await.unwrap()
    }

    async fn client(&self, cluster: &str) -> kube::Client {
        ClientFactory::new(self.admin().await)
            .unwrap()
            .cluster(cluster)
            .unwrap()
    }
}

/// A hub API serving on its own listener with its background loops, stoppable.
struct RunningHub {
    url: String,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningHub {
    async fn start(kcp: &Kcp, listener: TcpListener, clock: Arc<ManualClock>) -> Self {
        let mut config = Config::new(kcp.admin().await);
        config.clock = clock;
        config.probe.interval = Duration::from_millis(200);
        config.catalog.sweep_interval = Duration::from_millis(200);
        config.catalog.retry_delay = Duration::from_millis(200);
        config.tls = Some(hub_tls(kcp._dir.path()));
        // Providers of this test listen on loopback, which the hub refuses by default.
        config.upstreams.allow = faros_hub_api::proxy::UpstreamPolicy::loopback();
        let hub = Hub::new(config).unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            hub.serve(listener, async {
                let _ = rx.await;
            })
            .await
            .unwrap();
        });
        Self {
            url,
            stop: Some(tx),
            task,
        }
    }

    /// Stops this hub and starts a fresh one (empty registry) on the same address.
    async fn restart(self, kcp: &Kcp, clock: Arc<ManualClock>) -> Self {
        let addr = self.url.trim_start_matches("https://").to_string();
        self.stop().await;
        let listener = TcpListener::bind(&addr).await.unwrap();
        Self::start(kcp, listener, clock).await
    }

    async fn stop(mut self) {
        let _ = self.stop.take().map(|s| s.send(()));
        tokio::time::timeout(WAIT, self.task).await.unwrap().unwrap();
    }
}

fn entry(name: &str, up: &Upstream) -> CatalogEntry {
    CatalogEntry::new(
        name,
        CatalogEntrySpec {
            display_name: "Quickstart".into(),
            ui: Some(UiSpec {
                url: Some(up.url("/ui")),
                ..Default::default()
            }),
            backend: Some(BackendSpec {
                url: up.url(""),
                health_path: None,
            }),
            ..Default::default()
        },
    )
}

fn ready_condition(ce: &CatalogEntry) -> Option<(String, String)> {
    let c = conditions::get(&ce.status.as_ref()?.conditions, names::CONDITION_READY)?;
    Some((c.status.clone(), c.reason.clone()))
}

async fn providers(hub: &str) -> Value {
    http()
        .get(format!("{hub}/api/providers"))
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_lifecycle_through_the_hub() {
    let kcp = Kcp::start().await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hub_url = format!("https://{}", listener.local_addr().unwrap());

    // The reconciler bootstraps the tree and mints kubeconfigs pointing at the hub.
    let mut rc = faros_hub_reconciler::Config::new(kcp.admin().await);
    rc.hub_url = Some(hub_url.clone());
    rc.ca_pem = Some(hub_cert().0.clone());
    rc.lease.duration = Duration::from_secs(3);
    rc.lease.renew_deadline = Duration::from_secs(2);
    rc.lease.retry_period = Duration::from_millis(250);
    let (rc_stop, rc_rx) = oneshot::channel::<()>();
    let reconciler = tokio::spawn(faros_hub_reconciler::run(rc, async {
        let _ = rc_rx.await;
    }));

    let clock = Arc::new(ManualClock::new(jiff::Timestamp::now()));
    let hub = RunningHub::start(&kcp, listener, clock.clone()).await;
    eventually("hub /readyz", WAIT, || async {
        let r = http().get(format!("{hub_url}/readyz")).send().await.ok()?;
        (r.status() == 200).then_some(())
    })
    .await;

    // Admin registers the provider; the reconciler provisions its workspace.
    let providers_api: Api<Provider> = Api::all(kcp.client(names::SYSTEM_PROVIDERS_PATH).await);
    providers_api
        .create(
            &PostParams::default(),
            &Provider::new("quickstart", ProviderSpec::default()),
        )
        .await
        .unwrap();
    wait_for(
        providers_api.clone(),
        "quickstart",
        |p| {
            p.and_then(|p| p.status.as_ref())
                .is_some_and(|s| conditions::is_true(&s.conditions, names::CONDITION_READY))
        },
        WAIT,
    )
    .await
    .unwrap();
    let secrets: Api<Secret> = Api::namespaced(kcp.client(names::SYSTEM_PROVIDERS_PATH).await, "default");
    let secret = secrets.get("quickstart-kubeconfig").await.unwrap();
    let yaml = String::from_utf8(secret.data.unwrap()["kubeconfig"].0.clone()).unwrap();
    let provider_config = config_from_yaml(&yaml).await.unwrap();
    assert!(
        provider_config.cluster_url.to_string().starts_with(&hub_url),
        "{}",
        provider_config.cluster_url
    );
    let token_secret: Api<Secret> = Api::namespaced(
        kcp.client(&names::provider_workspace_path("quickstart")).await,
        names::PROVIDER_NAMESPACE,
    );
    let sa_token = String::from_utf8(
        token_secret
            .get(names::PROVIDER_TOKEN_SECRET)
            .await
            .unwrap()
            .data
            .unwrap()["token"]
            .0
            .clone(),
    )
    .unwrap();

    // The provider's kubeconfig works through the hub's kcp pass-through with kube-rs.
    let provider = kube::Client::try_from(provider_config).unwrap();
    let namespaces: Vec<String> = Api::<Namespace>::all(provider.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|n| n.metadata.name.unwrap())
        .collect();
    assert!(namespaces.contains(&"default".to_string()), "{namespaces:?}");
    // ...and with kubectl.
    let kubeconfig_file = kcp._dir.path().join("provider.kubeconfig");
    std::fs::write(&kubeconfig_file, &yaml).unwrap();
    let out = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig_file)
        .args(["get", "namespaces", "-o", "name"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l == "namespace/default")
    );

    // It self-registers; the hub picks it up, probes the backend and routes.
    let up = upstream().await;
    let entries: Api<CatalogEntry> = Api::all(provider.clone());
    entries
        .create(&PostParams::default(), &entry("quickstart", &up))
        .await
        .unwrap();
    // The embedded kcp's virtual-workspace watch does not yet deliver objects of workspaces bound
    // after the watch started (real kcp does; see `new_providers_appear_without_a_restart`), so
    // restart the hub once here to have its watch start after the provider workspace was bound.
    let hub = hub.restart(&kcp, clock.clone()).await;
    let item = eventually("quickstart Ready in /api/providers", WAIT, || async {
        let list = providers(&hub_url).await;
        let item = list["items"]
            .as_array()?
            .iter()
            .find(|i| i["name"] == "quickstart")?
            .clone();
        (item["ready"] == true).then_some(item)
    })
    .await;
    assert_eq!(item["iconURL"], "/ui/providers/quickstart/icon.svg");
    let js = http()
        .get(format!("{hub_url}/ui/providers/quickstart/main.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(js.status(), 200);
    assert!(js.text().await.unwrap().contains("customElements.define("));
    let seen: Value = http()
        .get(format!("{hub_url}/services/providers/quickstart/api/hello"))
        .bearer_auth(ALICE)
        .header("x-faros-user", "spoofed")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(seen["headers"]["x-faros-user"], "alice");
    assert!(seen["headers"].get("authorization").is_none());

    // Heartbeats: only the provider's own ServiceAccount.
    let beat = |token: &str| {
        http()
            .post(format!("{hub_url}/api/providers/quickstart/heartbeat"))
            .bearer_auth(token)
            .json(&serde_json::json!({"version": "0.1.0", "status": "healthy"}))
            .send()
    };
    assert_eq!(beat(ALICE).await.unwrap().status(), 403);
    assert_eq!(beat(kcp.server.admin_token()).await.unwrap().status(), 403);
    assert_eq!(beat(&sa_token).await.unwrap().status(), 200);

    // Status write-back: endpoints, Ready, the persisted beat.
    let status = wait_for(
        entries.clone(),
        "quickstart",
        |e| {
            e.and_then(|e| e.status.as_ref())
                .is_some_and(|s| s.reported_version.as_deref() == Some("0.1.0"))
                && e.and_then(ready_condition) == Some(("True".into(), "EndpointsResolved".into()))
        },
        WAIT,
    )
    .await
    .unwrap()
    .unwrap()
    .status
    .unwrap();
    let persisted_beat = status.last_heartbeat.clone().unwrap().0;
    assert_eq!(status.endpoints.unwrap().ui.unwrap(), up.url("/ui"));
    assert_eq!(status.workspace.as_deref(), Some("root:faros:providers:quickstart"));
    let health = conditions::get(&status.conditions, "BackendHealthy").unwrap();
    assert_eq!((health.status.as_str(), health.reason.as_str()), ("True", "Healthy"));

    // An admin entry with the same name loses to the provider's own and is told so.
    let evil = upstream().await;
    let admin_entries: Api<CatalogEntry> = Api::all(kcp.client(names::SYSTEM_PROVIDERS_PATH).await);
    admin_entries
        .create(&PostParams::default(), &entry("quickstart", &evil))
        .await
        .unwrap();
    wait_for(
        admin_entries.clone(),
        "quickstart",
        |e| e.and_then(ready_condition) == Some(("False".into(), "Conflict".into())),
        WAIT,
    )
    .await
    .unwrap();
    let seen: Value = http()
        .get(format!("{hub_url}/ui/providers/quickstart/echo"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(seen["headers"]["host"], up.addr.to_string());

    // Silence: stale, UI 503, status says so.
    clock.advance(Duration::from_secs(91));
    let ui = http()
        .get(format!("{hub_url}/ui/providers/quickstart/main.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(ui.status(), 503);
    wait_for(
        entries.clone(),
        "quickstart",
        |e| e.and_then(ready_condition) == Some(("False".into(), "HeartbeatStale".into())),
        WAIT,
    )
    .await
    .unwrap();
    assert_eq!(beat(&sa_token).await.unwrap().status(), 200);
    assert_eq!(providers(&hub_url).await["items"][0]["ready"], true);

    // Restart: the new hub recovers liveness from status.
    let hub = hub.restart(&kcp, Arc::new(ManualClock::new(clock.now()))).await;
    let item = eventually("quickstart after restart", WAIT, || async {
        let list = providers(&hub.url).await;
        let item = list["items"]
            .as_array()?
            .iter()
            .find(|i| i["name"] == "quickstart")?
            .clone();
        (item["ready"] == true).then_some(item)
    })
    .await;
    let recovered: jiff::Timestamp = item["lastHeartbeat"].as_str().unwrap().parse().unwrap();
    assert!(recovered >= persisted_beat, "{recovered} < {persisted_beat}");
    assert_eq!(item["reportedVersion"], "0.1.0");

    hub.stop().await;
    let _ = rc_stop.send(());
    tokio::time::timeout(WAIT, reconciler).await.unwrap().unwrap().unwrap();
    kcp.server.shutdown().await;
}

/// A provider registering while the hub runs shows up without a restart (the watch sees objects of
/// workspaces bound after it started).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_providers_appear_without_a_restart() {
    let kcp = Kcp::start().await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hub_url = format!("https://{}", listener.local_addr().unwrap());
    let mut rc = faros_hub_reconciler::Config::new(kcp.admin().await);
    rc.hub_url = Some(hub_url.clone());
    rc.ca_pem = Some(hub_cert().0.clone());
    let (rc_stop, rc_rx) = oneshot::channel::<()>();
    let reconciler = tokio::spawn(faros_hub_reconciler::run(rc, async {
        let _ = rc_rx.await;
    }));
    let hub = RunningHub::start(&kcp, listener, Arc::new(ManualClock::new(jiff::Timestamp::now()))).await;
    eventually("hub /readyz", WAIT, || async {
        let r = http().get(format!("{hub_url}/readyz")).send().await.ok()?;
        (r.status() == 200).then_some(())
    })
    .await;
    let providers_api: Api<Provider> = Api::all(kcp.client(names::SYSTEM_PROVIDERS_PATH).await);
    providers_api
        .create(&PostParams::default(), &Provider::new("late", ProviderSpec::default()))
        .await
        .unwrap();
    wait_for(
        providers_api,
        "late",
        |p| {
            p.and_then(|p| p.status.as_ref())
                .is_some_and(|s| conditions::is_true(&s.conditions, names::CONDITION_READY))
        },
        WAIT,
    )
    .await
    .unwrap();
    let up = upstream().await;
    let entries: Api<CatalogEntry> = Api::all(kcp.client(&names::provider_workspace_path("late")).await);
    entries
        .create(&PostParams::default(), &entry("late", &up))
        .await
        .unwrap();
    eventually("late in /api/providers", WAIT, || async {
        let list = providers(&hub_url).await;
        list["items"]
            .as_array()?
            .iter()
            .find(|i| i["name"] == "late")
            .map(|_| ())
    })
    .await;
    hub.stop().await;
    let _ = rc_stop.send(());
    tokio::time::timeout(WAIT, reconciler).await.unwrap().unwrap().unwrap();
    kcp.server.shutdown().await;
}

/// `/healthz` answers as soon as the hub serves; `/readyz` stays 503, naming the workspace it waits
/// for, until the reconciler has bootstrapped the faros tree (what a chart's readiness probe gates on).
#[tokio::test]
async fn readyz_waits_for_the_workspace_tree_healthz_does_not() {
    let kcp = Kcp::start().await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hub = RunningHub::start(&kcp, listener, Arc::new(ManualClock::new(jiff::Timestamp::now()))).await;
    let url = hub.url.clone();
    eventually("hub /healthz", WAIT, || async {
        let r = http().get(format!("{url}/healthz")).send().await.ok()?;
        (r.status() == 200).then_some(())
    })
    .await;
    let resp = http().get(format!("{url}/readyz")).send().await.unwrap();
    assert_eq!(resp.status(), 503);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["reason"], "ServiceUnavailable");
    assert!(
        body["message"].as_str().unwrap().contains("root:faros:tenants"),
        "{body}"
    );

    let mut rc = faros_hub_reconciler::Config::new(kcp.admin().await);
    rc.hub_url = Some(url.clone());
    let (rc_stop, rc_rx) = oneshot::channel::<()>();
    let reconciler = tokio::spawn(faros_hub_reconciler::run(rc, async {
        let _ = rc_rx.await;
    }));
    eventually("hub /readyz", WAIT, || async {
        let r = http().get(format!("{url}/readyz")).send().await.ok()?;
        (r.status() == 200).then_some(())
    })
    .await;
    let _ = rc_stop.send(());
    reconciler.await.unwrap().unwrap();
    hub.stop().await;
}
