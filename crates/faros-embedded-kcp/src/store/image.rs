//! The memory image of the objects table, like kube-apiserver's watch cache: every stored value (RV
//! prefix and JSON, exactly as in the file) by encoded key, and the RV it reflects.
//!
//! Gets and lists read the image instead of the file, so a big list neither pages the file in again
//! nor copies values: it takes shared references to them under a short read lock and splices their
//! text. The writer applies a batch's final values after its commit is durable and before anyone is
//! acknowledged or sees its events, so the image never shows what is not on disk, and a caller always
//! reads its own acknowledged write. The cost is memory: about the stored size of every object.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use redb::ReadableTable;

use super::StoreError;

/// Stored values by encoded key, at one RV.
#[derive(Debug, Default)]
pub(crate) struct Image {
    rv: u64,
    objects: BTreeMap<Arc<[u8]>, Arc<[u8]>>,
    /// The keys' and values' lengths summed: what the image holds, for `/metrics`.
    bytes: usize,
}

/// How much the image holds: objects, and their keys' and stored values' bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageSize {
    pub objects: usize,
    pub bytes: usize,
}

/// One stored value and its encoded key, shared with the image.
pub(crate) type Entry = (Arc<[u8]>, Arc<[u8]>);

/// A batch's final value per encoded key (`None` = removed), in the order applied. Values are
/// shared: the history holds the same text for the events that produced them.
pub(crate) type Writes = Vec<(Vec<u8>, Option<Arc<[u8]>>)>;

impl Image {
    /// Reads every stored object (startup).
    pub(crate) fn load(table: &redb::ReadOnlyTable<&'static [u8], &'static [u8]>, rv: u64) -> Result<Self, StoreError> {
        let (mut objects, mut bytes) = (BTreeMap::new(), 0);
        for entry in table.iter()? {
            let (k, v) = entry?;
            bytes += k.value().len() + v.value().len();
            objects.insert(Arc::from(k.value()), Arc::from(v.value()));
        }
        Ok(Self { rv, objects, bytes })
    }

    pub(crate) fn size(&self) -> ImageSize {
        ImageSize {
            objects: self.objects.len(),
            bytes: self.bytes,
        }
    }

    /// The RV of the last commit applied.
    pub(crate) fn rv(&self) -> u64 {
        self.rv
    }

    pub(crate) fn get(&self, key: &[u8]) -> Option<Arc<[u8]>> {
        self.objects.get(key).cloned()
    }

    /// The entries from `lower` up to (not including) `end`, at most `max` of them, shared: cheap
    /// enough to take under the lock, so parsing and filtering happen after it is released. Also how
    /// many entries follow the ones taken, counted up to `count_beyond` without taking them (a page
    /// counts what remains after it without sharing, and later dropping, a thousand more values); a
    /// count of at least one says that entries were left out.
    pub(crate) fn range(
        &self,
        lower: Bound<&[u8]>,
        end: &[u8],
        max: Option<usize>,
        count_beyond: usize,
    ) -> (Vec<Entry>, usize) {
        let mut found = self.objects.range::<[u8], _>((lower, Bound::Excluded(end)));
        // A range does not know its length: a page's is sized up front instead of grown by doubling.
        let mut taken = Vec::with_capacity(max.map_or(0, |m| m.min(self.objects.len())));
        let max = max.unwrap_or(usize::MAX);
        taken.extend(found.by_ref().take(max).map(|(k, v)| (k.clone(), v.clone())));
        (taken, found.take(count_beyond).count())
    }

    /// Applies one durable commit; returns the values it replaced or removed.
    pub(crate) fn apply(&mut self, writes: Writes, rv: u64) -> Vec<Arc<[u8]>> {
        let mut replaced = Vec::new();
        for (key, value) in writes {
            match value {
                // An update keeps the key it has instead of allocating it again.
                Some(value) => match self.objects.get_mut(key.as_slice()) {
                    Some(slot) => {
                        self.bytes = self.bytes + value.len() - slot.len();
                        replaced.push(std::mem::replace(slot, value));
                    }
                    None => {
                        self.bytes += key.len() + value.len();
                        self.objects.insert(key.into(), value);
                    }
                },
                None => {
                    if let Some(old) = self.objects.remove(key.as_slice()) {
                        self.bytes -= key.len() + old.len();
                        replaced.push(old);
                    }
                }
            }
        }
        self.rv = rv;
        replaced
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(k: &str, v: &str) -> (Vec<u8>, Option<Arc<[u8]>>) {
        (k.as_bytes().to_vec(), Some(v.as_bytes().into()))
    }

    fn keys(found: &[Entry]) -> Vec<String> {
        found
            .iter()
            .map(|(k, v)| format!("{}={}", String::from_utf8_lossy(k), String::from_utf8_lossy(v)))
            .collect()
    }

    #[test]
    fn applies_commits_in_order_and_ranges_by_key() {
        let mut image = Image::default();
        image.apply(vec![entry("a/1", "x"), entry("a/2", "y"), entry("b/1", "z")], 3);
        // A later value of a key in the same batch wins; a removal removes.
        let replaced = image.apply(vec![entry("a/1", "x2"), (b"a/2".to_vec(), None), entry("a/1", "x3")], 6);
        let replaced: Vec<&[u8]> = replaced.iter().map(|v| &v[..]).collect();
        assert_eq!(replaced, [&b"x"[..], b"y", b"x2"]);
        assert_eq!(image.rv(), 6);
        assert_eq!(image.get(b"a/1").as_deref(), Some(&b"x3"[..]));
        assert_eq!(image.get(b"a/2"), None);
        // What is left: a/1=x3 and b/1=z.
        assert_eq!(
            image.size(),
            ImageSize {
                objects: 2,
                bytes: 3 + 2 + 3 + 1
            }
        );
        type Case<'a> = (Bound<&'a [u8]>, &'a [u8], Vec<&'a str>);
        let cases: [Case; 4] = [
            (Bound::Included(b"a/"), b"a0", vec!["a/1=x3"]),
            (Bound::Included(b"a/"), b"c", vec!["a/1=x3", "b/1=z"]),
            (Bound::Excluded(b"a/1"), b"c", vec!["b/1=z"]),
            (Bound::Included(b"c"), b"d", vec![]),
        ];
        for (lower, end, want) in cases {
            let (found, beyond) = image.range(lower, end, None, 5);
            assert_eq!(
                (keys(&found), beyond),
                (want.iter().map(|k| k.to_string()).collect(), 0),
                "{lower:?}..{end:?}"
            );
        }
        // (max, count beyond, expected entries, expected count)
        let bounded: [(usize, usize, Vec<&str>, usize); 6] = [
            (0, 1, vec![], 1),
            (0, 5, vec![], 2),
            (1, 1, vec!["a/1=x3"], 1),
            (1, 0, vec!["a/1=x3"], 0),
            (2, 1, vec!["a/1=x3", "b/1=z"], 0),
            (3, 1, vec!["a/1=x3", "b/1=z"], 0),
        ];
        for (max, count_beyond, want, beyond) in bounded {
            let (found, counted) = image.range(Bound::Included(b"a/"), b"c", Some(max), count_beyond);
            assert_eq!(
                (keys(&found), counted),
                (want.iter().map(|k| k.to_string()).collect(), beyond),
                "max {max}, count {count_beyond}"
            );
        }
    }
}
