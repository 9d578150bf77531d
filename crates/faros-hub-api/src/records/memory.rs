//! [`super::Placement::Process`]: records in this process's memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::BoxFuture;

use super::backend::{Backend, Raw, StoreError};
use super::kind::Kind;
use crate::catalog::clock::Clock;

/// Most records held at once; the soonest-expiring are dropped beyond it.
const MAX_RECORDS: usize = 100_000;

/// A stored record and its version (a counter over the whole backend, like a resourceVersion).
type Entry = (Raw, u64);

#[derive(Default)]
struct Map {
    records: HashMap<String, Entry>,
    next_version: u64,
}

impl Map {
    fn version(&mut self) -> u64 {
        self.next_version += 1;
        self.next_version
    }
}

pub struct MemoryBackend {
    map: Mutex<Map>,
    clock: Arc<dyn Clock>,
}

impl MemoryBackend {
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            map: Mutex::new(Map::default()),
            clock,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Map> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn len(&self) -> usize {
        self.lock().records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Backend for MemoryBackend {
    fn put<'a>(&'a self, _kind: Kind, name: &'a str, raw: Raw) -> BoxFuture<'a, Result<(), StoreError>> {
        let now = self.clock.now();
        let mut map = self.lock();
        map.records.retain(|_, (r, _)| r.expires > now);
        if map.records.len() >= MAX_RECORDS
            && let Some(oldest) = map
                .records
                .iter()
                .min_by_key(|(_, (r, _))| r.expires)
                .map(|(k, _)| k.clone())
        {
            map.records.remove(&oldest);
        }
        let version = map.version();
        map.records.insert(name.to_string(), (raw, version));
        Box::pin(async { Ok(()) })
    }

    fn get<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Raw>, StoreError>> {
        let found = self.lock().records.get(name).map(|(r, _)| r.clone());
        Box::pin(async move { Ok(found) })
    }

    fn take<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Raw>, StoreError>> {
        let found = self.lock().records.remove(name).map(|(r, _)| r);
        Box::pin(async move { Ok(found) })
    }

    fn delete<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        self.lock().records.remove(name);
        Box::pin(async { Ok(()) })
    }

    fn get_versioned<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<(Raw, String)>, StoreError>> {
        let found = self.lock().records.get(name).map(|(r, v)| (r.clone(), v.to_string()));
        Box::pin(async move { Ok(found) })
    }

    fn replace<'a>(
        &'a self,
        _kind: Kind,
        name: &'a str,
        raw: Raw,
        version: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        let mut map = self.lock();
        let current = map.records.get(name).map(|(_, v)| v.to_string());
        let won = if current.as_deref() == Some(version) {
            let next = map.version();
            map.records.insert(name.to_string(), (raw, next));
            Some(next.to_string())
        } else {
            None
        };
        Box::pin(async move { Ok(won) })
    }
}
