//! The federation state shared by every workspace endpoint: per-provider discovery cache, the
//! published set of Ready providers (what sessions watch for `list_changed`), and call routing.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

use faros_core::status::Status;
use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Tool};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio::sync::{OnceCell, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::describe::{EnabledProvider, WorkspaceDescription};
use super::naming;
use super::upstream::{self, McpClientError, McpClients};
use super::{Directory, McpSettings, WorkspaceCtx};
use crate::catalog::registry::{Registry, View};
use crate::keys::KeyStore;
use crate::metrics::Metrics;
use crate::proxy::UpstreamPolicy;

/// What identifies one incarnation of a Ready provider: any change invalidates its discovered
/// tools and tells sessions their tool set may have changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    pub mcp_url: String,
    pub generation: Option<i64>,
    pub entry_cluster: String,
    pub display_name: String,
}

impl Fingerprint {
    fn of(view: &View) -> Option<Self> {
        let p = &view.provider;
        Some(Self {
            mcp_url: upstream::mcp_url(p.endpoints.backend.as_ref()?),
            generation: p.generation,
            entry_cluster: p.entry_cluster.clone(),
            display_name: naming::display_name(&p.name, &p.spec.display_name).to_string(),
        })
    }
}

/// The providers that could be federated right now (Ready, with a backend), and the bindings
/// epoch; published to sessions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub ready: Arc<BTreeMap<String, Fingerprint>>,
    pub bindings: u64,
}

/// What one workspace's session sees: its federated providers and their incarnations.
pub type ToolSetKey = Vec<(String, Fingerprint)>;

/// The federated providers of a workspace, given its enabled list.
pub fn tool_set_key(snapshot: &Snapshot, enabled: &[String]) -> ToolSetKey {
    let mut key: ToolSetKey = enabled
        .iter()
        .filter_map(|n| Some((n.clone(), snapshot.ready.get(n)?.clone())))
        .collect();
    key.sort_by(|a, b| a.0.cmp(&b.0));
    key.dedup_by(|a, b| a.0 == b.0);
    key
}

/// Result of one provider's discovery (already federated: renamed, retitled).
#[derive(Clone, Debug)]
enum Discovered {
    Tools(Arc<Vec<Tool>>),
    NoEndpoint,
    Failed,
}

struct Slot {
    fingerprint: Fingerprint,
    started: Instant,
    result: Arc<OnceCell<Discovered>>,
}

/// A provider federated into one workspace.
#[derive(Clone, Debug)]
struct Member {
    name: String,
    fingerprint: Fingerprint,
}

use super::server::WorkspaceServer;
use super::store::{SessionSpace, SpaceStore};
use crate::records::Records;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

/// One session space's rmcp service: its sessions in memory and, with [`Federation::use_records`],
/// in the shared store. One service per space (not per request) so rmcp's restore of a session
/// from the store happens once even when requests for it arrive together.
pub type SpaceService = StreamableHttpService<WorkspaceServer, LocalSessionManager>;

struct Space {
    manager: Arc<LocalSessionManager>,
    service: SpaceService,
}

/// Shared federation state; one per hub.
pub struct Federation {
    registry: Arc<Registry>,
    keys: Arc<KeyStore>,
    metrics: Arc<Metrics>,
    bindings: watch::Receiver<u64>,
    pub(super) directory: Arc<dyn Directory>,
    upstreams: McpClients,
    pub(super) settings: McpSettings,
    cache: Mutex<HashMap<String, Slot>>,
    published: watch::Sender<Snapshot>,
    watcher: OnceLock<()>,
    /// One session space per (cluster, user, groups): a session id minted for one workspace or
    /// user is unknown everywhere else.
    sessions: Mutex<HashMap<SessionSpace, Space>>,
    /// Where sessions are kept for other replicas and restarts (none: this process only).
    records: OnceLock<Records>,
    pub(super) shutdown: CancellationToken,
    /// Cancelled at stop ([`Federation::end_streams`]), before [`Federation::shutdown`].
    streams_end: CancellationToken,
}

impl std::fmt::Debug for Federation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Federation").field("settings", &self.settings).finish()
    }
}

// A poisoned lock only means a panic elsewhere mid-update; the maps stay usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Federation {
    /// Builds the federation from what it reads: the catalog, the signing keys, the metrics and
    /// the tenancy's binding-change signal; it reaches providers where `upstreams` lets it (the
    /// proxies' policy). No IO.
    pub fn new(
        registry: Arc<Registry>,
        keys: Arc<KeyStore>,
        metrics: Arc<Metrics>,
        bindings: watch::Receiver<u64>,
        directory: Arc<dyn Directory>,
        settings: McpSettings,
        upstreams: Arc<UpstreamPolicy>,
    ) -> Result<Arc<Self>, McpClientError> {
        Ok(Arc::new(Self {
            registry,
            keys,
            metrics,
            bindings,
            directory,
            upstreams: McpClients::new(settings.connect_timeout, upstreams)?,
            settings,
            cache: Mutex::new(HashMap::new()),
            published: watch::channel(Snapshot::default()).0,
            watcher: OnceLock::new(),
            sessions: Mutex::new(HashMap::new()),
            records: OnceLock::new(),
            shutdown: CancellationToken::new(),
            streams_end: CancellationToken::new(),
        }))
    }

    /// Keeps MCP sessions in `records` too, so any replica continues them ([`super::store`]).
    pub fn use_records(&self, records: Records) {
        let _ = self.records.set(records);
    }

    /// At stop: ends what only notifies (`list_changed` watchers, so a stateless
    /// `subscriptions/listen` stream ends and its client listens on another replica), while
    /// sessions keep answering the requests in flight for the grace period.
    pub fn end_streams(&self) {
        self.streams_end.cancel();
    }

    /// Ends every MCP session; once the server has stopped ([`Federation::end_streams`] first).
    pub fn shutdown(&self) {
        self.streams_end.cancel();
        self.shutdown.cancel();
    }

    // ----- change tracking ---------------------------------------------------------------------

    fn ready_now(&self) -> BTreeMap<String, Fingerprint> {
        self.registry
            .list()
            .iter()
            .filter(|v| v.readiness.ready)
            .filter_map(|v| Some((v.provider.name.clone(), Fingerprint::of(v)?)))
            .collect()
    }

    /// Re-reads readiness and bindings; drops the discovered tools of every provider whose
    /// incarnation changed, and publishes the new snapshot when anything changed.
    fn refresh(&self, bindings: u64) {
        let ready = self.ready_now();
        self.published.send_if_modified(|cur| {
            if *cur.ready == ready && cur.bindings == bindings {
                return false;
            }
            {
                let mut cache = lock(&self.cache);
                for name in cur.ready.keys().chain(ready.keys()) {
                    if cur.ready.get(name) != ready.get(name) {
                        cache.remove(name);
                    }
                }
            }
            *cur = Snapshot {
                ready: Arc::new(ready),
                bindings,
            };
            true
        });
    }

    /// Starts the change tracker once (lazily: it needs a runtime). It holds only a weak
    /// reference, so it ends with the federation.
    fn ensure_watcher(self: &Arc<Self>) {
        self.watcher.get_or_init(|| {
            let mut bindings = self.bindings.clone();
            self.refresh(*bindings.borrow_and_update());
            let mut changes = self.registry.subscribe_changes();
            let weak: Weak<Self> = Arc::downgrade(self);
            let poll = self.settings.readiness_poll;
            let stop = self.shutdown.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(poll);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        r = changes.changed() => if r.is_err() { return },
                        r = bindings.changed() => if r.is_err() { return },
                        _ = tick.tick() => {}
                    }
                    let Some(fed) = weak.upgrade() else { return };
                    fed.refresh(*bindings.borrow_and_update());
                }
            });
        });
    }

    /// The published snapshot, kept current.
    pub fn subscribe(self: &Arc<Self>) -> watch::Receiver<Snapshot> {
        self.ensure_watcher();
        self.published.subscribe()
    }

    /// Calls `notify` whenever the tool set of `ctx`'s workspace changes, until `cancelled`
    /// completes or `notify` fails (the client is gone).
    pub async fn watch_tool_set<N, NF>(
        self: &Arc<Self>,
        ctx: &WorkspaceCtx,
        mut notify: N,
        cancelled: impl Future<Output = ()>,
    ) where
        N: FnMut() -> NF,
        NF: Future<Output = Result<(), String>>,
    {
        let mut rx = self.subscribe();
        let snapshot = rx.borrow_and_update().clone();
        let mut bindings = snapshot.bindings;
        let mut enabled = self.directory.enabled(&ctx.target).await.ok();
        let mut key = enabled.as_deref().map(|e| tool_set_key(&snapshot, e));
        // The workspace's own bindings are re-read on a tick too: an Enable on another replica or
        // with kubectl announces itself only where the hub can watch bindings everywhere
        // ([`super::bindings`]), which real kcp does not allow.
        let mut reread = tokio::time::interval(self.settings.readiness_poll);
        reread.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        reread.tick().await;
        tokio::pin!(cancelled);
        loop {
            let tick = tokio::select! {
                _ = &mut cancelled => return,
                _ = self.streams_end.cancelled() => return,
                r = rx.changed() => { if r.is_err() { return } false }
                _ = reread.tick() => true,
            };
            let snapshot = rx.borrow_and_update().clone();
            if tick || snapshot.bindings != bindings || enabled.is_none() {
                bindings = snapshot.bindings;
                match self.directory.enabled(&ctx.target).await {
                    Ok(e) => enabled = Some(e),
                    Err(status) => {
                        tracing::warn!(workspace = %ctx.target.path, error = %status.message, "cannot list enabled providers; keeping the previous tool set");
                    }
                }
            }
            let new_key = enabled.as_deref().map(|e| tool_set_key(&snapshot, e));
            if new_key != key {
                key = new_key;
                if let Err(error) = notify().await {
                    tracing::debug!(workspace = %ctx.target.path, %error, "MCP client gone; no more list_changed");
                    return;
                }
            }
        }
    }

    // ----- sessions ----------------------------------------------------------------------------

    fn server_config(&self, space: &SessionSpace) -> StreamableHttpServerConfig {
        let mut config = StreamableHttpServerConfig::default()
            // rmcp's Host allow-list guards unauthenticated local servers against DNS rebinding;
            // the hub is served under its public name and every request carries credentials.
            .disable_allowed_hosts()
            .with_cancellation_token(self.shutdown.child_token());
        config.session_store = self
            .records
            .get()
            .map(|r| Arc::new(SpaceStore::new(r.clone(), space.clone())) as _);
        config
    }

    /// The rmcp service of `ctx`'s caller in its workspace (its session space).
    pub(super) fn service_for(self: &Arc<Self>, ctx: &Arc<WorkspaceCtx>) -> SpaceService {
        let key: SessionSpace = (
            ctx.target.cluster.clone(),
            ctx.caller.user.clone(),
            ctx.caller.groups.clone(),
        );
        let mut all = lock(&self.sessions);
        if let Some(s) = all.get(&key) {
            return s.service.clone();
        }
        if all.len() >= 1024 {
            // Spaces whose sessions all ended (rmcp expires idle ones) are dropped.
            all.retain(|_, s| s.manager.sessions.try_read().map(|m| !m.is_empty()).unwrap_or(true));
        }
        let manager = Arc::new(LocalSessionManager::default());
        let make = {
            let fed = self.clone();
            let ctx = ctx.clone();
            move || Ok(WorkspaceServer::new(fed.clone(), ctx.clone()))
        };
        let service = StreamableHttpService::new(make, manager.clone(), self.server_config(&key));
        all.insert(
            key,
            Space {
                manager,
                service: service.clone(),
            },
        );
        service
    }

    // ----- what a workspace sees ---------------------------------------------------------------

    async fn enabled_views(&self, ctx: &WorkspaceCtx) -> Result<Vec<(String, Option<View>)>, Status> {
        let mut names = self.directory.enabled(&ctx.target).await?;
        names.sort();
        names.dedup();
        Ok(names
            .into_iter()
            .map(|n| {
                let v = self.registry.view(&n);
                (n, v)
            })
            .collect())
    }

    fn members(views: &[(String, Option<View>)]) -> Vec<Member> {
        views
            .iter()
            .filter_map(|(name, v)| {
                let v = v.as_ref().filter(|v| v.readiness.ready)?;
                Some(Member {
                    name: name.clone(),
                    fingerprint: Fingerprint::of(v)?,
                })
            })
            .collect()
    }

    /// The workspace and its enabled providers (instructions, `faros://workspace`).
    pub async fn describe(&self, ctx: &WorkspaceCtx) -> Result<WorkspaceDescription, Status> {
        let views = self.enabled_views(ctx).await?;
        let providers = views
            .into_iter()
            .map(|(name, v)| {
                let Some(v) = v else {
                    return EnabledProvider {
                        display_name: name.clone(),
                        name,
                        description: None,
                        federated: false,
                        not_federated_reason: Some("not registered in the catalog".into()),
                    };
                };
                let spec = &v.provider.spec;
                let reason = if !v.readiness.ready {
                    Some(format!("not Ready: {}", v.readiness.reason))
                } else if v.provider.endpoints.backend.is_none() {
                    Some("declares no backend".into())
                } else {
                    None
                };
                EnabledProvider {
                    display_name: naming::display_name(&name, &spec.display_name).to_string(),
                    description: spec.description.clone(),
                    federated: reason.is_none(),
                    not_federated_reason: reason,
                    name,
                }
            })
            .collect();
        Ok(WorkspaceDescription {
            org: ctx.target.org.clone(),
            workspace: ctx.target.workspace.clone().unwrap_or_default(),
            path: ctx.target.path.clone(),
            cluster: ctx.target.cluster.clone(),
            providers,
        })
    }

    /// The union of the federated providers' tools. Providers that fail or time out are left
    /// out (and logged); the list never waits longer than one discovery timeout.
    pub async fn tools(self: &Arc<Self>, ctx: &WorkspaceCtx) -> Result<Vec<Tool>, Status> {
        self.ensure_watcher();
        let members = Self::members(&self.enabled_views(ctx).await?);
        let lists = futures::future::join_all(members.iter().map(|m| self.discovered(ctx, m))).await;
        Ok(lists
            .into_iter()
            .flat_map(|d| match d {
                Discovered::Tools(tools) => tools.as_ref().clone(),
                Discovered::NoEndpoint | Discovered::Failed => Vec::new(),
            })
            .collect())
    }

    fn slot(&self, m: &Member) -> Arc<OnceCell<Discovered>> {
        let mut cache = lock(&self.cache);
        if let Some(slot) = cache.get(&m.name)
            && slot.fingerprint == m.fingerprint
        {
            let age = slot.started.elapsed();
            let fresh = match slot.result.get() {
                None => true, // in flight: join it
                Some(Discovered::Failed) => age < self.settings.failure_backoff,
                Some(_) => age < self.settings.discovery_ttl,
            };
            if fresh {
                return slot.result.clone();
            }
        }
        let result = Arc::new(OnceCell::new());
        cache.insert(
            m.name.clone(),
            Slot {
                fingerprint: m.fingerprint.clone(),
                started: Instant::now(),
                result: result.clone(),
            },
        );
        result
    }

    async fn discovered(&self, ctx: &WorkspaceCtx, m: &Member) -> Discovered {
        let cell = self.slot(m);
        // The discovery bounds itself; the grace only caps late joiners of an in-flight one, and
        // must not cut the first caller short (its result would then not be cached).
        let bound = self.settings.discovery_timeout + Duration::from_millis(250);
        match tokio::time::timeout(bound, cell.get_or_init(|| self.discover(ctx, m))).await {
            Ok(d) => d.clone(),
            Err(_) => Discovered::Failed,
        }
    }

    /// One provider's `tools/list`, federated. Runs under the discovery timeout.
    async fn discover(&self, ctx: &WorkspaceCtx, m: &Member) -> Discovered {
        let started = std::time::Instant::now();
        let timeout = self.settings.discovery_timeout;
        let listed = match self.headers(ctx, &m.name) {
            Ok(headers) => tokio::time::timeout(timeout, self.upstreams.list_tools(&m.fingerprint.mcp_url, headers))
                .await
                .unwrap_or(Err(McpClientError::Timeout(timeout))),
            Err(e) => Err(e),
        };
        let took = started.elapsed();
        let provider = m.name.as_str();
        match listed {
            Ok(tools) => {
                let federated: Vec<Tool> = tools
                    .iter()
                    .filter_map(|t| match naming::federate(provider, &m.fingerprint.display_name, t) {
                        Ok(t) => Some(t),
                        Err(error) => {
                            tracing::warn!(provider, tool = %t.name, %error, "MCP tool left out: its federated name breaks MCP naming rules");
                            None
                        }
                    })
                    .collect();
                tracing::debug!(provider, tools = federated.len(), ?took, "MCP tools discovered");
                self.metrics.mcp.discovered(provider, "ok", took);
                self.metrics.mcp.set_tools(provider, federated.len());
                Discovered::Tools(Arc::new(federated))
            }
            Err(McpClientError::NoEndpoint(code)) => {
                tracing::debug!(provider, code, "provider serves no MCP endpoint");
                self.metrics.mcp.discovered(provider, "no_endpoint", took);
                self.metrics.mcp.set_tools(provider, 0);
                Discovered::NoEndpoint
            }
            Err(error) => {
                let outcome = if matches!(error, McpClientError::Timeout(_)) {
                    "timeout"
                } else {
                    "error"
                };
                tracing::warn!(provider, url = %m.fingerprint.mcp_url, %error, "MCP discovery failed; provider left out of tools/list");
                self.metrics.mcp.discovered(provider, outcome, took);
                Discovered::Failed
            }
        }
    }

    fn headers(
        &self,
        ctx: &WorkspaceCtx,
        provider: &str,
    ) -> Result<HashMap<http::HeaderName, http::HeaderValue>, McpClientError> {
        let identity = ctx.identity();
        let assertion = self
            .keys
            .sign(
                &identity,
                provider,
                self.registry.reported_revision(provider).as_deref(),
                faros_core::identity::now_unix(),
            )
            .map_err(|e| McpClientError::Failed(format!("signing the identity assertion: {e}")))?;
        upstream::identity_headers(&identity, &assertion)
    }

    // ----- calls -------------------------------------------------------------------------------

    /// Routes `params` to the provider owning the tool. Unknown tools are protocol errors; a
    /// provider failing is a tool error naming the provider.
    pub async fn call(&self, ctx: &WorkspaceCtx, params: CallToolRequestParams) -> Result<CallToolResponse, ErrorData> {
        let name = params.name.to_string();
        let Some((provider, tool)) = naming::split(&name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {name:?}: federated tools are named \"<provider>__<tool>\""),
                None,
            ));
        };
        let views = self.enabled_views(ctx).await.map_err(|s| {
            ErrorData::internal_error(format!("listing the workspace's providers: {}", s.message), None)
        })?;
        let Some((_, view)) = views.iter().find(|(n, _)| n == provider) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {name:?}: provider {provider:?} is not enabled in this workspace"),
                None,
            ));
        };
        let tool_error = |message: String| {
            Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                ContentBlock::text(format!("provider {provider:?} tool {tool:?}: {message}")),
            ])))
        };
        let Some(member) = Self::members(std::slice::from_ref(&(provider.to_string(), view.clone()))).pop() else {
            self.metrics.mcp.call(provider, "provider_error");
            let why = match view {
                Some(v) if !v.readiness.ready => format!("the provider is not Ready ({})", v.readiness.reason),
                Some(_) => "the provider declares no backend".to_string(),
                None => "the provider is not registered in the catalog".to_string(),
            };
            return tool_error(why);
        };
        let mut upstream_params = CallToolRequestParams::new(tool.to_string());
        upstream_params.arguments = params.arguments;
        upstream_params.input_responses = params.input_responses;
        upstream_params.request_state = params.request_state;
        let timeout = self.settings.call_timeout;
        let result = match self.headers(ctx, provider) {
            Ok(headers) => tokio::time::timeout(
                timeout,
                self.upstreams
                    .call_tool(&member.fingerprint.mcp_url, headers, upstream_params),
            )
            .await
            .unwrap_or(Err(McpClientError::Timeout(timeout))),
            Err(e) => Err(e),
        };
        match result {
            Ok(response) => {
                let outcome = match &response {
                    CallToolResponse::Complete(r) if r.is_error == Some(true) => "tool_error",
                    _ => "ok",
                };
                self.metrics.mcp.call(provider, outcome);
                Ok(response)
            }
            Err(error) => {
                let outcome = if matches!(error, McpClientError::Timeout(_)) {
                    "timeout"
                } else {
                    "provider_error"
                };
                tracing::warn!(provider, tool, %error, "federated tool call failed");
                self.metrics.mcp.call(provider, outcome);
                tool_error(error.to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn fp(url: &str) -> Fingerprint {
        Fingerprint {
            mcp_url: url.into(),
            generation: Some(1),
            entry_cluster: "c".into(),
            display_name: "D".into(),
        }
    }

    #[test]
    fn tool_set_keys() {
        let snapshot = Snapshot {
            ready: Arc::new(BTreeMap::from([
                ("a".to_string(), fp("http://a/mcp")),
                ("b".to_string(), fp("http://b/mcp")),
            ])),
            bindings: 3,
        };
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for (enabled, want) in [
            (names(&["b", "a"]), vec!["a", "b"]),
            (names(&["a", "not-ready"]), vec!["a"]),
            (names(&["a", "a"]), vec!["a"]),
            (names(&[]), vec![]),
        ] {
            let got: Vec<String> = tool_set_key(&snapshot, &enabled).into_iter().map(|(n, _)| n).collect();
            assert_eq!(got, want, "{enabled:?}");
        }
    }
}
