//! [`super::Placement::Kcp`]: records as Secrets in kcp, watched into a cache per replica.
//!
//! Reads are served from the cache; a name the cache does not know is read from kcp (another
//! replica may have made it a moment ago and this replica's watch has not delivered it yet). Such
//! reads are not put into the cache: a delete that the watch delivers between the read and the
//! insert would otherwise be undone. Names this replica deleted are remembered for a minute
//! (tombstones), so a watch event from before the delete cannot bring the record back either.
//!
//! Every replica deletes the expired records it sees every [`GC_INTERVAL`] (two replicas deleting
//! the same record is harmless).

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use faros_core::client::ClientFactory;
use faros_runtime::reflect::{self, Update};
use futures::future::BoxFuture;
use jiff::Timestamp;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use tokio_util::sync::CancellationToken;

use super::backend::{Backend, DATA_KEY, EXPIRES_ANNOTATION, RECORD_LABEL, Raw, StoreError};
use super::kind::Kind;
use crate::catalog::clock::Clock;

/// How often expired records are deleted.
pub const GC_INTERVAL: Duration = Duration::from_secs(60);
/// How long a deleted name stays refused after this replica deleted it.
const TOMBSTONE_TTL: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Cache {
    records: HashMap<String, Raw>,
    tombstones: HashMap<String, Instant>,
    /// The watch has listed once: from now on the cache lags kcp by the watch's delay only.
    synced: bool,
}

pub struct KcpBackend {
    secrets: Api<Secret>,
    namespaces: Api<Namespace>,
    namespace: String,
    cache: RwLock<Cache>,
    clock: Arc<dyn Clock>,
}

fn is_status(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}

/// The raw record in a Secret, if it is one.
pub fn raw_of(secret: &Secret) -> Option<Raw> {
    let sealed = secret.data.as_ref()?.get(DATA_KEY)?.0.clone();
    let expires = secret
        .metadata
        .annotations
        .as_ref()?
        .get(EXPIRES_ANNOTATION)?
        .parse::<Timestamp>()
        .ok()?;
    Some(Raw { sealed, expires })
}

/// The Secret holding `raw` as record `name` of `kind`.
pub fn secret_of(kind: Kind, name: &str, raw: Raw) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(BTreeMap::from([(RECORD_LABEL.to_string(), kind.as_str().to_string())])),
            annotations: Some(BTreeMap::from([(
                EXPIRES_ANNOTATION.to_string(),
                raw.expires.to_string(),
            )])),
            ..Default::default()
        },
        type_: Some("faros.sh/hub-record".into()),
        data: Some(BTreeMap::from([(DATA_KEY.to_string(), ByteString(raw.sealed))])),
        ..Default::default()
    }
}

impl KcpBackend {
    /// Records in `namespace` of workspace `path`. No IO.
    pub fn new(
        factory: &ClientFactory,
        path: &str,
        namespace: &str,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, StoreError> {
        let client = factory.cluster(path)?;
        Ok(Self {
            secrets: Api::namespaced(client.clone(), namespace),
            namespaces: Api::all(client),
            namespace: namespace.to_string(),
            cache: RwLock::new(Cache::default()),
            clock,
        })
    }

    fn read(&self) -> RwLockReadGuard<'_, Cache> {
        self.cache.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Cache> {
        self.cache.write().unwrap_or_else(|p| p.into_inner())
    }

    pub fn is_synced(&self) -> bool {
        self.read().synced
    }

    /// How many records are cached.
    pub fn cached(&self) -> usize {
        self.read().records.len()
    }

    fn forget(&self, name: &str) {
        let mut cache = self.write();
        cache.records.remove(name);
        let now = Instant::now();
        cache.tombstones.retain(|_, at| now.duration_since(*at) < TOMBSTONE_TTL);
        cache.tombstones.insert(name.to_string(), now);
    }

    fn tombstoned(cache: &Cache, name: &str) -> bool {
        cache
            .tombstones
            .get(name)
            .is_some_and(|at| at.elapsed() < TOMBSTONE_TTL)
    }

    fn apply(&self, secret: &Secret) {
        let Some(name) = secret.metadata.name.clone() else {
            return;
        };
        let mut cache = self.write();
        if Self::tombstoned(&cache, &name) {
            return;
        }
        match raw_of(secret) {
            Some(raw) => cache.records.insert(name, raw),
            None => cache.records.remove(&name),
        };
    }

    /// Watches the records into the cache and deletes expired ones, until `cancel`.
    pub async fn run(self: Arc<Self>, cancel: CancellationToken) {
        let config = watcher::Config::default().labels(RECORD_LABEL);
        let stream = faros_core::wait::permitted_watcher(self.secrets.clone(), config).default_backoff();
        let watch = reflect::drive(
            stream,
            cancel.cancelled(),
            |update| self.update(update),
            |error| {
                tracing::warn!(%error, "hub record watch failed; retrying");
                ControlFlow::Continue(())
            },
        );
        let gc = async {
            let mut gc = tokio::time::interval(GC_INTERVAL);
            gc.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                gc.tick().await;
                self.collect_garbage().await;
            }
        };
        // The watch ends the task (cancelled, or its stream ended); the collection never does.
        tokio::select! {
            _ = watch => {}
            _ = gc => {}
        }
    }

    /// One update of the watch into the cache. A relist replaces the records but keeps the
    /// tombstones: a record deleted here may still be in a list kcp answered before the delete.
    fn update(&self, update: Update<Secret>) {
        match update {
            Update::Relisted(secrets) => {
                let mut cache = self.write();
                let records: HashMap<String, Raw> = secrets
                    .iter()
                    .filter_map(|s| Some((s.metadata.name.clone()?, raw_of(s)?)))
                    .filter(|(name, _)| !cache.tombstones.contains_key(name))
                    .collect();
                cache.records = records;
                if !cache.synced {
                    tracing::info!(records = cache.records.len(), "hub records listed");
                }
                cache.synced = true;
            }
            Update::Applied(s) => self.apply(&s),
            Update::Deleted(s) => {
                if let Some(name) = &s.metadata.name {
                    self.write().records.remove(name);
                }
            }
        }
    }

    async fn collect_garbage(&self) {
        let now = self.clock.now();
        let expired: Vec<String> = self
            .read()
            .records
            .iter()
            .filter(|(_, r)| r.expires <= now)
            .map(|(n, _)| n.clone())
            .collect();
        for name in expired {
            if let Err(error) = self.delete_now(&name).await {
                tracing::debug!(%error, "cannot delete an expired hub record");
            }
        }
    }

    async fn delete_now(&self, name: &str) -> Result<(), StoreError> {
        self.forget(name);
        match self.secrets.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(e) if is_status(&e, 404) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    async fn create_namespace(&self) -> Result<(), StoreError> {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(self.namespace.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        match self.namespaces.create(&PostParams::default(), &ns).await {
            Ok(_) => Ok(()),
            Err(e) if is_status(&e, 409) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

impl Backend for KcpBackend {
    fn put<'a>(&'a self, kind: Kind, name: &'a str, raw: Raw) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let secret = secret_of(kind, name, raw);
            match self.secrets.create(&PostParams::default(), &secret).await {
                Ok(_) => Ok(()),
                // The reconciler makes the namespace; a hub started before it makes it too.
                Err(e) if is_status(&e, 404) => {
                    self.create_namespace().await?;
                    self.secrets.create(&PostParams::default(), &secret).await?;
                    Ok(())
                }
                Err(e) => Err(e.into()),
            }
        })
    }

    fn get<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Raw>, StoreError>> {
        Box::pin(async move {
            {
                let cache = self.read();
                if Self::tombstoned(&cache, name) {
                    return Ok(None);
                }
                if let Some(raw) = cache.records.get(name) {
                    return Ok(Some(raw.clone()));
                }
            }
            Ok(self.secrets.get_opt(name).await?.as_ref().and_then(raw_of))
        })
    }

    fn take<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Raw>, StoreError>> {
        Box::pin(async move {
            // From kcp, not the cache: the delete's preconditions make the read exclusive.
            let Some(secret) = self.secrets.get_opt(name).await? else {
                return Ok(None);
            };
            let preconditions = Preconditions {
                uid: secret.metadata.uid.clone(),
                resource_version: secret.metadata.resource_version.clone(),
            };
            match self
                .secrets
                .delete(name, &DeleteParams::default().preconditions(preconditions))
                .await
            {
                Ok(_) => {
                    self.forget(name);
                    Ok(raw_of(&secret))
                }
                // Another caller took it first.
                Err(e) if is_status(&e, 404) || is_status(&e, 409) => Ok(None),
                Err(e) => Err(e.into()),
            }
        })
    }

    fn delete<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.delete_now(name))
    }

    fn get_versioned<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<(Raw, String)>, StoreError>> {
        Box::pin(async move {
            if Self::tombstoned(&self.read(), name) {
                return Ok(None);
            }
            // From kcp: the cache may lag another replica's write by the watch's delay.
            let Some(secret) = self.secrets.get_opt(name).await? else {
                return Ok(None);
            };
            let version = secret.metadata.resource_version.clone().unwrap_or_default();
            Ok(raw_of(&secret).map(|raw| (raw, version)))
        })
    }

    fn replace<'a>(
        &'a self,
        kind: Kind,
        name: &'a str,
        raw: Raw,
        version: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(async move {
            let mut secret = secret_of(kind, name, raw);
            // kcp refuses the update (409) unless the Secret is still at this version.
            secret.metadata.resource_version = Some(version.to_string());
            match self.secrets.replace(name, &PostParams::default(), &secret).await {
                Ok(written) => {
                    // This replica sees its own write at once, not only once the watch says so.
                    self.apply(&written);
                    Ok(Some(written.metadata.resource_version.unwrap_or_default()))
                }
                Err(e) if is_status(&e, 409) || is_status(&e, 404) => Ok(None),
                Err(e) => Err(e.into()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn secrets_round_trip_records_and_ignore_others() {
        let raw = Raw {
            sealed: vec![1, 2, 3],
            expires: "2026-01-01T08:00:00Z".parse().unwrap(),
        };
        let s = secret_of(Kind::Session, "session-ab", raw.clone());
        assert_eq!(s.metadata.labels.as_ref().unwrap()[RECORD_LABEL], "session");
        assert_eq!(raw_of(&s), Some(raw));
        let mut no_expiry = s.clone();
        no_expiry.metadata.annotations = None;
        assert_eq!(raw_of(&no_expiry), None);
        let mut no_data = s;
        no_data.data = None;
        assert_eq!(raw_of(&no_data), None);
    }
}
