//! [`Store`]: the controller's cache of watched objects, folded from watch events without IO.
//!
//! Objects come from one or more watch sources (e.g. one per virtual workspace shard); each entry
//! remembers its source, so a relist of one source prunes only that source's objects.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use faros_core::kcp::ANNOTATION_CLUSTER;
use kube::runtime::watcher::Event;
use kube::{Resource, ResourceExt};

use crate::ClusterKey;

/// What folding one event asks of the queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// The object is new or changed: reconcile it.
    Queue(ClusterKey),
    /// The object is gone (deleted, or absent from a relist): forget its key.
    Gone(ClusterKey),
}

#[derive(Debug)]
struct Entry<T> {
    object: Arc<T>,
    source: usize,
}

/// See the module docs.
#[derive(Debug)]
pub struct Store<T> {
    objects: BTreeMap<ClusterKey, Entry<T>>,
    /// Per source, the keys seen since its relist began (between `Init` and `InitDone`).
    relists: BTreeMap<usize, BTreeSet<ClusterKey>>,
}

impl<T> Default for Store<T> {
    fn default() -> Self {
        Self {
            objects: BTreeMap::new(),
            relists: BTreeMap::new(),
        }
    }
}

impl<T: Resource> Store<T> {
    /// Folds one event of watch `source` into the store and says what the queue must do.
    /// `is_echo` is asked about every `Apply` (not the relist's `InitApply`): true means the event
    /// is the echo of the controller's own write, which updates the store but queues nothing.
    pub fn apply(&mut self, source: usize, event: Event<T>, is_echo: impl Fn(&ClusterKey, &T) -> bool) -> Vec<Change> {
        let keyed = |obj: T| match ClusterKey::of(&obj) {
            Some(key) => Some((key, obj)),
            None => {
                tracing::warn!(name = %obj.name_any(), "object without {ANNOTATION_CLUSTER}; cannot address it, ignored");
                None
            }
        };
        match event {
            Event::Init => {
                self.relists.insert(source, BTreeSet::new());
                vec![]
            }
            Event::InitApply(obj) => {
                let Some((key, obj)) = keyed(obj) else { return vec![] };
                if let Some(seen) = self.relists.get_mut(&source) {
                    seen.insert(key.clone());
                }
                self.insert(key.clone(), obj, source);
                vec![Change::Queue(key)]
            }
            Event::Apply(obj) => {
                let Some((key, obj)) = keyed(obj) else { return vec![] };
                let echo = is_echo(&key, &obj);
                self.insert(key.clone(), obj, source);
                if echo { vec![] } else { vec![Change::Queue(key)] }
            }
            Event::Delete(obj) => {
                let Some((key, _)) = keyed(obj) else { return vec![] };
                self.objects.remove(&key);
                vec![Change::Gone(key)]
            }
            Event::InitDone => {
                // Objects deleted while the watch was down are absent from the relist.
                let Some(seen) = self.relists.remove(&source) else {
                    return vec![];
                };
                let gone: Vec<ClusterKey> = self
                    .objects
                    .iter()
                    .filter(|(k, e)| e.source == source && !seen.contains(*k))
                    .map(|(k, _)| k.clone())
                    .collect();
                for key in &gone {
                    self.objects.remove(key);
                }
                gone.into_iter().map(Change::Gone).collect()
            }
        }
    }
}

impl<T> Store<T> {
    fn insert(&mut self, key: ClusterKey, object: T, source: usize) {
        let object = Arc::new(object);
        self.objects.insert(key, Entry { object, source });
    }

    /// The object of `key` and the index of the source it came from.
    pub fn get(&self, key: &ClusterKey) -> Option<(Arc<T>, usize)> {
        self.objects.get(key).map(|e| (e.object.clone(), e.source))
    }

    pub fn contains(&self, key: &ClusterKey) -> bool {
        self.objects.contains_key(key)
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Every cached object, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&ClusterKey, &T)> {
        self.objects.iter().map(|(k, e)| (k, e.object.as_ref()))
    }

    pub fn keys(&self) -> impl Iterator<Item = &ClusterKey> {
        self.objects.keys()
    }

    /// Forgets every object of watch `source`, which stopped (its shard left the endpoint slice):
    /// nothing of it is reconciled again, and its keys are gone.
    pub fn remove_source(&mut self, source: usize) -> Vec<Change> {
        self.relists.remove(&source);
        let gone: Vec<ClusterKey> = self
            .objects
            .iter()
            .filter(|(_, e)| e.source == source)
            .map(|(k, _)| k.clone())
            .collect();
        for key in &gone {
            self.objects.remove(key);
        }
        gone.into_iter().map(Change::Gone).collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::WorkQueue;
    use kube::api::{ApiResource, DynamicObject};
    use pretty_assertions::assert_eq;
    use tokio::time::Instant;

    fn key(cluster: &str, name: &str) -> ClusterKey {
        ClusterKey {
            cluster: cluster.into(),
            namespace: Some("default".into()),
            name: name.into(),
        }
    }

    fn obj(cluster: &str, name: &str) -> DynamicObject {
        let ar = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let mut o = DynamicObject::new(name, &ar).within("default");
        o.metadata.annotations = Some([(ANNOTATION_CLUSTER.to_string(), cluster.to_string())].into());
        o
    }

    fn with_rv(mut o: DynamicObject, rv: &str) -> DynamicObject {
        o.metadata.resource_version = Some(rv.into());
        o
    }

    /// Applies `event` of source 0 with no echo filter, folding its changes into `q`.
    fn apply_event(event: Event<DynamicObject>, store: &mut Store<DynamicObject>, q: &mut WorkQueue<ClusterKey>) {
        for change in store.apply(0, event, |_, _| false) {
            match change {
                Change::Queue(k) => q.enqueue(k, Instant::now()),
                Change::Gone(k) => q.forget(&k),
            }
        }
    }

    #[test]
    fn removing_a_source_forgets_only_its_objects() {
        let mut store = Store::default();
        store.apply(0, Event::Apply(obj("c1", "a")), |_, _| false);
        store.apply(1, Event::Init, |_, _| false);
        store.apply(1, Event::InitApply(obj("c2", "a")), |_, _| false);
        store.apply(1, Event::InitApply(obj("c2", "b")), |_, _| false);
        assert_eq!(
            store.remove_source(1),
            vec![Change::Gone(key("c2", "a")), Change::Gone(key("c2", "b"))]
        );
        assert_eq!(store.keys().cloned().collect::<Vec<_>>(), vec![key("c1", "a")]);
        // Its relist was abandoned: a late InitDone of the removed source prunes nothing.
        assert_eq!(store.apply(1, Event::InitDone, |_, _| false), vec![]);
        assert_eq!(store.remove_source(7), vec![]);
    }

    #[test]
    fn events_fold_into_store_and_relist_prunes() {
        let mut store = Store::default();
        let mut q = WorkQueue::default();
        for e in [
            Event::Init,
            Event::InitApply(obj("c1", "a")),
            Event::InitApply(obj("c2", "a")),
            Event::InitDone,
        ] {
            apply_event(e, &mut store, &mut q);
        }
        assert_eq!(store.len(), 2);
        apply_event(Event::Delete(obj("c2", "a")), &mut store, &mut q);
        assert_eq!(store.keys().cloned().collect::<Vec<_>>(), vec![key("c1", "a")]);
        // A relist that no longer contains c1/a (deleted while disconnected) drops it.
        for e in [Event::Init, Event::InitApply(obj("c3", "b")), Event::InitDone] {
            apply_event(e, &mut store, &mut q);
        }
        assert_eq!(store.keys().cloned().collect::<Vec<_>>(), vec![key("c3", "b")]);
        let now = Instant::now();
        let mut due = Vec::new();
        while let Some(k) = q.pop_due(now) {
            due.push(k);
        }
        assert_eq!(due, vec![key("c3", "b")]);
    }

    #[test]
    fn change_table() {
        let echo_rv = |_: &ClusterKey, o: &DynamicObject| o.metadata.resource_version.as_deref() == Some("7");
        let mut store = Store::default();
        for (case, source, event, want) in [
            ("relist start", 0, Event::Init, vec![]),
            (
                "relisted",
                0,
                Event::InitApply(obj("c1", "a")),
                vec![Change::Queue(key("c1", "a"))],
            ),
            (
                "relist ignores the echo filter",
                0,
                Event::InitApply(with_rv(obj("c1", "b"), "7")),
                vec![Change::Queue(key("c1", "b"))],
            ),
            ("relist done", 0, Event::InitDone, vec![]),
            (
                "other source",
                1,
                Event::Apply(obj("c9", "z")),
                vec![Change::Queue(key("c9", "z"))],
            ),
            (
                "changed",
                0,
                Event::Apply(with_rv(obj("c1", "a"), "6")),
                vec![Change::Queue(key("c1", "a"))],
            ),
            ("own write echo", 0, Event::Apply(with_rv(obj("c1", "a"), "7")), vec![]),
            (
                "deleted",
                0,
                Event::Delete(obj("c1", "b")),
                vec![Change::Gone(key("c1", "b"))],
            ),
            ("no cluster annotation", 0, Event::Apply(obj("", "x")), vec![]),
            ("relist again", 0, Event::Init, vec![]),
            (
                "relist prunes only its own source",
                0,
                Event::InitDone,
                vec![Change::Gone(key("c1", "a"))],
            ),
        ] {
            assert_eq!(store.apply(source, event, echo_rv), want, "{case}");
        }
        assert_eq!(store.keys().cloned().collect::<Vec<_>>(), vec![key("c9", "z")]);
        assert_eq!(store.get(&key("c9", "z")).map(|(_, s)| s), Some(1));
    }
}
