//! The Provider controller's side of the kubeconfig mirror ([`crate::mirror`]): the sync step of a
//! reconcile, the removal step of a teardown, and a metadata watch on the mirrored Secrets that
//! queues their Provider when one is changed or deleted behind the reconciler's back.
//!
//! It feeds the controller's one work queue (through its [`Handle`]); it must not reconcile anything
//! itself.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use faros_core::names;
use faros_core::provider::Provider;
use faros_runtime::Handle;
use faros_runtime::reflect::{self, Update};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use tokio_util::sync::CancellationToken;

use super::context::{Context, ProviderKey};
use crate::mirror::{Mirror, MirrorError, Removed, Synced};

/// Mirrors the kubeconfig Secret's `data` as Secret `secret_name` for Provider `key`, and removes the mirror of
/// `previous` (the name `spec.secretName` moved away from).
pub(super) async fn sync(
    ctx: &Context,
    mirror: &Mirror,
    key: &ProviderKey,
    secret_name: &str,
    data: crate::kubeconfig::SecretData<'_>,
    previous: Option<&str>,
) -> Result<(), MirrorError> {
    let synced = mirror.ensure(&key.name, secret_name, data).await.inspect_err(|_| {
        ctx.metrics.mirror_failed("sync");
    })?;
    if let Synced::Written { resource_version } = synced {
        ctx.remember_mirror_write(secret_name, resource_version);
        ctx.metrics.mirror_written("apply");
        tracing::info!(%key, namespace = mirror.namespace(), secret = secret_name, "mirrored the kubeconfig Secret into the hosting cluster");
    }
    if let Some(old) = previous {
        remove(ctx, mirror, key, old).await?;
    }
    Ok(())
}

/// Removes Provider `key`'s mirrored Secret `secret_name`. Ok only once it is gone (or is someone
/// else's, which is never deleted).
pub(super) async fn remove(
    ctx: &Context,
    mirror: &Mirror,
    key: &ProviderKey,
    secret_name: &str,
) -> Result<(), MirrorError> {
    let removed = mirror.remove(&key.name, secret_name).await.inspect_err(|_| {
        ctx.metrics.mirror_failed("remove");
    })?;
    match removed {
        Removed::Absent => {}
        Removed::Deleted => {
            ctx.remember_mirror_delete(secret_name);
            ctx.metrics.mirror_written("delete");
            tracing::info!(%key, namespace = mirror.namespace(), secret = secret_name, "removed the mirrored kubeconfig Secret from the hosting cluster");
        }
        Removed::Pending => {
            ctx.metrics.mirror_failed("remove");
            return Err(MirrorError::StillDeleting {
                namespace: mirror.namespace().to_string(),
                name: secret_name.to_string(),
            });
        }
        Removed::LeftForeign(owner) => {
            tracing::info!(%key, namespace = mirror.namespace(), secret = secret_name, ?owner, "not removing a same-named Secret the mirror did not write for this Provider");
        }
    }
    Ok(())
}

/// The Providers a mirrored Secret event concerns: the one its label names, and any whose current
/// or previous kubeconfig Secret has that name (labels may have been edited away).
pub fn affected<'a>(
    providers: impl IntoIterator<Item = (&'a ProviderKey, &'a Provider)>,
    secret_name: &str,
    provider_label: Option<&str>,
) -> Vec<ProviderKey> {
    let mut keys: Vec<ProviderKey> = providers
        .into_iter()
        .filter(|(key, p)| {
            provider_label == Some(key.name.as_str())
                || p.kubeconfig_secret_name() == secret_name
                || p.status
                    .as_ref()
                    .and_then(|s| s.secret_ref.as_ref())
                    .is_some_and(|r| r.name == secret_name)
        })
        .map(|(key, _)| key.clone())
        .collect();
    keys.sort();
    keys
}

/// Watches the metadata (never the data) of faros-managed Secrets in the mirror namespace and queues
/// the Providers of those that change or disappear, except for the echoes of the mirror's own writes.
pub(super) async fn watch(mirror: Mirror, controller: Handle<Provider>, ctx: Arc<Context>, cancel: CancellationToken) {
    let selector = format!("{}={}", names::LABEL_MANAGED_BY, names::MANAGED_BY_FAROS);
    let config = watcher::Config::default().labels(&selector);
    let events = watcher::watcher(mirror.secret_metadata(), config).default_backoff();
    // name → (resourceVersion, provider label) of what the watch last saw, to tell a relist's
    // changes and disappearances from what is already known.
    let mut seen: HashMap<String, (Option<String>, Option<String>)> = HashMap::new();
    let enqueue = |name: &str, label: Option<&str>| {
        let keys = controller.with_store(|store| affected(store.iter(), name, label));
        for key in keys {
            tracing::debug!(%key, secret = name, "mirrored kubeconfig Secret changed; queueing its Provider");
            controller.enqueue(key);
        }
    };
    let namespace = mirror.namespace().to_string();
    reflect::drive(
        events,
        cancel.cancelled(),
        |update| match update {
            Update::Relisted(listed) => {
                let mut relisted = HashMap::new();
                for m in listed {
                    let name = m.name_any();
                    let rv = m.resource_version();
                    let label = m.labels().get(names::LABEL_PROVIDER).cloned();
                    let known = seen.get(&name).is_some_and(|(seen_rv, _)| *seen_rv == rv);
                    if !known && !ctx.is_own_mirror_event(&name, rv.as_deref()) {
                        enqueue(&name, label.as_deref());
                    }
                    relisted.insert(name, (rv, label));
                }
                // Deleted while the watch was down.
                for (name, (_, label)) in seen.iter().filter(|(n, _)| !relisted.contains_key(*n)) {
                    enqueue(name, label.as_deref());
                }
                seen = relisted;
            }
            Update::Applied(m) => {
                let name = m.name_any();
                let rv = m.resource_version();
                let label = m.labels().get(names::LABEL_PROVIDER).cloned();
                if !ctx.is_own_mirror_event(&name, rv.as_deref()) {
                    enqueue(&name, label.as_deref());
                }
                seen.insert(name, (rv, label));
            }
            Update::Deleted(m) => {
                let name = m.name_any();
                // A deletion, or labels edited so that it no longer matches the selector.
                let label = m
                    .meta()
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(names::LABEL_PROVIDER))
                    .cloned();
                let label = label.or_else(|| seen.get(&name).and_then(|(_, l)| l.clone()));
                if !ctx.is_own_mirror_event(&name, None) {
                    enqueue(&name, label.as_deref());
                }
                seen.remove(&name);
            }
        },
        |error| {
            tracing::warn!(
                %namespace,
                %error,
                "watching mirrored kubeconfig Secrets in the hosting cluster failed; retrying with backoff"
            );
            ControlFlow::Continue(())
        },
    )
    .await;
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use faros_core::provider::{ProviderSpec, ProviderStatus, SecretKeyRef};
    use pretty_assertions::assert_eq;

    fn key(name: &str) -> ProviderKey {
        ProviderKey {
            cluster: "c".into(),
            namespace: None,
            name: name.into(),
        }
    }

    #[test]
    fn affected_table() {
        let plain = Provider::new("a", ProviderSpec::default());
        let custom = Provider::new(
            "b",
            ProviderSpec {
                secret_name: Some("b-creds".into()),
                ..Default::default()
            },
        );
        let mut renamed = Provider::new(
            "c",
            ProviderSpec {
                secret_name: Some("c-new".into()),
                ..Default::default()
            },
        );
        renamed.status = Some(ProviderStatus {
            secret_ref: Some(SecretKeyRef {
                namespace: "default".into(),
                name: "c-old".into(),
                key: "kubeconfig".into(),
            }),
            ..Default::default()
        });
        let providers = [(key("a"), plain), (key("b"), custom), (key("c"), renamed)];
        let iter = || providers.iter().map(|(k, p)| (k, p));
        for (name, secret, label, want) in [
            ("by label", "whatever", Some("b"), vec![key("b")]),
            ("by default name, label stripped", "a-kubeconfig", None, vec![key("a")]),
            ("by spec.secretName", "b-creds", None, vec![key("b")]),
            ("by the previous name in status", "c-old", None, vec![key("c")]),
            (
                "label and name disagree: both",
                "a-kubeconfig",
                Some("b"),
                vec![key("a"), key("b")],
            ),
            ("unknown", "zzz", Some("nobody"), vec![]),
        ] {
            assert_eq!(affected(iter(), secret, label), want, "{name}");
        }
    }
}
