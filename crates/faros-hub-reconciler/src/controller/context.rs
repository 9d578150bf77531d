//! What every reconcile of one leadership term shares ([`Context`]) and how a Provider is
//! addressed ([`ProviderKey`], [`Target`]): below the controller's wiring ([`super`]), its
//! reconcile ([`super::provider`]) and its mirror step ([`super::mirror`]), which all use them.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use faros_core::client::ClientFactory;
use faros_core::provider::Provider;

use crate::metrics::Metrics;
use crate::mirror::Mirror;

/// A Provider's identity across workspaces: (`kcp.io/cluster`, name); Providers are cluster-scoped,
/// so `namespace` is `None`.
pub type ProviderKey = faros_runtime::ClusterKey;

/// Where a Provider was seen: its key and the virtual workspace URL it came through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub key: ProviderKey,
    pub endpoint: Arc<str>,
}

/// Settings of the Provider controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Base URL written into provider kubeconfigs unless `spec.serverURLOverride` is set.
    pub hub_url: String,
    /// PEM CA written into provider kubeconfigs.
    pub ca_pem: Option<String>,
    /// Write `insecure-skip-tls-verify: true` instead of the CA.
    pub insecure_provider_kubeconfigs: bool,
    /// How long one reconcile waits for a workspace to become Ready (or to disappear).
    pub workspace_timeout: Duration,
    /// How long one reconcile waits for kcp to fill the token Secret.
    pub token_timeout: Duration,
    /// Full re-reconcile period of a healthy Provider (repairs drift such as a deleted Secret).
    pub resync: Duration,
    /// Number of Providers reconciled in parallel.
    pub concurrency: usize,
    /// The hub API's own kcp user, granted its role in each provider workspace; `None`: none.
    pub hub_user: Option<String>,
}

/// Shared by every reconcile of one leadership term.
pub struct Context {
    pub factory: ClientFactory,
    pub settings: Settings,
    pub metrics: Arc<Metrics>,
    /// The kubeconfig mirror into the hosting cluster, when enabled.
    pub mirror: Option<Mirror>,
    /// Our own writes of Providers (status, or the finalizer before provisioning): the watch events
    /// they cause need no work.
    own_writes: Mutex<OwnWrites>,
    /// The running controller's queue: a change by someone else that arrived while our write was in
    /// flight is queued through it once the write answered.
    queue: Mutex<Option<faros_runtime::Handle<Provider>>>,
    /// Our own last write per mirrored Secret name: `Some(resourceVersion)` for an apply, `None` for
    /// a delete. The watch event it causes needs no work.
    mirror_writes: Mutex<HashMap<String, Option<String>>>,
    /// The provider workspaces as the controller's watch sees them, and the Providers parked on them.
    pub(super) workspaces: super::workspaces::ProviderWorkspaces,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("factory", &self.factory)
            .field("settings", &self.settings)
            .field("mirror", &self.mirror)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The maps hold plain bookkeeping; after a panic elsewhere they are still usable.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Context {
    pub fn new(factory: ClientFactory, settings: Settings, metrics: Arc<Metrics>) -> Self {
        Self {
            factory,
            settings,
            metrics,
            mirror: None,
            own_writes: Mutex::default(),
            queue: Mutex::default(),
            mirror_writes: Mutex::default(),
            workspaces: Default::default(),
        }
    }

    /// Enables the kubeconfig mirror.
    pub fn with_mirror(mut self, mirror: Option<Mirror>) -> Self {
        self.mirror = mirror;
        self
    }

    pub(super) fn remember_mirror_write(&self, secret: &str, rv: Option<String>) {
        if let Some(rv) = rv {
            lock(&self.mirror_writes).insert(secret.to_string(), Some(rv));
        }
    }

    pub(super) fn remember_mirror_delete(&self, secret: &str) {
        lock(&self.mirror_writes).insert(secret.to_string(), None);
    }

    /// True once for the watch event of our last mirror write of `secret`: an apply event with its
    /// resourceVersion (`rv`), or a delete event (`rv` None) after our delete.
    pub(super) fn is_own_mirror_event(&self, secret: &str, rv: Option<&str>) -> bool {
        let mut writes = lock(&self.mirror_writes);
        let ours = match (writes.get(secret), rv) {
            (Some(Some(ours)), Some(rv)) => ours == rv,
            (Some(None), None) => true,
            _ => false,
        };
        if ours {
            writes.remove(secret);
        }
        ours
    }

    /// Where [`Self::finish_own_write`] queues a Provider changed by someone else meanwhile.
    pub(super) fn set_queue(&self, queue: faros_runtime::Handle<Provider>) {
        *lock(&self.queue) = Some(queue);
    }

    /// Marks a write of the Provider as in flight: until it answers ([`OwnWrite::answered`]; a guard
    /// dropped unanswered counts as failed), its watch events are held back, because the echo may
    /// arrive before the answer that names its resourceVersion.
    ///
    /// The write must be preconditioned on the resourceVersion of the copy it was computed from (as
    /// [`super::provider::status_patch`] and the finalizer patch are): a write that changes nothing
    /// answers with the object as it is, and without the precondition that may be someone else's
    /// newer version, whose event would then pass for our echo and never be reconciled.
    pub(super) fn own_write<'a>(&'a self, key: &'a ProviderKey) -> OwnWrite<'a> {
        lock(&self.own_writes).in_flight.insert(key.clone(), Vec::new());
        OwnWrite {
            ctx: self,
            key,
            done: false,
        }
    }

    /// The write answered with resourceVersion `rv` (`None`: it failed). Events held back meanwhile
    /// that were not its echo are someone else's change: the Provider is queued again.
    fn finish_own_write(&self, key: &ProviderKey, rv: Option<String>) {
        let held = {
            let mut writes = lock(&self.own_writes);
            let held = writes.in_flight.remove(key).unwrap_or_default();
            let settled = settle(&held, rv.as_deref());
            match rv {
                Some(rv) if !settled.echo_seen => {
                    writes.landed.insert(key.clone(), rv);
                }
                _ => {
                    writes.landed.remove(key);
                }
            }
            settled
        };
        if held.foreign
            && let Some(queue) = lock(&self.queue).as_ref()
        {
            queue.enqueue(key.clone());
        }
    }

    /// Whether a watch event of the Provider at `rv` needs no work: the echo of our last write (once),
    /// or any event while a write is in flight (held back until it answers).
    pub(super) fn is_own_write(&self, key: &ProviderKey, rv: Option<&str>) -> bool {
        let mut writes = lock(&self.own_writes);
        if let Some(held) = writes.in_flight.get_mut(key) {
            held.push(rv.map(str::to_string));
            return true;
        }
        match (writes.landed.get(key), rv) {
            (Some(ours), Some(rv)) if ours == rv => {
                writes.landed.remove(key);
                true
            }
            _ => false,
        }
    }

    pub(super) fn forget(&self, key: &ProviderKey) {
        let mut writes = lock(&self.own_writes);
        writes.landed.remove(key);
        writes.in_flight.remove(key);
    }
}

/// A Provider write in flight ([`Context::own_write`]).
pub(super) struct OwnWrite<'a> {
    ctx: &'a Context,
    key: &'a ProviderKey,
    done: bool,
}

impl OwnWrite<'_> {
    /// The write answered with resourceVersion `rv`; `None`: it failed.
    pub(super) fn answered(mut self, rv: Option<String>) {
        self.done = true;
        self.ctx.finish_own_write(self.key, rv);
    }
}

impl Drop for OwnWrite<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.ctx.finish_own_write(self.key, None);
        }
    }
}

/// Our Provider writes: the last answered one per Provider whose echo has not arrived yet, and the
/// events held back per Provider while a write is in flight.
#[derive(Debug, Default)]
struct OwnWrites {
    landed: HashMap<ProviderKey, String>,
    in_flight: HashMap<ProviderKey, Vec<Option<String>>>,
}

/// What the events held back during one write turn out to be once it answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Settled {
    /// The write's echo was among them (so it is not awaited any more).
    echo_seen: bool,
    /// Some were not its echo: someone else changed the Provider, which needs a reconcile.
    foreign: bool,
}

/// IO-free: sorts the events `held` back during a write that answered with resourceVersion `ours`
/// (`None`: the write failed, so none of them is its echo).
fn settle(held: &[Option<String>], ours: Option<&str>) -> Settled {
    let is_ours = |rv: &Option<String>| ours.is_some() && rv.as_deref() == ours;
    Settled {
        echo_seen: held.iter().any(is_ours),
        foreign: held.iter().any(|rv| !is_ours(rv)),
    }
}

/// A context whose client reaches nothing (the echo bookkeeping needs none), and the key of
/// Provider `q` in cluster `c`: for the controller's tests.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(super) fn test_context() -> (Context, ProviderKey) {
    let config = kube::Config::new("https://127.0.0.1:1".parse().unwrap());
    let settings = Settings {
        hub_url: "https://hub".into(),
        ca_pem: None,
        insecure_provider_kubeconfigs: false,
        workspace_timeout: Duration::from_secs(1),
        token_timeout: Duration::from_secs(1),
        resync: Duration::from_secs(300),
        concurrency: 1,
        hub_user: None,
    };
    let ctx = Context::new(ClientFactory::new(config).unwrap(), settings, Arc::new(Metrics::new()));
    let key = ProviderKey {
        cluster: "c".into(),
        namespace: None,
        name: "q".into(),
    };
    (ctx, key)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// The ordering of the flake in tests/mirror.rs: a reconcile starts from a stale copy (the store
    /// has not seen the echo of the previous reconcile's status write) and writes status while
    /// someone changes the spec (resourceVersion 312). Preconditioned, that write is refused
    /// (answered `None`), so the change's event is never taken for our echo, whichever side of the
    /// write it arrives on. Unconditioned, the write changed nothing and answered with 312 itself,
    /// which made the change's event our echo: skipped, the new `spec.secretName` never reconciled.
    #[tokio::test]
    async fn a_change_racing_a_refused_write_is_never_its_echo() {
        let (ctx, key) = test_context();
        let change = Some("312");

        // Before the write: an ordinary event, queued by the runtime.
        assert!(!ctx.is_own_write(&key, change), "before the write");
        ctx.own_write(&key).answered(None);

        // During the write: held back, then sorted as someone else's once the write is refused.
        let write = ctx.own_write(&key);
        assert!(ctx.is_own_write(&key, change), "held back while the write is in flight");
        write.answered(None);
        let held = [change.map(str::to_string)];
        assert_eq!(
            settle(&held, None),
            Settled {
                echo_seen: false,
                foreign: true
            },
            "during the write: queued once it is refused"
        );

        // After the refusal: an ordinary event again.
        ctx.own_write(&key).answered(None);
        assert!(!ctx.is_own_write(&key, change), "after the write");

        // What the precondition prevents: an answer naming the change's version makes it our echo.
        ctx.own_write(&key).answered(change.map(str::to_string));
        assert!(
            ctx.is_own_write(&key, change),
            "an unconditioned no-op swallows the change"
        );
    }

    #[test]
    fn settle_table() {
        /// (case, resourceVersions held back, the write's answer, echo seen, foreign change)
        type Case<'a> = (&'a str, &'a [Option<&'a str>], Option<&'a str>, bool, bool);
        let cases: &[Case] = &[
            ("nothing held", &[], Some("5"), false, false),
            ("the echo came first", &[Some("5")], Some("5"), true, false),
            ("another change only", &[Some("4")], Some("5"), false, true),
            ("both", &[Some("4"), Some("5")], Some("5"), true, true),
            (
                "a later change after the echo",
                &[Some("5"), Some("6")],
                Some("5"),
                true,
                true,
            ),
            ("failed write: all foreign", &[Some("5")], None, false, true),
            (
                "a stale copy's write refused (409) while a spec change was held: foreign",
                &[Some("312")],
                None,
                false,
                true,
            ),
            ("failed write, nothing held", &[], None, false, false),
            ("event without a version", &[None], Some("5"), false, true),
        ];
        for &(case, held, ours, echo_seen, foreign) in cases {
            let held: Vec<Option<String>> = held.iter().map(|rv| rv.map(str::to_string)).collect();
            assert_eq!(settle(&held, ours), Settled { echo_seen, foreign }, "{case}");
        }
    }
}
