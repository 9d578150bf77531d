//! [`super::Placement::Process`]: records in this process's memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::future::BoxFuture;

use super::{Backend, Kind, Raw, StoreError};
use crate::catalog::clock::Clock;

/// Most records held at once; the soonest-expiring are dropped beyond it.
const MAX_RECORDS: usize = 100_000;

pub struct MemoryBackend {
    map: Mutex<HashMap<String, Raw>>,
    clock: Arc<dyn Clock>,
}

impl MemoryBackend {
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            clock,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Raw>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Backend for MemoryBackend {
    fn put<'a>(&'a self, _kind: Kind, name: &'a str, raw: Raw) -> BoxFuture<'a, Result<(), StoreError>> {
        let now = self.clock.now();
        let mut map = self.lock();
        map.retain(|_, r| r.expires > now);
        if map.len() >= MAX_RECORDS
            && let Some(oldest) = map.iter().min_by_key(|(_, r)| r.expires).map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
        map.insert(name.to_string(), raw);
        Box::pin(async { Ok(()) })
    }

    fn get<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Raw>, StoreError>> {
        let found = self.lock().get(name).cloned();
        Box::pin(async move { Ok(found) })
    }

    fn take<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<Option<Raw>, StoreError>> {
        let found = self.lock().remove(name);
        Box::pin(async move { Ok(found) })
    }

    fn delete<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        self.lock().remove(name);
        Box::pin(async { Ok(()) })
    }
}
