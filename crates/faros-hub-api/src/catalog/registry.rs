//! The in-memory catalog: every CatalogEntry the hub has seen (candidates), the one elected per
//! provider name, and the hub-side liveness (heartbeats) and backend health that decide readiness.
//!
//! Request paths read it under a short read lock; writers are the catalog watch, heartbeats, the
//! health prober and the sweeper. Everything here is IO-free: the watch and the status writer in
//! [`super::watch`] feed and drain it.

use crate::proxy::UpstreamPolicy;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use faros_core::catalog::{CatalogEntry, CatalogEntrySpec, CatalogEntryStatus};
use faros_core::names;
use http::HeaderValue;
use jiff::Timestamp;
use kube::ResourceExt;
use tokio::sync::{Notify, watch};

use super::authority::{Authority, Contender, Rejection, elect};
use super::record::{
    BackendHealth, ParsedEndpoints, Readiness, Winner, desired_status, parse_endpoints, readiness, to_seconds,
};
use crate::catalog::clock::Clock;

/// One CatalogEntry as seen through a virtual workspace.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Logical cluster the entry lives in (`kcp.io/cluster`).
    pub cluster: String,
    /// Its workspace path, once resolved.
    pub path: Option<String>,
    /// The virtual workspace URL it was seen through (where its status is written).
    pub source: String,
    pub entry: CatalogEntry,
}

impl Candidate {
    pub fn name(&self) -> String {
        self.entry.name_any()
    }
}

/// The elected entry of a provider name: what routes and heartbeats use.
#[derive(Clone, Debug)]
pub struct Provider {
    pub name: String,
    pub authority: Authority,
    /// Logical cluster of the elected entry.
    pub entry_cluster: String,
    pub entry_path: String,
    pub source: String,
    pub spec: CatalogEntrySpec,
    pub generation: Option<i64>,
    pub endpoints: ParsedEndpoints,
    /// Logical cluster of `root:faros:providers:<name>`, whose `default/provider` ServiceAccount
    /// alone may heartbeat. Known at once for self-registered entries, resolved for admin ones.
    pub provider_cluster: Option<String>,
    /// Where the hub mounts the provider, as the `X-Faros-Base-Path` values its proxies send:
    /// made once here, shared by every proxied request.
    pub mounts: Mounts,
}

/// The hub paths a provider is mounted at ([`names::ui_proxy_prefix`],
/// [`names::backend_proxy_prefix`]), as header values.
#[derive(Clone, Debug)]
pub struct Mounts {
    pub ui: HeaderValue,
    pub backend: HeaderValue,
}

impl Mounts {
    pub fn of(name: &str) -> Self {
        // Object names are DNS subdomains, always valid header values; the fallback is unreachable.
        let value = |path: String| HeaderValue::try_from(path).unwrap_or(HeaderValue::from_static(""));
        Self {
            ui: value(names::ui_proxy_prefix(name)),
            backend: value(names::backend_proxy_prefix(name)),
        }
    }
}

/// A provider with its readiness at one instant.
#[derive(Clone, Debug)]
pub struct View {
    pub provider: Arc<Provider>,
    pub readiness: Readiness,
    pub last_beat: Option<Timestamp>,
    pub reported_version: Option<String>,
    /// The ProviderRevision the provider's heartbeats say it serves.
    pub reported_revision: Option<String>,
}

/// What a heartbeat reports besides its time: the provider's version and the ProviderRevision it
/// serves (`<name>-<short digest>`). An absent field leaves the last one reported in place.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reported {
    pub version: Option<String>,
    pub revision: Option<String>,
}

impl Reported {
    /// Takes what `newer` reports, keeping what it leaves out.
    fn update(&mut self, newer: Reported) {
        if newer.version.is_some() {
            self.version = newer.version;
        }
        if newer.revision.is_some() {
            self.revision = newer.revision;
        }
    }
}

/// Why a heartbeat was not recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("provider {0:?} is not registered")]
    UnknownProvider(String),
}

#[derive(Clone, Debug, Default)]
struct Liveness {
    last_beat: Option<Timestamp>,
    reported: Reported,
    /// The last beat handed to the status writer; persisting is throttled against it.
    persisted: Option<(Timestamp, Reported)>,
}

/// The maps every proxied request looks a provider up in: a seeded foldhash, not SipHash (the
/// lookups are on the proxy's hot path; names come from CatalogEntries, not from callers).
type ByName<V> = HashMap<String, V, foldhash::fast::RandomState>;

#[derive(Default)]
struct Inner {
    /// Keyed by (name, cluster): same-named entries in different workspaces are different objects.
    candidates: BTreeMap<(String, String), Candidate>,
    providers: ByName<Arc<Provider>>,
    /// Resolved logical clusters of provider workspaces (for admin-applied entries).
    provider_clusters: HashMap<String, String>,
    liveness: ByName<Liveness>,
    /// Per name: (backend URL probed, result). A changed URL invalidates the result.
    health: ByName<(String, BackendHealth)>,
    last_readiness: HashMap<String, (bool, &'static str)>,
    dirty: BTreeSet<String>,
    synced: BTreeSet<String>,
    expected_sources: usize,
    /// Providers that beat while their backend was not known healthy: the prober probes them at once.
    probe_on_beat: BTreeSet<String>,
}

/// Tunables of readiness and persistence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegistrySettings {
    pub heartbeat_ttl: Duration,
    /// Minimum interval between persisted heartbeats of one provider.
    pub persist_every: Duration,
}

impl Default for RegistrySettings {
    fn default() -> Self {
        Self {
            heartbeat_ttl: names::HEARTBEAT_TTL,
            persist_every: names::HEARTBEAT_TTL / 6,
        }
    }
}

/// The catalog registry. Share it behind an `Arc`.
pub struct Registry {
    inner: RwLock<Inner>,
    clock: Arc<dyn Clock>,
    settings: RegistrySettings,
    /// Provider URLs on hosts this refuses are not Ready ([`crate::proxy::upstream_policy`]).
    upstreams: Arc<UpstreamPolicy>,
    dirty: Notify,
    changes: watch::Sender<u64>,
    /// Wakes the prober for [`Registry::take_probe_requests`].
    probe_requested: Notify,
    /// Latched by [`Registry::first_probes_done`].
    first_probes: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").field("settings", &self.settings).finish()
    }
}

impl Registry {
    pub fn new(clock: Arc<dyn Clock>, settings: RegistrySettings) -> Self {
        Self {
            inner: RwLock::default(),
            clock,
            settings,
            upstreams: Arc::new(UpstreamPolicy::default()),
            dirty: Notify::new(),
            changes: watch::channel(0).0,
            probe_requested: Notify::new(),
            first_probes: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Judges provider URLs by `policy` (the hub's `--allow-upstream`, `--deny-private-upstreams`).
    pub fn with_upstream_policy(mut self, policy: Arc<UpstreamPolicy>) -> Self {
        self.upstreams = policy;
        self
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    pub fn settings(&self) -> RegistrySettings {
        self.settings
    }

    // A poisoned lock only means a panic elsewhere mid-update; the maps are still usable.
    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Increments whenever the set of providers or their specs change (the prober listens).
    pub fn subscribe_changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Resolves when some provider's CatalogEntry status may need writing.
    pub async fn dirty_notified(&self) {
        self.dirty.notified().await;
    }

    /// Takes the names whose status needs recomputing.
    pub fn take_dirty(&self) -> BTreeSet<String> {
        std::mem::take(&mut self.write().dirty)
    }

    /// Marks `names` for a status recomputation.
    pub fn mark_dirty(&self, names: impl IntoIterator<Item = String>) {
        self.write().dirty.extend(names);
        self.dirty.notify_one();
    }

    // ----- feeding from the watch ------------------------------------------------------------

    /// How many watch sources must finish their initial list before the registry counts as synced.
    pub fn expect_sources(&self, n: usize) {
        self.write().expected_sources = n;
    }

    /// True once every source delivered its initial list.
    pub fn is_synced(&self) -> bool {
        let inner = self.read();
        inner.expected_sources > 0 && inner.synced.len() >= inner.expected_sources
    }

    /// True once the registry has synced and every backend it declared then has a probe result,
    /// healthy or not: before, a provider that is Ready everywhere else reads "not probed yet" here
    /// (the backend proxy answers 503), so `/readyz` waits for it. Latched: a backend registered
    /// later is probed at once, and a replica already serving does not leave its Service for it.
    pub fn first_probes_done(&self) -> bool {
        use std::sync::atomic::Ordering;
        if self.first_probes.load(Ordering::Acquire) {
            return true;
        }
        let done = self.is_synced() && self.unprobed().is_empty();
        if done {
            self.first_probes.store(true, Ordering::Release);
        }
        done
    }

    /// Inserts or replaces one candidate and re-elects its name.
    pub fn upsert(&self, candidate: Candidate) {
        let name = candidate.name();
        {
            let mut inner = self.write();
            inner
                .candidates
                .insert((name.clone(), candidate.cluster.clone()), candidate);
            self.reelect(&mut inner, &name);
        }
        self.changed();
    }

    /// Removes the entry `name` of `cluster`.
    pub fn remove(&self, cluster: &str, name: &str) {
        {
            let mut inner = self.write();
            if inner
                .candidates
                .remove(&(name.to_string(), cluster.to_string()))
                .is_none()
            {
                return;
            }
            self.reelect(&mut inner, name);
        }
        self.changed();
    }

    /// Replaces every candidate seen through `source` with `candidates` (a watch (re)list), and
    /// marks the source synced.
    pub fn replace_source(&self, source: &str, candidates: Vec<Candidate>) {
        {
            let mut inner = self.write();
            let mut touched: BTreeSet<String> = inner
                .candidates
                .iter()
                .filter(|(_, c)| c.source == source)
                .map(|((n, _), _)| n.clone())
                .collect();
            inner.candidates.retain(|_, c| c.source != source);
            for c in candidates {
                let name = c.name();
                touched.insert(name.clone());
                inner.candidates.insert((name, c.cluster.clone()), c);
            }
            for name in touched {
                self.reelect(&mut inner, &name);
            }
            inner.synced.insert(source.to_string());
        }
        self.changed();
    }

    /// Forgets a watch source that is no longer served (its URL changed): its candidates go, and
    /// it no longer counts towards being synced.
    pub fn retire_source(&self, source: &str) {
        {
            let mut inner = self.write();
            let touched: BTreeSet<String> = inner
                .candidates
                .iter()
                .filter(|(_, c)| c.source == source)
                .map(|((n, _), _)| n.clone())
                .collect();
            inner.candidates.retain(|_, c| c.source != source);
            inner.synced.remove(source);
            for name in touched {
                self.reelect(&mut inner, &name);
            }
        }
        self.changed();
    }

    /// Records the logical cluster of `root:faros:providers:<name>` (for admin-applied entries).
    pub fn set_provider_cluster(&self, name: &str, cluster: &str) {
        {
            let mut inner = self.write();
            if inner.provider_clusters.get(name).map(String::as_str) == Some(cluster) {
                return;
            }
            inner.provider_clusters.insert(name.to_string(), cluster.to_string());
            self.reelect(&mut inner, name);
        }
        self.changed();
    }

    /// Candidates whose path is still unknown (to retry resolution).
    pub fn unresolved(&self) -> Vec<(String, String)> {
        self.read()
            .candidates
            .iter()
            .filter(|(_, c)| c.path.is_none())
            .map(|((n, cl), _)| (n.clone(), cl.clone()))
            .collect()
    }

    /// Sets the path of a candidate resolved after the fact.
    pub fn set_path(&self, name: &str, cluster: &str, path: &str) {
        {
            let mut inner = self.write();
            let Some(c) = inner.candidates.get_mut(&(name.to_string(), cluster.to_string())) else {
                return;
            };
            c.path = Some(path.to_string());
            self.reelect(&mut inner, name);
        }
        self.changed();
    }

    /// Admin-authoritative winners whose provider workspace cluster is unknown.
    pub fn missing_provider_clusters(&self) -> Vec<String> {
        self.read()
            .providers
            .values()
            .filter(|p| p.provider_cluster.is_none())
            .map(|p| p.name.clone())
            .collect()
    }

    fn changed(&self) {
        self.changes.send_modify(|v| *v = v.wrapping_add(1));
        self.dirty.notify_one();
        self.reevaluate(self.clock.now());
    }

    fn reelect(&self, inner: &mut Inner, name: &str) {
        let range = (name.to_string(), String::new())..;
        let keys: Vec<(String, String)> = inner
            .candidates
            .range(range)
            .take_while(|((n, _), _)| n == name)
            .map(|(k, _)| k.clone())
            .collect();
        let contenders: Vec<Contender<'_>> = keys
            .iter()
            .filter_map(|k| inner.candidates.get(k))
            .map(|c| Contender {
                cluster: &c.cluster,
                path: c.path.as_deref(),
            })
            .collect();
        let election = elect(name, &contenders);
        let winner = election
            .winner
            .and_then(|(i, a)| Some((inner.candidates.get(keys.get(i)?)?.clone(), a)));
        inner.dirty.insert(name.to_string());
        let Some((c, authority)) = winner else {
            if inner.providers.remove(name).is_some() {
                tracing::info!(provider = name, "provider deregistered: no authoritative CatalogEntry");
            }
            return;
        };
        let provider_cluster = match authority {
            Authority::ProviderWorkspace => Some(c.cluster.clone()),
            Authority::Admin => inner.provider_clusters.get(name).cloned(),
        };
        let observed = c.entry.status.as_ref();
        // Liveness comes only from the elected entry, and never from the future: an entry can
        // write its own status, so a far-future lastHeartbeat must not keep it Ready forever.
        if let Some(beat) = observed.and_then(|s| s.last_heartbeat.as_ref()).map(|t| t.0) {
            let beat = beat.min(self.clock.now());
            let reported = Reported {
                version: observed.and_then(|s| s.reported_version.clone()),
                revision: observed.and_then(|s| s.reported_revision.clone()),
            };
            let live = inner.liveness.entry(name.to_string()).or_default();
            if live.last_beat.is_none_or(|b| b < beat) {
                live.last_beat = Some(beat);
                live.reported.update(reported.clone());
            }
            if live.persisted.as_ref().is_none_or(|(p, _)| *p < beat) {
                live.persisted = Some((beat, reported));
            }
        }
        let provider = Provider {
            mounts: Mounts::of(name),
            name: name.to_string(),
            authority,
            entry_cluster: c.cluster.clone(),
            entry_path: c.path.clone().unwrap_or_default(),
            source: c.source.clone(),
            endpoints: parse_endpoints(&c.entry.spec, &self.upstreams),
            spec: c.entry.spec.clone(),
            generation: c.entry.metadata.generation,
            provider_cluster,
        };
        let previous = inner.providers.insert(name.to_string(), Arc::new(provider));
        if previous.as_ref().is_none_or(|p| p.entry_cluster != c.cluster) {
            tracing::info!(provider = name, cluster = %c.cluster, path = ?c.path, ?authority, "provider registered");
        }
    }

    // ----- heartbeats and health -------------------------------------------------------------

    /// The elected provider `name`.
    pub fn get(&self, name: &str) -> Option<Arc<Provider>> {
        self.read().providers.get(name).cloned()
    }

    /// Records a heartbeat at `now`. Returns whether it should be persisted (at most once per
    /// `persist_every` per provider).
    pub fn heartbeat(&self, name: &str, reported: Reported, now: Timestamp) -> Result<bool, RegistryError> {
        let (persist, probe) = {
            let mut inner = self.write();
            if !inner.providers.contains_key(name) {
                return Err(RegistryError::UnknownProvider(name.to_string()));
            }
            let every = jiff::SignedDuration::try_from(self.settings.persist_every).unwrap_or_default();
            let live = inner.liveness.entry(name.to_string()).or_default();
            live.last_beat = Some(live.last_beat.map_or(now, |b| b.max(now)));
            live.reported.update(reported);
            // A new version or revision is persisted at once: the hub reconciler's health gate
            // waits for the revision in the CatalogEntry's status.
            let due = live
                .persisted
                .as_ref()
                .is_none_or(|(p, r)| now.duration_since(*p) >= every || *r != live.reported);
            if due {
                live.persisted = Some((to_seconds(now), live.reported.clone()));
                inner.dirty.insert(name.to_string());
            }
            // A provider beats once it serves: a backend probed before that (a restart, a first
            // start) is worth probing now rather than at the next retry or tick.
            let probe = inner.providers.get(name).is_some_and(|p| {
                matches!(
                    Self::health_of(&inner, p),
                    BackendHealth::Unknown | BackendHealth::Unhealthy(_)
                )
            });
            if probe {
                inner.probe_on_beat.insert(name.to_string());
            }
            (due, probe)
        };
        if persist {
            self.dirty.notify_one();
        }
        if probe {
            self.probe_requested.notify_one();
        }
        self.reevaluate_one(name, now);
        Ok(persist)
    }

    /// Records the result of probing `backend_url` of provider `name`.
    pub fn set_health(&self, name: &str, backend_url: &str, health: BackendHealth) {
        let changed = {
            let mut inner = self.write();
            let new = (backend_url.to_string(), health);
            let changed = inner.health.get(name) != Some(&new);
            if changed {
                match &new.1 {
                    BackendHealth::Unhealthy(why) => {
                        tracing::warn!(provider = name, backend = backend_url, reason = %why, "backend unhealthy")
                    }
                    _ => tracing::debug!(provider = name, backend = backend_url, "backend healthy"),
                }
                inner.health.insert(name.to_string(), new);
                inner.dirty.insert(name.to_string());
            }
            changed
        };
        if changed {
            self.dirty.notify_one();
            self.reevaluate(self.clock.now());
        }
    }

    fn health_of(inner: &Inner, p: &Provider) -> BackendHealth {
        let Some(url) = &p.endpoints.backend else {
            return BackendHealth::NotDeclared;
        };
        match inner.health.get(&p.name) {
            Some((probed, h)) if formats_as(url, probed) => h.clone(),
            _ => BackendHealth::Unknown,
        }
    }

    /// The backends to probe: (name, backend URL, health path).
    pub fn backends(&self) -> Vec<(String, http::Uri, String)> {
        let inner = self.read();
        let mut out: Vec<_> = inner
            .providers
            .values()
            .filter_map(|p| {
                Some((
                    p.name.clone(),
                    p.endpoints.backend.clone()?,
                    p.endpoints.health_path.clone(),
                ))
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Waits until a provider beat while its backend was not known healthy (a permit is kept when
    /// nobody waits, so no beat is missed).
    pub async fn probe_requested(&self) {
        self.probe_requested.notified().await;
    }

    /// The providers that beat while their backend was not known healthy, since the last call.
    pub fn take_probe_requests(&self) -> BTreeSet<String> {
        std::mem::take(&mut self.write().probe_on_beat)
    }

    /// Names whose declared backend has no probe result for its current URL.
    pub fn unprobed(&self) -> Vec<String> {
        let inner = self.read();
        inner
            .providers
            .values()
            .filter(|p| Self::health_of(&inner, p) == BackendHealth::Unknown)
            .map(|p| p.name.clone())
            .collect()
    }

    // ----- reading ---------------------------------------------------------------------------

    fn view_of(&self, inner: &Inner, p: &Arc<Provider>, now: Timestamp) -> View {
        let live = inner.liveness.get(&p.name);
        let last_beat = live.and_then(|l| l.last_beat);
        let health = Self::health_of(inner, p);
        View {
            provider: p.clone(),
            readiness: readiness(&p.endpoints, last_beat, &health, now, self.settings.heartbeat_ttl),
            last_beat,
            reported_version: live.and_then(|l| l.reported.version.clone()),
            reported_revision: live.and_then(|l| l.reported.revision.clone()),
        }
    }

    /// The ProviderRevision provider `name`'s heartbeats report serving; the identity assertion of
    /// a request routed to it names it.
    pub fn reported_revision(&self, name: &str) -> Option<String> {
        self.read().liveness.get(name).and_then(|l| l.reported.revision.clone())
    }

    /// Provider `name` and its readiness now: what routing a request needs, and no more.
    pub fn readiness(&self, name: &str) -> Option<(Arc<Provider>, Readiness)> {
        let now = self.clock.now();
        let inner = self.read();
        let p = inner.providers.get(name)?;
        let last_beat = inner.liveness.get(&p.name).and_then(|l| l.last_beat);
        let health = Self::health_of(&inner, p);
        let r = readiness(&p.endpoints, last_beat, &health, now, self.settings.heartbeat_ttl);
        Some((p.clone(), r))
    }

    /// Provider `name` with its readiness now.
    pub fn view(&self, name: &str) -> Option<View> {
        let now = self.clock.now();
        let inner = self.read();
        let p = inner.providers.get(name)?;
        Some(self.view_of(&inner, p, now))
    }

    /// Every provider, sorted by name.
    pub fn list(&self) -> Vec<View> {
        let now = self.clock.now();
        let inner = self.read();
        let mut out: Vec<View> = inner.providers.values().map(|p| self.view_of(&inner, p, now)).collect();
        out.sort_by(|a, b| a.provider.name.cmp(&b.provider.name));
        out
    }

    /// Re-evaluates readiness at `now`, logs every change with its reason and marks changed
    /// providers dirty. Returns the number of Ready providers.
    pub fn reevaluate(&self, now: Timestamp) -> usize {
        let mut inner = self.write();
        let names: Vec<String> = inner.providers.keys().cloned().collect();
        let mut ready = 0;
        for name in names {
            ready += usize::from(self.reevaluate_locked(&mut inner, &name, now));
        }
        let Inner {
            last_readiness,
            providers,
            ..
        } = &mut *inner;
        last_readiness.retain(|n, _| providers.contains_key(n));
        ready
    }

    /// [`Self::reevaluate`] for one provider (the heartbeat path: O(1), not O(providers)).
    fn reevaluate_one(&self, name: &str, now: Timestamp) {
        let mut inner = self.write();
        self.reevaluate_locked(&mut inner, name, now);
    }

    /// Returns whether `name` is Ready; logs and marks it dirty when that changed.
    fn reevaluate_locked(&self, inner: &mut Inner, name: &str, now: Timestamp) -> bool {
        let Some(p) = inner.providers.get(name).cloned() else {
            return false;
        };
        let view = self.view_of(inner, &p, now);
        let state = (view.readiness.ready, view.readiness.reason);
        let previous = inner.last_readiness.get(name).copied();
        if previous != Some(state) {
            let (reason, message) = (view.readiness.reason, &view.readiness.message);
            match (view.readiness.ready, previous) {
                (true, _) => tracing::info!(provider = %name, reason, "provider is Ready"),
                // Losing readiness is worth a warning; a provider that was never Ready, or moves
                // from one not-Ready reason to the next (not probed yet, then no heartbeat yet), is
                // starting up as it should.
                (false, Some((true, _))) => {
                    tracing::warn!(provider = %name, reason, %message, "provider is no longer Ready")
                }
                (false, _) => tracing::info!(provider = %name, reason, %message, "provider is not Ready yet"),
            }
            inner.last_readiness.insert(name.to_string(), state);
            inner.dirty.insert(name.to_string());
            self.dirty.notify_one();
        }
        view.readiness.ready
    }

    /// For every candidate of `name`: (cluster, source, observed status, desired status). The
    /// status writer writes those that differ.
    pub fn desired_statuses(&self, name: &str, now: Timestamp) -> Vec<StatusWork> {
        let inner = self.read();
        let range = (name.to_string(), String::new())..;
        let candidates: Vec<&Candidate> = inner
            .candidates
            .range(range)
            .take_while(|((n, _), _)| n == name)
            .map(|(_, c)| c)
            .collect();
        let contenders: Vec<Contender<'_>> = candidates
            .iter()
            .map(|c| Contender {
                cluster: &c.cluster,
                path: c.path.as_deref(),
            })
            .collect();
        let election = elect(name, &contenders);
        let provider = inner.providers.get(name);
        let view = provider.map(|p| self.view_of(&inner, p, now));
        let health = provider.map(|p| Self::health_of(&inner, p));
        let persisted = inner.liveness.get(name).and_then(|l| l.persisted.clone());
        candidates
            .iter()
            .zip(election.standings.iter())
            .filter_map(|(c, standing)| {
                // An unresolved entry may yet win; leave its status alone until we know.
                if matches!(standing, Err(Rejection::Unresolved)) {
                    return None;
                }
                let observed = c.entry.status.as_ref();
                let desired = match (standing, &view, &health) {
                    (Ok(_), Some(view), Some(health)) => {
                        let winner = Winner {
                            endpoints: &view.provider.endpoints,
                            readiness: &view.readiness,
                            health,
                            workspace: names::provider_workspace_path(name),
                            persisted_beat: persisted.clone(),
                        };
                        desired_status(name, observed, c.entry.metadata.generation, Ok(&winner), now)
                    }
                    (Err(rejection), _, _) => {
                        desired_status(name, observed, c.entry.metadata.generation, Err(rejection), now)
                    }
                    _ => return None,
                };
                Some(StatusWork {
                    name: name.to_string(),
                    cluster: c.cluster.clone(),
                    source: c.source.clone(),
                    observed: observed.cloned(),
                    desired,
                })
            })
            .collect()
    }

    /// Records that `status` was written to entry `name` in `cluster` (so it is not written again
    /// before the watch echoes it).
    pub fn written(&self, name: &str, cluster: &str, status: CatalogEntryStatus) {
        let mut inner = self.write();
        if let Some(c) = inner.candidates.get_mut(&(name.to_string(), cluster.to_string())) {
            c.entry.status = Some(status);
        }
    }
}

/// One status the writer should compare and maybe write.
#[derive(Clone, Debug)]
pub struct StatusWork {
    pub name: String,
    pub cluster: String,
    pub source: String,
    pub observed: Option<CatalogEntryStatus>,
    pub desired: CatalogEntryStatus,
}

impl StatusWork {
    pub fn needs_write(&self) -> bool {
        self.observed.as_ref() != Some(&self.desired)
    }
}

/// Whether `value` displays exactly as `expected`, compared piece by piece without building the
/// string (a provider's backend URL is checked against the probed one on every proxied request).
fn formats_as(value: &impl std::fmt::Display, expected: &str) -> bool {
    struct Compare<'a>(&'a str);
    impl std::fmt::Write for Compare<'_> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 = self.0.strip_prefix(s).ok_or(std::fmt::Error)?;
            Ok(())
        }
    }
    let mut rest = Compare(expected);
    std::fmt::write(&mut rest, format_args!("{value}")).is_ok() && rest.0.is_empty()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
