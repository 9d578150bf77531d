//! Representations derived from stored objects (their protobuf list-item messages), kept per object
//! so that a big list is assembled by splicing bytes instead of parsing and encoding every item.
//!
//! An entry belongs to one exact state: the object's key and its resourceVersion, which is never
//! reused. A lookup with another RV misses, so a stale entry can never be served; the commit hook
//! forgets the entries of changed and deleted objects so that memory follows the live objects that
//! were listed in that form (about the size of their JSON each).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Derived bytes and the resourceVersion they belong to.
type Kept = (u64, Arc<[u8]>);

/// Derived bytes per encoded object key, valid for one resourceVersion.
#[derive(Default)]
pub struct ItemCache {
    entries: RwLock<HashMap<Vec<u8>, Kept>>,
}

impl ItemCache {
    /// The bytes of each `(key, rv)` in order: kept ones, or `derive`d (and kept) for the rest.
    /// Fails with the first error of `derive`, keeping nothing of this call.
    pub fn get_or_derive<'a, E>(
        &self,
        wanted: impl IntoIterator<Item = (&'a [u8], u64)>,
        mut derive: impl FnMut(usize) -> Result<Vec<u8>, E>,
    ) -> Result<Vec<Arc<[u8]>>, E> {
        let wanted: Vec<(&[u8], u64)> = wanted.into_iter().collect();
        let mut found: Vec<Option<Arc<[u8]>>> = {
            let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
            wanted
                .iter()
                .map(|(key, rv)| match entries.get(*key) {
                    Some((kept_rv, bytes)) if kept_rv == rv => Some(bytes.clone()),
                    _ => None,
                })
                .collect()
        };
        // Derived outside the lock: a first list of a big collection must not stall the others.
        let mut derived = Vec::new();
        for (i, slot) in found.iter_mut().enumerate() {
            if slot.is_none() {
                let bytes: Arc<[u8]> = derive(i)?.into();
                derived.push(i);
                *slot = Some(bytes);
            }
        }
        if !derived.is_empty() {
            let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
            for i in derived {
                let (key, rv) = wanted[i];
                if let Some(bytes) = &found[i] {
                    // A newer state kept meanwhile by another list stays.
                    match entries.get(key) {
                        Some((kept_rv, _)) if *kept_rv > rv => {}
                        _ => {
                            entries.insert(key.to_vec(), (rv, bytes.clone()));
                        }
                    }
                }
            }
        }
        Ok(found.into_iter().flatten().collect())
    }

    /// Drops what is kept for `key` (the object changed or is gone).
    pub fn forget(&self, key: &[u8]) {
        let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
        entries.remove(key);
    }

    /// Entries kept (tests, observability).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.read().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Derives "<key>@<rv>" and counts the derivations.
    fn lookup(cache: &ItemCache, wanted: &[(&str, u64)], derivations: &mut usize) -> Vec<String> {
        let got = cache
            .get_or_derive(wanted.iter().map(|(k, rv)| (k.as_bytes(), *rv)), |i| {
                *derivations += 1;
                Ok::<_, ()>(format!("{}@{}", wanted[i].0, wanted[i].1).into_bytes())
            })
            .unwrap();
        got.iter().map(|b| String::from_utf8(b.to_vec()).unwrap()).collect()
    }

    #[test]
    fn keeps_one_state_per_key_and_derives_only_misses() {
        let cache = ItemCache::default();
        // (wanted, expected derivations of this step, entries after)
        type Step<'a> = (Vec<(&'a str, u64)>, usize, usize);
        let steps: Vec<Step> = vec![
            (vec![("a", 1), ("b", 2)], 2, 2),
            (vec![("a", 1), ("b", 2)], 0, 2),
            // A newer state misses and replaces the older one.
            (vec![("a", 3), ("b", 2), ("c", 4)], 2, 3),
            // An older state (a continued list at an earlier RV) is derived but does not evict the newer.
            (vec![("a", 1)], 1, 3),
            (vec![("a", 3)], 0, 3),
        ];
        for (wanted, derivations, len) in steps {
            let mut n = 0;
            let got = lookup(&cache, &wanted, &mut n);
            let want: Vec<String> = wanted.iter().map(|(k, rv)| format!("{k}@{rv}")).collect();
            assert_eq!((got, n, cache.len()), (want, derivations, len), "{wanted:?}");
        }
        cache.forget(b"a");
        let mut n = 0;
        lookup(&cache, &[("a", 3)], &mut n);
        assert_eq!(n, 1);
    }

    #[test]
    fn a_failed_derivation_keeps_nothing() {
        let cache = ItemCache::default();
        let got = cache.get_or_derive([(&b"a"[..], 1), (&b"b"[..], 1)], |i| {
            if i == 0 { Ok(vec![1]) } else { Err("no") }
        });
        assert_eq!(got, Err("no"));
        assert_eq!(cache.len(), 0);
    }
}
