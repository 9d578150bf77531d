//! Prefix-range lists with consistent pagination.
//!
//! Pages are read from the store's memory image (see [`super::image`]), never from the file: the first
//! page from the image at RV `R`, its continue token recording `R` and the last key. A later page is
//! read from the image at a newer `R'` with the effects of the history events in `(R, R']` undone, so
//! every page reflects the state at `R` however many writes happened in between. Stored values are
//! shared, not copied: a plain list splices their JSON text into the response as it is.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

use super::history::History;
use super::image::Entry;

use super::key::{decode_value, encode_value, namespace_of, prefix_range, value_json, value_rv};
use super::{ObjectKey, StoreError};

const TOKEN_VERSION: u8 = 1;

/// Counting the entries after a page means reading them; beyond this many the count is left unset (as
/// the field allows) so that paging through a big collection stays linear.
const REMAINING_COUNT_CAP: u64 = 1000;

/// Entries after a page's own that are counted without being taken: enough to tell a remaining count
/// within [`REMAINING_COUNT_CAP`] from one beyond it.
pub(crate) const COUNTED_AFTER_PAGE: usize = REMAINING_COUNT_CAP as usize + 1;

/// A predicate on objects (label and field selectors), applied before the limit.
pub type ObjectFilter = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

/// Which objects a list returns. `filter` is applied before `limit` (label/field selectors).
#[derive(Clone, Default)]
pub struct ListQuery {
    pub group: String,
    pub resource: String,
    /// `None` = every logical cluster (kcp wildcard).
    pub cluster: Option<String>,
    /// `None` = every namespace.
    pub namespace: Option<String>,
    /// Maximum number of matching items; `None` or `Some(0)` = all.
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    pub filter: Option<ObjectFilter>,
    /// Only the object of this name (with `cluster` and `namespace` set; `Some("")` for a
    /// cluster-scoped resource): one key is read instead of the collection, as kube's storage
    /// does for a `metadata.name=` field selector. The filter still applies.
    pub name: Option<String>,
}

impl std::fmt::Debug for ListQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListQuery")
            .field("group", &self.group)
            .field("resource", &self.resource)
            .field("cluster", &self.cluster)
            .field("namespace", &self.namespace)
            .field("limit", &self.limit)
            .field("continue_token", &self.continue_token)
            .field("filter", &self.filter.as_ref().map(|_| "<fn>"))
            .field("name", &self.name)
            .finish()
    }
}

/// One item of a list as its stored JSON text, which already carries its resourceVersion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawItem {
    /// The encoded key: with `rv`, the identity of this exact state (RVs are never reused), so
    /// representations derived from the text can be cached under it. Shared with the image.
    pub key: Arc<[u8]>,
    pub rv: u64,
    /// The stored value (RV prefix, then JSON), shared with the memory image.
    value: Arc<[u8]>,
}

impl RawItem {
    /// JSON written by the store itself, so it is spliced into responses without being checked.
    pub fn json(&self) -> &[u8] {
        value_json(&self.value)
    }
}

/// One page of a list.
#[derive(Clone, Debug)]
pub struct ListPage {
    pub items: Vec<Value>,
    /// Items as stored JSON text, filled instead of `items` by `Store::list_raw` without a filter.
    pub raw_items: Vec<RawItem>,
    /// The RV the page reflects: the snapshot's for a first page, the first page's for later ones.
    pub resource_version: u64,
    pub continue_token: Option<String>,
    /// Matching items after this page; set only when the query has no filter and at most 1000 remain.
    pub remaining_item_count: Option<u64>,
}

impl PartialEq for ListPage {
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items
            && self.raw_items == other.raw_items
            && self.resource_version == other.resource_version
            && self.continue_token == other.continue_token
            && self.remaining_item_count == other.remaining_item_count
    }
}

/// The decoded content of a continue token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ContinueToken {
    pub(crate) rv: u64,
    pub(crate) last_key: Vec<u8>,
}

impl ContinueToken {
    pub(crate) fn encode(&self) -> String {
        let mut raw = Vec::with_capacity(9 + self.last_key.len());
        raw.push(TOKEN_VERSION);
        raw.extend_from_slice(&self.rv.to_be_bytes());
        raw.extend_from_slice(&self.last_key);
        URL_SAFE_NO_PAD.encode(raw)
    }

    pub(crate) fn decode(token: &str) -> Result<Self, StoreError> {
        let invalid = |why: &str| StoreError::InvalidContinue(why.to_string());
        let raw = URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|_| invalid("continue token is not valid base64"))?;
        let (version, rest) = raw.split_first().ok_or_else(|| invalid("continue token is empty"))?;
        if *version != TOKEN_VERSION || rest.len() < 9 {
            return Err(invalid("continue token has an unknown format"));
        }
        let (rv, last_key) = rest.split_at(8);
        let rv: [u8; 8] = rv
            .try_into()
            .map_err(|_| invalid("continue token has an unknown format"))?;
        Ok(Self {
            rv: u64::from_be_bytes(rv),
            last_key: last_key.to_vec(),
        })
    }
}

/// The key range a query scans, plus the namespace it must post-filter on (wildcard + namespace).
pub(crate) struct Scan {
    pub(crate) start: Vec<u8>,
    pub(crate) end: Vec<u8>,
    namespace_filter: Option<String>,
}

impl Scan {
    pub(crate) fn for_query(q: &ListQuery) -> Result<Self, StoreError> {
        let (parts, namespace_filter): (Vec<&str>, _) = match (&q.cluster, &q.namespace) {
            (Some(c), Some(ns)) => match &q.name {
                Some(name) => (vec![&q.group, &q.resource, c, ns, name], None),
                None => (vec![&q.group, &q.resource, c, ns], None),
            },
            (Some(c), None) => (vec![&q.group, &q.resource, c], None),
            (None, ns) => (vec![&q.group, &q.resource], ns.clone()),
        };
        if q.resource.is_empty() {
            return Err(StoreError::InvalidKey("list needs a resource".into()));
        }
        let (start, end) = prefix_range(&parts)?;
        Ok(Self {
            start,
            end,
            namespace_filter,
        })
    }

    /// The stored entries a page of `q` takes when no later write is undone: its items and one more
    /// (which says that more follow). `None` when that is not known in advance (an unpaged list, a
    /// filter, or keys of other namespaces in the range).
    pub(crate) fn page_entries(&self, q: &ListQuery) -> Option<usize> {
        self.is_bounded(q)
            .then(|| q.limit.filter(|l| *l > 0).unwrap_or(usize::MAX).saturating_add(1))
    }

    /// The stored entries a page of `q` takes to count what remains after it when `undone` entries
    /// are restored from the history (each can hide one stored entry): its items and the remaining
    /// ones it counts, plus one. Only meaningful when the page is bounded.
    pub(crate) fn entries_needed_with(&self, q: &ListQuery, undone: usize) -> usize {
        let limit = q.limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
        limit
            .saturating_add(REMAINING_COUNT_CAP as usize + 2)
            .saturating_add(undone)
    }

    fn is_bounded(&self, q: &ListQuery) -> bool {
        q.filter.is_none() && self.namespace_filter.is_none() && q.limit.is_some_and(|l| l > 0)
    }

    fn wants(&self, key: &[u8]) -> bool {
        self.namespace_filter
            .as_ref()
            .is_none_or(|ns| namespace_of(key) == Some(ns.as_bytes()))
    }

    fn wants_key(&self, key: &ObjectKey) -> bool {
        self.namespace_filter.as_ref().is_none_or(|ns| *ns == key.namespace)
    }

    fn contains(&self, key: &[u8]) -> bool {
        self.start.as_slice() <= key && key < self.end.as_slice()
    }
}

/// The state at some RV of keys touched since (`None`: the key did not exist then).
pub(crate) type Undo = BTreeMap<Arc<[u8]>, Option<Arc<Value>>>;

/// The state at `at_rv` of every key in `scan` touched by history events in `(at_rv, ..]`: the object
/// as it was then, or `None` if it did not exist.
pub(crate) fn undo_map(history: &History, at_rv: u64, scan: &Scan, q: &ListQuery) -> Result<Undo, StoreError> {
    if at_rv < history.floor() {
        return Err(StoreError::Expired {
            requested: at_rv,
            oldest: history.floor(),
        });
    }
    let mut undo = BTreeMap::new();
    for event in history.after(at_rv) {
        let k = event.key();
        if k.group != q.group
            || k.resource != q.resource
            || q.cluster.as_ref().is_some_and(|c| *c != k.cluster)
            || !scan.wants_key(k)
        {
            continue;
        }
        let encoded = k.encode()?;
        if scan.contains(&encoded) && !undo.contains_key(encoded.as_slice()) {
            // The oldest event after `at_rv` knows the state at `at_rv`: its `prev`.
            undo.insert(encoded.into(), event.prev()?);
        }
    }
    Ok(undo)
}

/// An item either still in the image (undecoded) or restored from history.
enum Item<'a> {
    Stored(&'a Arc<[u8]>),
    Restored(&'a Value),
}

/// What a page took from the image: its entries of the scan after `after`, in key order, and how
/// many entries follow them there, counted but not taken.
pub(crate) struct Taken<'a> {
    pub(crate) entries: &'a [Entry],
    /// Only without undone writes, and only when `entries` holds more than a page.
    pub(crate) counted_after: usize,
}

/// Reads one page from `stored` with `undo` laid over it.
pub(crate) fn read_page(
    stored: Taken<'_>,
    scan: &Scan,
    q: &ListQuery,
    undo: &Undo,
    after: Option<&[u8]>,
    page_rv: u64,
    raw: bool,
) -> Result<ListPage, StoreError> {
    let lower = match after {
        Some(k) => Bound::Excluded(k),
        None => Bound::Included(scan.start.as_slice()),
    };
    let bounds = (lower, Bound::Excluded(scan.end.as_slice()));
    let counted_after = stored.counted_after;
    let mut page = PageBuilder::new(scan, q, raw);
    page.reserve(stored.entries.len());
    let mut stored = stored.entries.iter();
    let mut restored = undo.range::<[u8], _>(bounds).peekable();
    let mut next_stored = stored.next();
    while !page.finished() {
        // Merge the two ordered sources; an undo entry replaces the image's entry for its key.
        let order = match (next_stored, restored.peek()) {
            (None, None) => break,
            (Some((s, _)), Some((r, _))) => s[..].cmp(&r[..]),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
        };
        if order == Ordering::Less {
            if let Some((k, v)) = next_stored {
                page.offer(k, Some(Item::Stored(v)))?;
            }
            next_stored = stored.next();
        } else {
            if let Some((k, v)) = restored.next() {
                page.offer(k, v.as_deref().map(Item::Restored))?;
            }
            if order == Ordering::Equal {
                next_stored = stored.next();
            }
        }
    }
    page.count_untaken(counted_after);
    Ok(page.finish(page_rv))
}

/// The resourceVersion of a state restored from history (set on it when it was stored).
fn restored_rv(value: &Value) -> Result<u64, StoreError> {
    value
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|rv| rv.parse().ok())
        .ok_or_else(|| StoreError::Corrupt("a state in the history has no resourceVersion".into()))
}

/// Accumulates one page from merged entries in key order.
struct PageBuilder<'q> {
    scan: &'q Scan,
    q: &'q ListQuery,
    limit: usize,
    items: Vec<Value>,
    /// With `raw`, matching stored items are kept as their JSON text instead of being parsed.
    raw: bool,
    raw_items: Vec<RawItem>,
    last_key: Option<Arc<[u8]>>,
    /// A matching entry exists after the page.
    more: bool,
    /// Matching entries after the page (counted only without a filter).
    remaining: u64,
}

impl<'q> PageBuilder<'q> {
    fn new(scan: &'q Scan, q: &'q ListQuery, raw: bool) -> Self {
        let limit = q.limit.filter(|l| *l > 0).unwrap_or(usize::MAX);
        Self {
            scan,
            q,
            limit,
            items: Vec::new(),
            raw: raw && q.filter.is_none(),
            raw_items: Vec::new(),
            last_key: None,
            more: false,
            remaining: 0,
        }
    }

    /// With a filter, remaining matches cannot be counted without parsing everything: stop at the first.
    /// Without one, stop counting past the cap.
    fn finished(&self) -> bool {
        self.more && (self.q.filter.is_some() || self.remaining > REMAINING_COUNT_CAP)
    }

    fn offer(&mut self, key: &Arc<[u8]>, item: Option<Item<'_>>) -> Result<(), StoreError> {
        let Some(item) = item else { return Ok(()) };
        if !self.scan.wants(key) {
            return Ok(());
        }
        let full = self.items.len() + self.raw_items.len() == self.limit;
        if full && self.q.filter.is_none() {
            // Without a filter every further entry matches: count it without parsing.
            self.more = true;
            self.remaining += 1;
            return Ok(());
        }
        if self.raw && !full {
            // Lists are the hot path for big collections: keep stored JSON verbatim (it already carries
            // its resourceVersion) instead of parsing and re-serializing it.
            let (rv, value) = match item {
                Item::Stored(bytes) => (value_rv(bytes)?, bytes.clone()),
                Item::Restored(value) => {
                    let rv = restored_rv(value)?;
                    (rv, encode_value(rv, value)?.into())
                }
            };
            self.raw_items.push(RawItem {
                key: key.clone(),
                rv,
                value,
            });
            self.last_key = Some(key.clone());
            return Ok(());
        }
        let value = match item {
            Item::Stored(bytes) => decode_value(bytes)?.1,
            Item::Restored(value) => value.clone(),
        };
        if self.q.filter.as_ref().is_some_and(|f| !f(&value)) {
            return Ok(());
        }
        if full {
            self.more = true;
        } else {
            self.items.push(value);
            self.last_key = Some(key.clone());
        }
        Ok(())
    }

    /// Makes room for the items `stored` entries give, up to a page, when each of them is one (no
    /// filter, no other namespace's keys among them): sized once instead of grown by doubling.
    fn reserve(&mut self, stored: usize) {
        if self.q.filter.is_some() || self.scan.namespace_filter.is_some() {
            return;
        }
        let room = self.limit.min(stored);
        match self.raw {
            true => self.raw_items.reserve_exact(room),
            false => self.items.reserve_exact(room),
        }
    }

    /// Counts `n` entries after the page that the image counted instead of handing over.
    fn count_untaken(&mut self, n: usize) {
        if n > 0 {
            self.more = true;
            self.remaining = self.remaining.saturating_add(n as u64);
        }
    }

    fn finish(self, page_rv: u64) -> ListPage {
        let continue_token = match (self.more, self.last_key) {
            (true, Some(last_key)) => Some(
                ContinueToken {
                    rv: page_rv,
                    last_key: last_key.to_vec(),
                }
                .encode(),
            ),
            _ => None,
        };
        let remaining_item_count =
            (self.more && self.q.filter.is_none() && self.remaining <= REMAINING_COUNT_CAP).then_some(self.remaining);
        ListPage {
            items: self.items,
            raw_items: self.raw_items,
            resource_version: page_rv,
            continue_token,
            remaining_item_count,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip() {
        let t = ContinueToken {
            rv: 77,
            last_key: b"g\0r\0c\0\0n\0".to_vec(),
        };
        assert_eq!(ContinueToken::decode(&t.encode()).unwrap(), t);
    }

    #[test]
    fn malformed_tokens_are_rejected() {
        for bad in [
            "",
            "!!!",
            &URL_SAFE_NO_PAD.encode([2u8; 12]),
            &URL_SAFE_NO_PAD.encode([1u8; 5]),
        ] {
            assert!(
                matches!(ContinueToken::decode(bad), Err(StoreError::InvalidContinue(_))),
                "{bad:?}"
            );
        }
    }
}
