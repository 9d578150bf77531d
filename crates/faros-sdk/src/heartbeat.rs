//! The heartbeat client: `POST <hub>/api/providers/<name>/heartbeat` `{"version","status"}` at once,
//! then every 30 s with ±10 % jitter (so a fleet restarted together does not beat in lockstep).
//!
//! A failed beat is retried sooner, backing off 1 s, 2 s, 4 s … up to the interval, so a provider
//! comes back Ready quickly after a hub restart without hammering a hub that is down. Each request
//! has a 5 s timeout. The bearer token (the provider's ServiceAccount token) is re-read whenever the
//! mounted file changes (mtime or size), so a rotated Secret is picked up without a restart. Only
//! transitions are logged (first success, first failure, recovery), not every beat.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use faros_core::catalog::CatalogEntrySpec;
use faros_core::{names, revision};
use rand::Rng;
use serde::Serialize;

use crate::bootstrap::InitOptions;
use crate::bootstrap::inputs::{self, InputError};
use crate::bootstrap::objects;

/// The extra CA (PEM) a provider trusts for the hub; named in TLS failures.
pub const ENV_HUB_CA_FILE: &str = "FAROS_HUB_CA_FILE";

/// Shortest retry delay after a failure.
pub const BACKOFF_MIN: Duration = Duration::from_secs(1);
/// Fraction of the interval added or removed at random.
pub const JITTER: f64 = 0.1;

/// Errors of one beat.
#[derive(Debug, thiserror::Error)]
pub enum BeatError {
    #[error("heartbeat to {url}: {source}")]
    Request {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error(
        "heartbeat to {url}: the hub's TLS certificate is not trusted ({detail}); set {ENV_HUB_CA_FILE} to the \
         hub's CA certificate (PEM; `faros dev` writes it to <state-dir>/ca.crt, default .faros/ca.crt)"
    )]
    UntrustedHub {
        url: String,
        detail: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("heartbeat to {url}: hub answered {status}: {body}")]
    Status { url: String, status: u16, body: String },
    #[error("reading token file {path}: {source}")]
    Token {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("building the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

impl BeatError {
    /// The hub answered 503: it is starting (or briefly unavailable) and asks to be retried.
    pub fn is_hub_starting(&self) -> bool {
        matches!(self, BeatError::Status { status: 503, .. })
    }
}

/// The heartbeat body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Beat {
    pub version: String,
    pub status: String,
    /// The ProviderRevision this process serves ([`serving_revision`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

/// The ProviderRevision a provider serves: [`revision::revision_name`] of the CatalogEntry spec
/// `init` publishes from the same inputs (the catalog entry file, with the schemas it records), so
/// it is the name the hub gives the revision it reads back from the provider's workspace. The
/// defaults the CatalogEntry CRD fills in are filled in first, as the hub hashes the stored spec.
/// `None` without a catalog entry file (nothing is published, so there is no revision to name).
pub fn serving_revision(provider: &str, opts: &InitOptions) -> Result<Option<String>, InputError> {
    let Some(file) = &opts.catalog_entry_file else {
        return Ok(None);
    };
    // As `init` reads them: the export's own group unless groups are given.
    let groups = match opts.groups.is_empty() {
        true => vec![opts.export.clone()],
        false => opts.groups.clone(),
    };
    let schemas = inputs::require_schemas(&opts.schemas_dir, &groups, &opts.env)?;
    let mut entry = inputs::require_catalog_entry(file, &opts.export, &opts.env)?;
    entry.spec.schemas = Some(objects::published_schemas(&schemas));
    Ok(Some(revision::revision_name(provider, &with_crd_defaults(entry.spec))))
}

/// `spec` as the API server stores it: the CatalogEntry CRD defaults the backend's `healthPath`
/// and the UI's `indexPath`.
fn with_crd_defaults(mut spec: CatalogEntrySpec) -> CatalogEntrySpec {
    if let Some(backend) = spec.backend.as_mut() {
        backend
            .health_path
            .get_or_insert_with(|| names::DEFAULT_HEALTH_PATH.into());
    }
    if let Some(ui) = spec.ui.as_mut() {
        ui.index_path.get_or_insert_with(|| names::DEFAULT_INDEX_PATH.into());
    }
    spec
}

/// Where the bearer token comes from.
#[derive(Clone, Debug, Default)]
pub enum TokenSource {
    /// No `Authorization` header.
    #[default]
    None,
    /// A fixed token.
    Static(String),
    /// A file holding the token (a mounted ServiceAccount token), re-read when it changes.
    File(PathBuf),
    /// The token of the current user in a kubeconfig file (the minted provider kubeconfig).
    Kubeconfig(PathBuf),
}

/// Heartbeat settings.
#[derive(Clone, Debug)]
pub struct HeartbeatConfig {
    /// Hub base URL, e.g. `https://hub.example.com`.
    pub hub_url: String,
    pub provider: String,
    pub version: String,
    pub token: TokenSource,
    pub interval: Duration,
    /// Fraction of `interval` added or removed at random; 0 disables jitter.
    pub jitter: f64,
    pub timeout: Duration,
    /// Extra PEM CA to trust (the hub's CA in `faros dev`).
    pub ca_pem: Option<Vec<u8>>,
    /// The ProviderRevision reported in every beat ([`serving_revision`]); `None` reports none.
    pub revision: Option<String>,
}

impl HeartbeatConfig {
    /// Defaults: every 30 s ± 10 %, 5 s timeout (docs/provider-sdk.md#heartbeats-faros_sdkheartbeat).
    pub fn new(hub_url: &str, provider: &str, version: &str) -> Self {
        Self {
            hub_url: hub_url.trim_end_matches('/').to_string(),
            provider: provider.into(),
            version: version.into(),
            token: TokenSource::None,
            interval: names::HEARTBEAT_INTERVAL,
            jitter: JITTER,
            timeout: names::HEARTBEAT_TIMEOUT,
            ca_pem: None,
            revision: None,
        }
    }

    /// `<hub>/api/providers/<name>/heartbeat`.
    pub fn url(&self) -> String {
        format!("{}{}", self.hub_url, names::heartbeat_path(&self.provider))
    }
}

/// Sends one beat; the HTTP implementation is [`HttpTransport`], tests substitute their own.
pub trait Transport: Send + Sync {
    fn send(&self, beat: &Beat) -> impl Future<Output = Result<(), BeatError>> + Send;
}

/// Beats over HTTP with reqwest.
pub struct HttpTransport {
    url: String,
    client: reqwest::Client,
    token: TokenCache,
}

impl HttpTransport {
    pub fn new(config: &HeartbeatConfig) -> Result<Self, BeatError> {
        let mut builder = reqwest::Client::builder().timeout(config.timeout);
        if let Some(pem) = &config.ca_pem {
            let ca = reqwest::Certificate::from_pem(pem).map_err(BeatError::Client)?;
            builder = builder.add_root_certificate(ca);
        }
        Ok(Self {
            url: config.url(),
            client: builder.build().map_err(BeatError::Client)?,
            token: TokenCache::new(config.token.clone()),
        })
    }
}

impl Transport for HttpTransport {
    async fn send(&self, beat: &Beat) -> Result<(), BeatError> {
        let mut request = self.client.post(&self.url).json(beat);
        if let Some(token) = self.token.get()? {
            request = request.bearer_auth(token);
        }
        let response = request
            .send()
            .await
            .map_err(|source| request_error(&self.url, source))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let mut body = response.text().await.unwrap_or_default();
        body.truncate(512);
        Err(BeatError::Status {
            url: self.url.clone(),
            status: status.as_u16(),
            body,
        })
    }
}

/// A failed request; a certificate the client does not trust gets its own error, because the fix
/// (`FAROS_HUB_CA_FILE`) is not guessable from a bare TLS message.
fn request_error(url: &str, source: reqwest::Error) -> BeatError {
    match untrusted_certificate(&source) {
        Some(detail) => BeatError::UntrustedHub {
            url: url.to_string(),
            detail,
            source,
        },
        None => BeatError::Request {
            url: url.to_string(),
            source,
        },
    }
}

/// rustls' certificate-verification message somewhere in the error chain. (Matched on the text,
/// which rustls keeps stable, so the SDK need not depend on rustls just to downcast.)
fn untrusted_certificate(error: &reqwest::Error) -> Option<String> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = next {
        let text = e.to_string();
        if let Some(at) = text.find("invalid peer certificate") {
            return Some(text[at..].to_string());
        }
        next = e.source();
    }
    None
}

/// The token, re-read from its file only when the file's (mtime, size) changed.
struct TokenCache {
    source: TokenSource,
    cached: Mutex<Option<(SystemTime, u64, String)>>,
}

impl TokenCache {
    fn new(source: TokenSource) -> Self {
        Self {
            source,
            cached: Mutex::new(None),
        }
    }

    fn get(&self) -> Result<Option<String>, BeatError> {
        let path = match &self.source {
            TokenSource::None => return Ok(None),
            TokenSource::Static(t) => return Ok(Some(t.clone())),
            TokenSource::File(p) | TokenSource::Kubeconfig(p) => p,
        };
        let err = |source| BeatError::Token {
            path: path.display().to_string(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(err)?;
        let stamp = (meta.modified().map_err(err)?, meta.len());
        // A poisoned lock only means another beat panicked mid-read; the cache is still usable.
        let mut cached = self.cached.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((mtime, len, token)) = cached.as_ref()
            && (*mtime, *len) == stamp
        {
            return Ok(Some(token.clone()));
        }
        let text = std::fs::read_to_string(path).map_err(err)?;
        let token = match &self.source {
            TokenSource::Kubeconfig(_) => kubeconfig_token(&text).ok_or_else(|| {
                err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "kubeconfig has no token for its current user",
                ))
            })?,
            _ => text.trim().to_string(),
        };
        *cached = Some((stamp.0, stamp.1, token.clone()));
        Ok(Some(token))
    }
}

/// The bearer token of the current context's user (read as plain YAML: kube keeps tokens in a
/// secret wrapper that is deliberately hard to read back out).
fn kubeconfig_token(text: &str) -> Option<String> {
    let kc: serde_json::Value = serde_saphyr::from_str(text).ok()?;
    let named = |list: &str, name: &str| {
        kc.get(list)?
            .as_array()?
            .iter()
            .find(|e| e.get("name").and_then(|n| n.as_str()) == Some(name))
            .cloned()
    };
    let context_name = kc.get("current-context").and_then(|c| c.as_str())?;
    let context = named("contexts", context_name)?;
    let user = context.pointer("/context/user")?.as_str()?;
    let token = named("users", user)?.pointer("/user/token")?.as_str()?.to_string();
    Some(token)
}

/// The beat schedule: what to wait after a success or after the `n`th consecutive failure.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    pub interval: Duration,
    pub jitter: f64,
}

impl Schedule {
    /// Delay before the next beat. `failures` is the number of consecutive failures so far.
    pub fn next_delay(&self, failures: u32, rng: &mut impl Rng) -> Duration {
        let base = if failures == 0 {
            self.interval
        } else {
            let exp = BACKOFF_MIN.saturating_mul(1u32 << (failures - 1).min(16));
            exp.min(self.interval)
        };
        if self.jitter <= 0.0 {
            return base;
        }
        let factor = 1.0 + rng.random_range(-self.jitter..=self.jitter);
        base.mul_f64(factor.max(0.0))
    }
}

/// The beat loop. `status` is asked for the current status string before every beat.
pub struct Heartbeat<T> {
    transport: T,
    schedule: Schedule,
    version: String,
    revision: Option<String>,
    status: Box<dyn Fn() -> String + Send + Sync>,
}

impl Heartbeat<HttpTransport> {
    /// A heartbeat over HTTP reporting status `healthy`.
    pub fn http(config: &HeartbeatConfig) -> Result<Self, BeatError> {
        Ok(Self::with_transport(HttpTransport::new(config)?, config))
    }
}

impl<T: Transport> Heartbeat<T> {
    pub fn with_transport(transport: T, config: &HeartbeatConfig) -> Self {
        Self {
            transport,
            schedule: Schedule {
                interval: config.interval,
                jitter: config.jitter,
            },
            version: config.version.clone(),
            revision: config.revision.clone(),
            status: Box::new(|| "healthy".to_string()),
        }
    }

    /// Reports what `status` returns instead of `healthy`.
    pub fn status_fn(mut self, status: impl Fn() -> String + Send + Sync + 'static) -> Self {
        self.status = Box::new(status);
        self
    }

    /// Sends one beat.
    pub async fn beat_once(&self) -> Result<(), BeatError> {
        let beat = Beat {
            version: self.version.clone(),
            status: (self.status)(),
            revision: self.revision.clone(),
        };
        self.transport.send(&beat).await
    }

    /// Beats until `shutdown` completes.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut failures: u32 = 0;
        let mut ever_succeeded = false;
        loop {
            match self.beat_once().await {
                Ok(()) => {
                    if failures > 0 {
                        tracing::info!(failures, "heartbeat recovered");
                    } else if !ever_succeeded {
                        tracing::info!("heartbeat accepted by the hub");
                    }
                    ever_succeeded = true;
                    failures = 0;
                }
                Err(e) => {
                    if failures == 0 && !ever_succeeded && e.is_hub_starting() {
                        // A hub that is still starting answers 503 with Retry-After: expected.
                        tracing::info!(error = %e, "the hub is still starting; retrying the heartbeat");
                    } else if failures == 0 {
                        tracing::warn!(error = %e, "heartbeat failed; retrying with backoff");
                    } else {
                        tracing::debug!(error = %e, failures, "heartbeat still failing");
                    }
                    failures = failures.saturating_add(1);
                }
            }
            let delay = self.schedule.next_delay(failures, &mut rand::rng());
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = &mut shutdown => return,
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::Router;
    use axum::extract::State;
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::post;
    use rand::SeedableRng;
    use tokio::time::Instant;

    #[test]
    fn the_revision_hashes_the_spec_as_stored_with_the_crds_defaults() {
        let spec = |extra: serde_json::Value| -> CatalogEntrySpec {
            let mut v = serde_json::json!({"displayName": "Q", "apiExport": {"name": "q.example.io"},
                "backend": {"url": "http://q"}, "ui": {"url": "http://q/ui"}});
            for (k, e) in extra.as_object().unwrap() {
                v[k].as_object_mut().unwrap().extend(e.as_object().unwrap().clone());
            }
            serde_json::from_value(v).unwrap()
        };
        let omitted = with_crd_defaults(spec(serde_json::json!({})));
        let explicit = spec(serde_json::json!({"backend": {"healthPath": "/healthz"}, "ui": {"indexPath": "/"}}));
        assert_eq!(
            revision::revision_name("q", &omitted),
            revision::revision_name("q", &explicit)
        );
        let other = with_crd_defaults(spec(serde_json::json!({"backend": {"healthPath": "/ready"}})));
        assert_ne!(
            revision::revision_name("q", &other),
            revision::revision_name("q", &explicit),
            "a path the provider sets is kept"
        );
    }

    #[test]
    fn schedule_backs_off_and_jitters_within_bounds() {
        let s = Schedule {
            interval: Duration::from_secs(30),
            jitter: 0.0,
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let delays: Vec<u64> = (0..8).map(|f| s.next_delay(f, &mut rng).as_secs()).collect();
        assert_eq!(delays, vec![30, 1, 2, 4, 8, 16, 30, 30]);
        let s = Schedule { jitter: 0.1, ..s };
        for _ in 0..200 {
            let d = s.next_delay(0, &mut rng);
            assert!(d >= Duration::from_secs(27) && d <= Duration::from_secs(33), "{d:?}");
        }
    }

    /// Records when each beat was sent; fails the beats listed in `fail`.
    struct Recorder {
        start: Instant,
        at: Arc<Mutex<Vec<Duration>>>,
        fail: Vec<usize>,
    }

    impl Transport for Recorder {
        async fn send(&self, _beat: &Beat) -> Result<(), BeatError> {
            let mut at = self.at.lock().unwrap();
            let n = at.len();
            at.push(self.start.elapsed());
            if self.fail.contains(&n) {
                Err(BeatError::Status {
                    url: "test".into(),
                    status: 503,
                    body: String::new(),
                })
            } else {
                Ok(())
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn cadence_is_immediate_then_interval_with_backoff_on_failure() {
        let at = Arc::new(Mutex::new(Vec::new()));
        let mut config = HeartbeatConfig::new("http://hub", "q", "0.1.0");
        config.jitter = 0.0;
        let recorder = Recorder {
            start: Instant::now(),
            at: at.clone(),
            fail: vec![2, 3, 4],
        };
        let hb = Heartbeat::with_transport(recorder, &config);
        let stop = tokio::time::sleep(Duration::from_secs(120));
        hb.run(stop).await;
        let secs: Vec<u64> = at.lock().unwrap().iter().map(|d| d.as_secs()).collect();
        // 0 ok, 30 ok, 60 fail (+1), 61 fail (+2), 63 fail (+4), 67 ok (+30), 97 ok.
        assert_eq!(secs, vec![0, 30, 60, 61, 63, 67, 97]);
    }

    #[derive(Default)]
    struct Seen {
        beats: Mutex<Vec<(Option<String>, serde_json::Value)>>,
        fail_next: AtomicUsize,
    }

    async fn hub(State(seen): State<Arc<Seen>>, headers: HeaderMap, body: String) -> StatusCode {
        let auth = headers.get("authorization").map(|v| v.to_str().unwrap().to_string());
        seen.beats
            .lock()
            .unwrap()
            .push((auth, serde_json::from_str(&body).unwrap()));
        if seen.fail_next.load(Ordering::SeqCst) > 0 {
            seen.fail_next.fetch_sub(1, Ordering::SeqCst);
            return StatusCode::SERVICE_UNAVAILABLE;
        }
        StatusCode::OK
    }

    async fn serve() -> (String, Arc<Seen>) {
        let seen = Arc::new(Seen::default());
        let app = Router::new()
            .route("/api/providers/quickstart/heartbeat", post(hub))
            .with_state(seen.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, seen)
    }

    #[tokio::test]
    async fn http_beats_carry_body_and_rotated_token() {
        let (url, seen) = serve().await;
        let dir = tempfile::tempdir().unwrap();
        let token_file = dir.path().join("token");
        std::fs::write(&token_file, "token-one\n").unwrap();
        let mut config = HeartbeatConfig::new(&format!("{url}/"), "quickstart", "0.1.0");
        config.token = TokenSource::File(token_file.clone());
        let hb = Heartbeat::http(&config).unwrap();
        hb.beat_once().await.unwrap();
        hb.beat_once().await.unwrap();
        // Rotation: same length, so only the mtime tells the files apart.
        std::fs::write(&token_file, "token-two\n").unwrap();
        let later = SystemTime::now() + Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&token_file)
            .unwrap()
            .set_modified(later)
            .unwrap();
        hb.beat_once().await.unwrap();
        seen.fail_next.store(1, Ordering::SeqCst);
        let err = hb.beat_once().await.unwrap_err();
        assert!(matches!(err, BeatError::Status { status: 503, .. }), "{err}");
        let beats = seen.beats.lock().unwrap().clone();
        let auths: Vec<&str> = beats.iter().map(|(a, _)| a.as_deref().unwrap()).collect();
        assert_eq!(
            auths,
            vec![
                "Bearer token-one",
                "Bearer token-one",
                "Bearer token-two",
                "Bearer token-two"
            ]
        );
        assert_eq!(beats[0].1, serde_json::json!({"version": "0.1.0", "status": "healthy"}));
    }

    #[tokio::test]
    async fn kubeconfig_token_source_and_unreachable_hub() {
        let dir = tempfile::tempdir().unwrap();
        let kc = dir.path().join("kubeconfig");
        std::fs::write(
            &kc,
            "apiVersion: v1\nkind: Config\ncurrent-context: faros\nclusters: [{name: faros, cluster: {server: 'https://h'}}]\n\
             contexts: [{name: faros, context: {cluster: faros, user: faros}}]\nusers: [{name: faros, user: {token: sa-token}}]\n",
        )
        .unwrap();
        let cache = TokenCache::new(TokenSource::Kubeconfig(kc));
        assert_eq!(cache.get().unwrap().as_deref(), Some("sa-token"));
        let missing = TokenCache::new(TokenSource::File(dir.path().join("nope")));
        assert!(matches!(missing.get(), Err(BeatError::Token { .. })));

        // Nothing listens on the port any more: a request error, not a panic or a hang.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let hb = Heartbeat::http(&HeartbeatConfig::new(&url, "quickstart", "0.1.0")).unwrap();
        assert!(matches!(hb.beat_once().await, Err(BeatError::Request { .. })));
    }
}
