//! The Provider controller: a wildcard watch on the `admin.faros.sh` virtual workspace (one per
//! endpoint URL) driven by [`faros_runtime::Controller`], the runtime the provider SDK uses too.
//!
//! Why not `kube::runtime::Controller`: its store and queue key objects by (name, namespace), and a
//! wildcard watch through a virtual workspace returns same-named Providers from every workspace that
//! binds the export, which it would merge into one. Each object here is addressed by the `kcp.io/cluster`
//! annotation kcp stamps on it ([`ProviderKey`]), and writes go to `<virtual workspace>/clusters/<that
//! cluster>`.
//!
//! This module is the reconciler-specific wiring: which watches feed the runtime, which events are
//! the echoes of our own writes, metrics, and the error policy of [`provider`]. What they all
//! share ([`Context`], [`ProviderKey`], [`Target`], [`Settings`]) is in [`context`], below them.

mod catalog_entries;
pub mod context;
pub mod mirror;
pub mod provider;
mod wait;
mod workspace;
mod workspaces;

use std::sync::Arc;

use faros_core::provider::Provider;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use context::{Context, ProviderKey, Settings, Target};
pub use faros_runtime::Action;

/// Runs the controller over the given virtual workspace URLs until `cancel` fires. In-flight
/// reconciles are dropped on cancellation (leadership lost: stop acting at once).
pub async fn run(
    ctx: Arc<Context>,
    endpoints: Vec<String>,
    cancel: CancellationToken,
) -> Result<(), faros_core::client::ClientError> {
    let mut controller = faros_runtime::Controller::new("providers").concurrency(ctx.settings.concurrency);
    for url in endpoints {
        let api: Api<Provider> = Api::all(ctx.factory.virtual_workspace(&url, "*")?);
        let events = watcher::watcher(api, watcher::Config::default()).default_backoff();
        controller = controller.watch(Arc::<str>::from(url.as_str()), events);
    }
    ctx.set_queue(controller.handle());
    let controller = {
        let (echo, gone, depth) = (ctx.clone(), ctx.clone(), ctx.clone());
        controller
            // Queueing the echo of our own status write would also cut short a pending backoff.
            .skip_echoes(move |key, p| echo.is_own_write(key, p.resource_version().as_deref()))
            .on_gone(move |key| gone.forget(key))
            .on_queue_depth(move |n| depth.metrics.set_queue_depth(n))
    };
    let mut tasks = JoinSet::new();
    tasks.spawn(workspaces::watch(ctx.clone(), controller.handle(), cancel.clone()));
    tasks.spawn(catalog_entries::watch(ctx.clone(), controller.handle(), cancel.clone()));
    if let Some(mirror) = ctx.mirror.clone() {
        tasks.spawn(mirror::watch(mirror, controller.handle(), ctx.clone(), cancel.clone()));
    }
    let reconcile = {
        let ctx = ctx.clone();
        move |provider: Arc<Provider>, request: faros_runtime::Request<Arc<str>>| {
            let ctx = ctx.clone();
            async move {
                let target = Target {
                    key: request.key,
                    endpoint: request.source,
                };
                let started = Instant::now();
                let result = provider::reconcile(provider, &target, &ctx).await;
                ctx.metrics.reconciled(
                    started.elapsed().as_secs_f64(),
                    result.as_ref().err().map(provider::Error::reason),
                );
                result
            }
        }
    };
    controller
        .run(
            reconcile,
            |_key, error, retry| provider::error_policy(error, retry),
            cancel.clone().cancelled_owned(),
        )
        .await;
    while tasks.join_next().await.is_some() {}
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use faros_core::kcp::ANNOTATION_CLUSTER;
    use faros_core::provider::ProviderSpec;

    #[test]
    fn key_needs_the_cluster_annotation() {
        let mut p = Provider::new("q", ProviderSpec::default());
        assert_eq!(ProviderKey::of(&p), None);
        p.annotations_mut().insert(ANNOTATION_CLUSTER.into(), String::new());
        assert_eq!(ProviderKey::of(&p), None);
        p.annotations_mut().insert(ANNOTATION_CLUSTER.into(), "abc".into());
        let key = ProviderKey::of(&p).unwrap();
        assert_eq!(
            key,
            ProviderKey {
                cluster: "abc".into(),
                namespace: None,
                name: "q".into()
            }
        );
        assert_eq!(key.to_string(), "abc|q");
    }

    #[test]
    fn same_name_in_two_workspaces_are_two_keys() {
        let mk = |cluster: &str| {
            let mut p = Provider::new("q", ProviderSpec::default());
            p.annotations_mut().insert(ANNOTATION_CLUSTER.into(), cluster.into());
            ProviderKey::of(&p).unwrap()
        };
        assert_ne!(mk("a"), mk("b"));
    }

    #[tokio::test]
    async fn own_status_write_is_recognised_once() {
        let (ctx, key) = context::test_context();
        assert!(!ctx.is_own_write(&key, Some("5")));
        ctx.own_write(&key).answered(Some("5".into()));
        assert!(!ctx.is_own_write(&key, Some("4")), "an older event is not ours");
        assert!(ctx.is_own_write(&key, Some("5")));
        assert!(
            !ctx.is_own_write(&key, Some("5")),
            "only once: a resync must do the full work"
        );

        // The echo overtakes the write's answer: held back while in flight, then recognised.
        let write = ctx.own_write(&key);
        assert!(
            ctx.is_own_write(&key, Some("6")),
            "held back while the write is in flight"
        );
        write.answered(Some("6".into()));
        assert!(!ctx.is_own_write(&key, Some("6")), "its echo was seen already");
        assert!(!ctx.is_own_write(&key, Some("7")), "a later change is not ours");

        // A write that never answered (dropped) holds nothing back afterwards.
        drop(ctx.own_write(&key));
        assert!(!ctx.is_own_write(&key, Some("8")));

        assert!(!ctx.is_own_mirror_event("q-kubeconfig", Some("7")));
        ctx.remember_mirror_write("q-kubeconfig", Some("7".into()));
        assert!(
            !ctx.is_own_mirror_event("q-kubeconfig", None),
            "a delete after our apply is not ours"
        );
        assert!(!ctx.is_own_mirror_event("q-kubeconfig", Some("6")));
        assert!(ctx.is_own_mirror_event("q-kubeconfig", Some("7")));
        assert!(!ctx.is_own_mirror_event("q-kubeconfig", Some("7")), "only once");
        ctx.remember_mirror_delete("q-kubeconfig");
        assert!(
            !ctx.is_own_mirror_event("q-kubeconfig", Some("8")),
            "a recreation after our delete is not ours"
        );
        assert!(ctx.is_own_mirror_event("q-kubeconfig", None));
    }
}
