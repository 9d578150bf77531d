//! A finalizer around a reconcile: the object's cleanup runs before the API server lets it go.
//!
//! [`finalizer`] takes the reconcile as one function of an [`Event`] (after controller-rs and
//! kube-runtime's `finalizer`): while the object lives it adds the finalizer first, then calls
//! [`Event::Apply`] with the object as written; once it is being deleted it calls
//! [`Event::Cleanup`] and removes the finalizer only after the cleanup succeeded. A failed cleanup
//! keeps the finalizer, so the next reconcile runs it again.
//!
//! Both writes are JSON patches guarded by a `test` operation on the finalizer list the decision
//! was made from: a concurrent change to the list fails the write (and the reconcile is retried on
//! the newer object) instead of adding a name twice or removing someone else's. [`step`],
//! [`add_patch`] and [`remove_patch`] are the IO-free decisions, table-tested; [`add`] and
//! [`remove`] are the two writes, for a controller that marks its own writes around them.
//!
//! What it must not do: build clients (the caller hands it the `Api` of the object's resource and
//! scope) or decide what a cleanup is.

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;

use kube::api::{Patch, PatchParams};
use kube::core::ObjectMeta;
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::Action;

/// What the reconcile passed to [`finalizer`] is asked to do.
#[derive(Debug)]
pub enum Event<K> {
    /// The object lives and carries the finalizer: make the world match it.
    Apply(Arc<K>),
    /// The object is being deleted: release what it holds. The finalizer is removed after this
    /// returns `Ok`.
    Cleanup(Arc<K>),
}

/// What [`finalizer`] does for an object, decided from its metadata alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Alive without the finalizer: add it, then apply.
    AddThenApply,
    /// Alive with the finalizer.
    Apply,
    /// Being deleted with the finalizer: clean up, then remove it.
    Cleanup,
    /// Being deleted without it: the cleanup ran already (or was never owed).
    Nothing,
}

/// Why [`finalizer`] failed.
#[derive(Debug, thiserror::Error)]
pub enum Error<E: std::error::Error + 'static> {
    #[error("adding finalizer {name}: {source}")]
    Add {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("removing finalizer {name}: {source}")]
    Remove {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("apply: {0}")]
    Apply(#[source] E),
    #[error("cleanup: {0}")]
    Cleanup(#[source] E),
    #[error("the object has no name")]
    Unnamed,
}

/// Whether `meta` lists the finalizer `name`.
pub fn has(meta: &ObjectMeta, name: &str) -> bool {
    meta.finalizers.iter().flatten().any(|f| f == name)
}

/// The step for an object with metadata `meta`.
pub fn step(meta: &ObjectMeta, name: &str) -> Step {
    match (meta.deletion_timestamp.is_some(), has(meta, name)) {
        (false, false) => Step::AddThenApply,
        (false, true) => Step::Apply,
        (true, true) => Step::Cleanup,
        (true, false) => Step::Nothing,
    }
}

/// The JSON patch adding `name` to the finalizers of `meta`, guarded by the list as it is there.
/// An absent list is created (a JSON patch cannot append to what does not exist), guarded by the
/// resourceVersion: a `test` of a path that does not exist fails in the embedded kcp (real kcp lets a
/// test for `null` pass), and the version is there in both.
pub fn add_patch(meta: &ObjectMeta, name: &str) -> Value {
    match meta.finalizers.as_deref() {
        None | Some([]) => json!([
            {"op": "test", "path": "/metadata/resourceVersion", "value": meta.resource_version},
            {"op": "add", "path": "/metadata/finalizers", "value": [name]},
        ]),
        Some(current) => json!([
            {"op": "test", "path": "/metadata/finalizers", "value": current},
            {"op": "add", "path": "/metadata/finalizers/-", "value": name},
        ]),
    }
}

/// The JSON patch removing `name` from the finalizers of `meta`, guarded by a test that it is still
/// where it was seen; `None` when it is not there.
pub fn remove_patch(meta: &ObjectMeta, name: &str) -> Option<Value> {
    let index = meta.finalizers.iter().flatten().position(|f| f == name)?;
    let path = format!("/metadata/finalizers/{index}");
    Some(json!([
        {"op": "test", "path": path, "value": name},
        {"op": "remove", "path": path},
    ]))
}

/// kube's JSON patch from ours. Deserialized, so this crate needs no JSON-patch crate of its own:
/// the type is whatever kube's `Patch::Json` takes.
fn json_patch(ops: Value) -> Result<Patch<()>, kube::Error> {
    Ok(Patch::Json(
        serde_json::from_value(ops).map_err(kube::Error::SerdeError)?,
    ))
}

/// Adds the finalizer `name` to `obj`; the object as written.
pub async fn add<K>(api: &Api<K>, name: &str, obj: &K) -> Result<K, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let patch = json_patch(add_patch(obj.meta(), name))?;
    api.patch(&obj.name_any(), &PatchParams::default(), &patch).await
}

/// Removes the finalizer `name` from `obj`; the object as written, or `None` when the finalizer
/// was not there or the object is gone (the finalizer was its last: the API server deleted it).
pub async fn remove<K>(api: &Api<K>, name: &str, obj: &K) -> Result<Option<K>, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let Some(ops) = remove_patch(obj.meta(), name) else {
        return Ok(None);
    };
    match api
        .patch(&obj.name_any(), &PatchParams::default(), &json_patch(ops)?)
        .await
    {
        Ok(written) => Ok(Some(written)),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether a failed [`add`] or [`remove`] lost a race: the object changed since the copy the
/// patch was made from (409), or its `test` operation found the list changed (422). Retrying from
/// the newer object is the remedy, not a backoff.
pub fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(s) if s.code == 409 || s.code == 422)
}

/// Runs `reconcile` for `obj` behind the finalizer `name` (see the module docs). `api` is the
/// object's resource in the object's scope (its namespace, for a namespaced object).
pub async fn finalizer<K, E, F, Fut>(api: &Api<K>, name: &str, obj: Arc<K>, reconcile: F) -> Result<Action, Error<E>>
where
    K: Resource + Clone + DeserializeOwned + Debug,
    E: std::error::Error + 'static,
    F: FnOnce(Event<K>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
{
    if obj.meta().name.is_none() {
        return Err(Error::Unnamed);
    }
    match step(obj.meta(), name) {
        Step::AddThenApply => {
            let written = add(api, name, &obj).await.map_err(|source| Error::Add {
                name: name.to_string(),
                source,
            })?;
            reconcile(Event::Apply(Arc::new(written))).await.map_err(Error::Apply)
        }
        Step::Apply => reconcile(Event::Apply(obj)).await.map_err(Error::Apply),
        Step::Cleanup => {
            reconcile(Event::Cleanup(obj.clone())).await.map_err(Error::Cleanup)?;
            remove(api, name, &obj).await.map_err(|source| Error::Remove {
                name: name.to_string(),
                source,
            })?;
            Ok(Action::AwaitChange)
        }
        Step::Nothing => Ok(Action::AwaitChange),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const NAME: &str = "example.faros.sh/cleanup";

    fn meta(finalizers: Option<&[&str]>, deleting: bool) -> ObjectMeta {
        ObjectMeta {
            name: Some("o".into()),
            resource_version: Some("7".into()),
            finalizers: finalizers.map(|f| f.iter().map(|s| s.to_string()).collect()),
            deletion_timestamp: deleting
                .then(|| k8s_openapi::apimachinery::pkg::apis::meta::v1::Time("2026-01-01T00:00:00Z".parse().unwrap())),
            ..Default::default()
        }
    }

    #[test]
    fn steps() {
        for (finalizers, deleting, want) in [
            (None, false, Step::AddThenApply),
            (Some(&[][..]), false, Step::AddThenApply),
            (Some(&["other"][..]), false, Step::AddThenApply),
            (Some(&["other", NAME][..]), false, Step::Apply),
            (Some(&[NAME][..]), true, Step::Cleanup),
            (Some(&["other"][..]), true, Step::Nothing),
            (None, true, Step::Nothing),
        ] {
            assert_eq!(
                step(&meta(finalizers, deleting), NAME),
                want,
                "{finalizers:?} deleting={deleting}"
            );
        }
    }

    #[test]
    fn add_patches_test_the_list_they_extend() {
        for (finalizers, want) in [
            (
                None,
                json!([{"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
                       {"op": "add", "path": "/metadata/finalizers", "value": [NAME]}]),
            ),
            (
                Some(&[][..]),
                json!([{"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
                       {"op": "add", "path": "/metadata/finalizers", "value": [NAME]}]),
            ),
            (
                Some(&["other"][..]),
                json!([{"op": "test", "path": "/metadata/finalizers", "value": ["other"]},
                       {"op": "add", "path": "/metadata/finalizers/-", "value": NAME}]),
            ),
        ] {
            assert_eq!(add_patch(&meta(finalizers, false), NAME), want, "{finalizers:?}");
        }
    }

    #[test]
    fn remove_patches_test_the_entry_they_remove() {
        for (finalizers, want) in [
            (None, None),
            (Some(&["other"][..]), None),
            (
                Some(&[NAME][..]),
                Some(json!([{"op": "test", "path": "/metadata/finalizers/0", "value": NAME},
                            {"op": "remove", "path": "/metadata/finalizers/0"}])),
            ),
            (
                Some(&["other", NAME][..]),
                Some(json!([{"op": "test", "path": "/metadata/finalizers/1", "value": NAME},
                            {"op": "remove", "path": "/metadata/finalizers/1"}])),
            ),
        ] {
            assert_eq!(remove_patch(&meta(finalizers, true), NAME), want, "{finalizers:?}");
        }
    }

    #[test]
    fn patches_are_what_kube_sends_as_json_patches() {
        let ops = add_patch(&meta(Some(&["other"]), false), NAME);
        let patch = json_patch(ops).unwrap();
        assert!(matches!(patch, Patch::Json(_)));
    }
}
