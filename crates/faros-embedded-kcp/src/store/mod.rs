//! The storage engine: one redb file, one global resourceVersion, a bounded event history.
//!
//! - Objects live in one table keyed by `(group, resource, cluster, namespace, name)` (see [`key`]), so
//!   per-cluster, per-namespace and all-cluster (kcp wildcard) lists are prefix range scans.
//! - Every write goes through one writer thread that folds concurrent calls into one transaction and
//!   acknowledges them only after a `Durability::Immediate` commit (see [`writer`]).
//! - The RV counter is stored in the same transaction as the objects, so it survives restarts and never
//!   goes backwards. The event history is memory only: after a restart it starts at the stored RV and
//!   older watches and continue tokens get `TooOld` / `Expired`, which clients answer by relisting.
//! - Gets and lists are served from a memory image of every stored value (see [`image`]), which the
//!   writer updates after each durable commit; the file is read only at open and by the writer's
//!   precondition checks (through redb's cache, sized by [`StoreOptions::cache_bytes`]).

mod history;
mod image;
mod key;
mod list;
mod watch;
mod writer;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, mpsc};
use std::thread::JoinHandle;

#[cfg(test)]
use faros_core::status::Status;
use redb::{Database, ReadableDatabase, TableDefinition};
use serde_json::Value;
use tokio::sync::oneshot;

pub use key::ObjectKey;
pub use list::{ListPage, ListQuery, RawItem};
pub use watch::{WatchFilter, WatchStream};
pub use writer::WriteOp;

use history::History;
use image::Image;
pub use image::ImageSize;
use key::{decode_value, prefix_range};
pub(crate) use list::ContinueToken;
use list::Scan;
use watch::Hub;
use writer::Request;

/// Encoded [`ObjectKey`] → resourceVersion (8 bytes BE) + object JSON.
pub(crate) const OBJECTS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("objects");
/// Store-wide counters.
pub(crate) const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
pub(crate) const RV_KEY: &str = "resourceVersion";

/// How to open a [`Store`].
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// The redb file; created when missing.
    pub path: PathBuf,
    /// Events kept in memory for watch resumption and continued lists.
    pub history_capacity: usize,
    /// redb page cache size.
    pub cache_bytes: usize,
    /// Fold concurrent writes into one durable commit.
    pub group_commit: bool,
}

impl StoreOptions {
    /// Defaults sized for a dev machine: 10 000 events, 32 MiB cache, group commit on.
    ///
    /// Expect resident memory of roughly twice the cache (freed page buffers stay with the allocator), the
    /// image (every stored value), and the history: each event's JSON text (twice for updates), plus
    /// about 6 KiB per parsed 1 KiB object for the newest 1 024 events.
    #[cfg(test)]
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            history_capacity: 10_000,
            cache_bytes: 32 << 20,
            group_commit: true,
        }
    }
}

/// Why a store operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("{} {:?} already exists in cluster {:?}", .0.resource, .0.name, .0.cluster)]
    AlreadyExists(Box<ObjectKey>),
    #[error("{} {:?} not found in cluster {:?}", .0.resource, .0.name, .0.cluster)]
    NotFound(Box<ObjectKey>),
    #[error("{} {:?} has resourceVersion {actual}, not {expected}", key.resource, key.name)]
    Conflict {
        key: Box<ObjectKey>,
        expected: u64,
        actual: u64,
    },
    /// A watch asked for events the history no longer holds (or a watcher fell that far behind).
    #[error("too old resource version: {requested} ({oldest})")]
    TooOld { requested: u64, oldest: u64 },
    /// A continue token's RV predates the history.
    #[error("continue token at resourceVersion {requested} is older than the history ({oldest})")]
    Expired { requested: u64, oldest: u64 },
    #[error("invalid continue token: {0}")]
    InvalidContinue(String),
    #[error("invalid key: {0}")]
    InvalidKey(String),
    #[error("invalid object: {0}")]
    InvalidObject(String),
    #[error("corrupt store: {0}")]
    Corrupt(String),
    #[error("storage error: {0}")]
    Storage(String),
    #[error("store is closed")]
    Closed,
}

impl StoreError {
    /// The Kubernetes Status an API server answers with.
    #[cfg(test)]
    pub fn to_status(&self) -> Status {
        match self {
            Self::AlreadyExists(k) => Status::already_exists(&k.group, &k.resource, &k.name),
            Self::NotFound(k) => Status::not_found(&k.group, &k.resource, &k.name),
            Self::Conflict { key, .. } => Status::conflict(&key.group, &key.resource, &key.name),
            Self::TooOld { .. } => Status::expired(self.to_string()),
            Self::Expired { .. } => Status::expired(
                "The provided continue parameter is too old to display a consistent list result. \
                 You can start a new list without the continue parameter.",
            ),
            Self::InvalidContinue(_) | Self::InvalidKey(_) | Self::InvalidObject(_) => {
                Status::bad_request(self.to_string())
            }
            Self::Corrupt(_) | Self::Storage(_) | Self::Closed => Status::internal(self.to_string()),
        }
    }
}

macro_rules! storage_errors {
    ($($ty:ty),*) => {$(
        impl From<$ty> for StoreError {
            fn from(e: $ty) -> Self {
                StoreError::Storage(e.to_string())
            }
        }
    )*};
}
storage_errors!(
    redb::Error,
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    redb::SetDurabilityError
);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One committed change.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub rv: u64,
    pub event_type: EventType,
    pub key: ObjectKey,
    /// The new state; for `Deleted` the last state with `metadata.resourceVersion` = the deletion RV.
    pub object: Arc<Value>,
    /// The state before (as stored, with its own RV); `None` for `Added`.
    pub prev: Option<Arc<Value>>,
}

/// One committed change as its writer hears of it: the event, and the stored value of its object
/// (resourceVersion prefix, then the JSON text) when this commit wrote it, so that an answer can be
/// those bytes instead of a serialization of the same object. A deletion, or a state a later write
/// in the same commit replaced, has none.
#[derive(Clone, Debug)]
pub struct Committed {
    pub event: Event,
    pub stored: Option<Arc<[u8]>>,
}

impl Committed {
    /// The object's JSON text as stored, if this commit stored it.
    pub fn json(&self) -> Option<bytes::Bytes> {
        let stored = self.stored.clone()?;
        Some(bytes::Bytes::from_owner(stored).slice(key::RV_PREFIX..))
    }
}

/// What a list page takes from the image, in the order it tries them.
#[derive(Clone, Copy)]
enum Take {
    /// Its own entries and one more; those after them are only counted.
    PageAndCount(usize),
    /// This many entries: enough to merge undone writes and count what remains.
    Entries(usize),
    /// Every entry after its start.
    All,
}

/// State shared by the handles and the writer thread.
pub(crate) struct Shared {
    pub(crate) db: Database,
    pub(crate) hub: Arc<Hub>,
    /// Every `(group, resource)` that has had an object; lets `scan_cluster` visit one range per resource.
    pub(crate) resources: RwLock<BTreeSet<(String, String)>>,
    /// Every stored value, as of the last commit applied to it.
    pub(crate) image: RwLock<Image>,
    /// The last committed RV.
    pub(crate) current_rv: AtomicU64,
    /// Durable commits so far (observability, tests).
    pub(crate) commits: AtomicU64,
}

/// The object store. Cheap to clone; the file closes when the last clone is dropped.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    requests: Option<mpsc::Sender<Request>>,
    writer: Option<JoinHandle<()>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Closing the queue lets the writer drain it and exit; joining it closes the file before the
        // drop returns, so a reopen right after cannot race the old handle.
        self.requests.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("current_rv", &self.current_rv()).finish()
    }
}

impl Store {
    /// Opens (or creates) the file and rebuilds the in-memory state from it.
    pub fn open(opts: StoreOptions) -> Result<Store, StoreError> {
        let db = Database::builder()
            .set_cache_size(opts.cache_bytes)
            .create(&opts.path)?;
        let write = db.begin_write()?;
        write.open_table(OBJECTS)?;
        write.open_table(META)?;
        write.commit()?;

        let read = db.begin_read()?;
        let rv = read.open_table(META)?.get(RV_KEY)?.map_or(0, |g| g.value());
        let resources = discover_resources(&read.open_table(OBJECTS)?)?;
        let image = Image::load(&read.open_table(OBJECTS)?, rv)?;
        drop(read);

        let shared = Arc::new(Shared {
            db,
            hub: Arc::new(Hub::new(History::new(opts.history_capacity, rv))),
            resources: RwLock::new(resources),
            image: RwLock::new(image),
            current_rv: AtomicU64::new(rv),
            commits: AtomicU64::new(0),
        });
        let (requests, queue) = mpsc::channel();
        let for_writer = shared.clone();
        let writer = std::thread::Builder::new()
            .name("kcp-store-writer".into())
            .spawn(move || writer::run(for_writer, queue, opts.group_commit))
            .map_err(|e| StoreError::Storage(format!("cannot start the writer thread: {e}")))?;
        Ok(Store {
            inner: Arc::new(Inner {
                shared,
                requests: Some(requests),
                writer: Some(writer),
            }),
        })
    }

    fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    /// The RV of the last durable commit.
    pub fn current_rv(&self) -> u64 {
        self.shared().current_rv.load(Ordering::Acquire)
    }

    /// The oldest RV a watch can start from (or a continue token can carry).
    #[cfg(test)]
    pub fn oldest_rv(&self) -> u64 {
        self.shared().hub.lock().history.floor()
    }

    /// Durable commits since open; with group commit, fewer than acknowledged writes.
    #[cfg(test)]
    pub fn commits(&self) -> u64 {
        self.shared().commits.load(Ordering::Relaxed)
    }

    /// How much the memory image holds (every stored object), for `/metrics`.
    pub fn image_size(&self) -> ImageSize {
        self.image().size()
    }

    fn image(&self) -> std::sync::RwLockReadGuard<'_, Image> {
        self.shared().image.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The stored object, with `metadata.resourceVersion` set.
    pub fn get(&self, key: &ObjectKey) -> Result<Option<Value>, StoreError> {
        self.get_as(key)
    }

    /// The stored object read into `T`, which takes only the fields it names: a check of one field
    /// (is the namespace being deleted?) builds no tree of the whole object.
    pub fn get_as<T: serde::de::DeserializeOwned>(&self, key: &ObjectKey) -> Result<Option<T>, StoreError> {
        let encoded = key.encode()?;
        let found = self.image().get(&encoded);
        found.map(|value| key::decode_json(&value)).transpose()
    }

    /// The resourceVersion of the stored object, without parsing it: lets a caller that keeps
    /// something derived from an object (a schema's resource definitions) tell whether it is stale.
    pub fn resource_version(&self, key: &ObjectKey) -> Result<Option<u64>, StoreError> {
        let encoded = key.encode()?;
        let found = self.image().get(&encoded);
        found.map(|value| key::value_rv(&value)).transpose()
    }

    /// Applies `ops` atomically and returns their events once the commit is durable.
    ///
    /// Each op gets its own RV. Events reach watchers after the commit, in RV order.
    pub async fn write(&self, ops: Vec<WriteOp>) -> Result<Vec<Event>, StoreError> {
        let committed = self.write_committed(ops).await?;
        Ok(committed.into_iter().map(|c| c.event).collect())
    }

    /// Like [`Store::write`], with the stored text of each event's object (see [`Committed`]).
    pub async fn write_committed(&self, mut ops: Vec<WriteOp>) -> Result<Vec<Committed>, StoreError> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        for op in &mut ops {
            if let WriteOp::Create { object, .. } | WriteOp::Update { object, .. } = op {
                key::reserve_resource_version(object);
            }
        }
        let (reply, answer) = oneshot::channel();
        let requests = self.inner.requests.as_ref().ok_or(StoreError::Closed)?;
        requests.send(Request { ops, reply }).map_err(|_| StoreError::Closed)?;
        answer.await.map_err(|_| StoreError::Closed)?
    }

    /// One page of a list; later pages (via the continue token) reflect the first page's RV.
    pub fn list(&self, q: &ListQuery) -> Result<ListPage, StoreError> {
        self.list_page(q, false)
    }

    /// Like [`Store::list`], but without a filter the items come back unparsed in
    /// `ListPage::raw_items` (the JSON text as stored), which is what a plain LIST response needs.
    pub fn list_raw(&self, q: &ListQuery) -> Result<ListPage, StoreError> {
        self.list_page(q, true)
    }

    fn list_page(&self, q: &ListQuery, raw: bool) -> Result<ListPage, StoreError> {
        let scan = Scan::for_query(q)?;
        let token = q.continue_token.as_deref().map(ContinueToken::decode).transpose()?;
        if let Some(t) = &token
            && !(t.last_key.starts_with(&scan.start) && t.last_key < scan.end)
        {
            return Err(StoreError::InvalidContinue(
                "continue token belongs to a different list".into(),
            ));
        }
        let lower = match &token {
            Some(t) => Bound::Excluded(t.last_key.as_slice()),
            None => Bound::Included(scan.start.as_slice()),
        };
        // A page first takes only the entries it uses and counts the ones after it without taking
        // them. Undone writes can hide or restore entries after the page, which a bare count cannot
        // tell, so with any it takes those too (as many more as were undone); failing that (many
        // writes fell inside the page), everything after its start.
        let mut take = match scan.page_entries(q) {
            Some(page) => Take::PageAndCount(page),
            None => Take::All,
        };
        loop {
            let (max, count_beyond) = match take {
                Take::PageAndCount(page) => (Some(page), list::COUNTED_AFTER_PAGE),
                Take::Entries(n) => (Some(n), 1),
                Take::All => (None, 0),
            };
            let (snapshot_rv, (stored, beyond)) = {
                let image = self.image();
                (image.rv(), image.range(lower, &scan.end, max, count_beyond))
            };
            let (undo, after, page_rv) = match &token {
                None => (BTreeMap::new(), None, snapshot_rv),
                Some(t) if t.rv > snapshot_rv => {
                    return Err(StoreError::InvalidContinue(format!(
                        "continue token is from the future ({})",
                        t.rv
                    )));
                }
                Some(t) if t.rv == snapshot_rv => (BTreeMap::new(), Some(t.last_key.as_slice()), t.rv),
                Some(t) => {
                    let hub = self.shared().hub.lock_caught_up(snapshot_rv)?;
                    let undo = list::undo_map(&hub.history, t.rv, &scan, q)?;
                    (undo, Some(t.last_key.as_slice()), t.rv)
                }
            };
            if beyond > 0 && !undo.is_empty() {
                let needed = scan.entries_needed_with(q, undo.len());
                if max.is_some_and(|n| n < needed) {
                    take = match take {
                        Take::PageAndCount(_) => Take::Entries(needed),
                        Take::Entries(_) | Take::All => Take::All,
                    };
                    continue;
                }
            }
            let stored = list::Taken {
                entries: &stored,
                counted_after: if undo.is_empty() { beyond } else { 0 },
            };
            return list::read_page(stored, &scan, q, &undo, after, page_rv, raw);
        }
    }

    /// The stored objects of `group/resource` (in `cluster`, or every cluster) whose stored JSON
    /// contains `needle`, parsed: for scans that care only about objects having some member (a
    /// needle such as `"ownerReferences"`, quotes included). The text is searched instead of
    /// parsing every object; an object whose text merely mentions the needle is returned too, so
    /// callers still check what they look for.
    pub fn objects_containing(
        &self,
        group: &str,
        resource: &str,
        cluster: Option<&str>,
        needle: &str,
    ) -> Result<Vec<Value>, StoreError> {
        let (start, end) = match cluster {
            Some(c) => prefix_range(&[group, resource, c])?,
            None => prefix_range(&[group, resource])?,
        };
        let (stored, _) = self.image().range(Bound::Included(start.as_slice()), &end, None, 0);
        let mut found = Vec::new();
        for (_, value) in &stored {
            let json = key::value_json(value);
            // Stored JSON is serde's output, so UTF-8; std's substring search is vectorized.
            let text = std::str::from_utf8(json).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            if text.contains(needle) {
                found.push(decode_value(value)?.1);
            }
        }
        Ok(found)
    }

    /// Events with `rv > from_rv` matching `filter`; `TooOld` when the history no longer reaches back.
    pub fn watch(&self, from_rv: u64, filter: WatchFilter) -> Result<WatchStream, StoreError> {
        self.shared().hub.watch(from_rv, filter)
    }

    /// Every key stored in one logical cluster, ordered by (group, resource, namespace, name).
    pub fn scan_cluster(&self, cluster: &str) -> Result<Vec<ObjectKey>, StoreError> {
        let resources: Vec<(String, String)> = {
            let guard = self.shared().resources.read().unwrap_or_else(|p| p.into_inner());
            guard.iter().cloned().collect()
        };
        let read = self.shared().db.begin_read()?;
        let table = read.open_table(OBJECTS)?;
        let mut keys = Vec::new();
        for (group, resource) in &resources {
            let (start, end) = prefix_range(&[group, resource, cluster])?;
            for entry in table.range::<&[u8]>(start.as_slice()..end.as_slice())? {
                let (k, _) = entry?;
                keys.push(ObjectKey::decode(k.value())?);
            }
        }
        Ok(keys)
    }
}

/// Finds every `(group, resource)` with one seek per resource, skipping over each resource's keys.
fn discover_resources(
    table: &redb::ReadOnlyTable<&'static [u8], &'static [u8]>,
) -> Result<BTreeSet<(String, String)>, StoreError> {
    let mut found = BTreeSet::new();
    let mut from: Vec<u8> = Vec::new();
    loop {
        let next = table.range::<&[u8]>(from.as_slice()..)?.next().transpose()?;
        let Some((k, _)) = next else { break };
        let key = ObjectKey::decode(k.value())?;
        from = prefix_range(&[&key.group, &key.resource])?.1;
        found.insert((key.group, key.resource));
    }
    Ok(found)
}
