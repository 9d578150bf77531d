//! [`Controller`]: the reconcile loop driver. Watch streams in, reconciles out.
//!
//! One task owns the [`WorkQueue`] and folds every event into the shared [`Store`]; reconciles run
//! as spawned tasks, at most `concurrency` at once and never two of the same key. Whatever else
//! must queue a key (a watch of some related object, say) does so through a [`Handle`].
//!
//! The caller brings the watch streams (with its own clients and their backoff) and the reconcile
//! and error policy functions; the driver brings the bookkeeping. Watches may also come and go while
//! it runs ([`Sources`]): one per virtual workspace URL of a sharded kcp, started and stopped as the
//! endpoint slice changes, without disturbing the others' objects, queue or backoff.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::stream::{AbortHandle, BoxStream, SelectAll};
use futures::{Stream, StreamExt};
use kube::Resource;
use kube::runtime::watcher::{self, Event};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::store::Change;
use crate::{Action, Backoff, ClusterKey, Decision, Outcome, Retry, Store, WorkQueue};

/// What a reconcile gets besides the object: its key, and the label of the watch source it came
/// through (e.g. the virtual workspace URL, to build a client for `key.cluster` there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request<S> {
    pub key: ClusterKey,
    pub source: S,
}

type Events<T> = BoxStream<'static, Result<Event<T>, watcher::Error>>;
/// Every source's events, tagged with the source's index.
type Tagged<T> = SelectAll<BoxStream<'static, (usize, Result<Event<T>, watcher::Error>)>>;
type EchoFilter<T> = Box<dyn Fn(&ClusterKey, &T) -> bool + Send + Sync>;
type KeyHook = Box<dyn Fn(&ClusterKey) + Send + Sync>;
type DepthHook = Box<dyn Fn(usize) + Send + Sync>;

/// A watch source of a running controller, to stop it with [`Sources::remove`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SourceId(usize);

enum SourceCommand<T, S> {
    Add(SourceId, S, Events<T>),
    Remove(SourceId),
}

/// Adds and removes watches of a [`Controller`], also while it runs. Cheap to clone.
pub struct Sources<T, S> {
    commands: mpsc::UnboundedSender<SourceCommand<T, S>>,
    next: Arc<AtomicUsize>,
}

impl<T, S> Clone for Sources<T, S> {
    fn clone(&self) -> Self {
        Self {
            commands: self.commands.clone(),
            next: self.next.clone(),
        }
    }
}

impl<T, S> fmt::Debug for Sources<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sources").finish_non_exhaustive()
    }
}

impl<T, S> Sources<T, S> {
    /// Starts watching `events`, labelled `source` (as [`Controller::watch`] does).
    pub fn add(
        &self,
        source: S,
        events: impl Stream<Item = Result<Event<T>, watcher::Error>> + Send + 'static,
    ) -> SourceId {
        let id = SourceId(self.next.fetch_add(1, Ordering::Relaxed));
        // Sending fails only once the controller is gone, when there is nothing to watch for.
        let _ = self.commands.send(SourceCommand::Add(id, source, events.boxed()));
        id
    }

    /// Stops watch `id`: its stream is dropped, and its objects are forgotten (gone, and never
    /// reconciled again) as if they had been deleted.
    pub fn remove(&self, id: SourceId) {
        let _ = self.commands.send(SourceCommand::Remove(id));
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The store holds plain data; after a panic elsewhere it is still usable.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Queues keys into a running [`Controller`] and reads its store. Cheap to clone.
pub struct Handle<T> {
    triggers: mpsc::UnboundedSender<ClusterKey>,
    store: Arc<Mutex<Store<T>>>,
}

impl<T> Clone for Handle<T> {
    fn clone(&self) -> Self {
        Self {
            triggers: self.triggers.clone(),
            store: self.store.clone(),
        }
    }
}

impl<T> fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle").finish_non_exhaustive()
    }
}

impl<T> Handle<T> {
    /// Queues `key` now. A key whose object is not in the store is dropped when it comes due; after
    /// the controller stopped this does nothing.
    pub fn enqueue(&self, key: ClusterKey) {
        // Sending fails only once the controller is gone, when there is nothing left to queue for.
        let _ = self.triggers.send(key);
    }

    /// Reads the store (briefly: the controller waits for it).
    pub fn with_store<R>(&self, f: impl FnOnce(&Store<T>) -> R) -> R {
        f(&lock(&self.store))
    }
}

/// See the module docs.
pub struct Controller<T, S> {
    name: String,
    concurrency: usize,
    backoff: Backoff,
    sources: Vec<(S, Events<T>)>,
    source_commands: Sources<T, S>,
    added: mpsc::UnboundedReceiver<SourceCommand<T, S>>,
    is_echo: Option<EchoFilter<T>>,
    on_gone: Option<KeyHook>,
    on_queue_depth: Option<DepthHook>,
    store: Arc<Mutex<Store<T>>>,
    triggers: mpsc::UnboundedSender<ClusterKey>,
    triggered: mpsc::UnboundedReceiver<ClusterKey>,
}

impl<T, S: fmt::Debug> fmt::Debug for Controller<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("concurrency", &self.concurrency)
            .field("backoff", &self.backoff)
            .field("sources", &self.sources.iter().map(|(s, _)| s).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl<T, S> Controller<T, S>
where
    T: Resource + Send + Sync + 'static,
    S: Clone + fmt::Debug + Send + 'static,
{
    /// A controller named `name` (in its logs), 8 reconciles at once, [`Backoff::default`].
    pub fn new(name: impl Into<String>) -> Self {
        let (triggers, triggered) = mpsc::unbounded_channel();
        let (commands, added) = mpsc::unbounded_channel();
        Self {
            name: name.into(),
            concurrency: 8,
            backoff: Backoff::default(),
            sources: Vec::new(),
            source_commands: Sources {
                commands,
                next: Arc::default(),
            },
            added,
            is_echo: None,
            on_gone: None,
            on_queue_depth: None,
            store: Arc::default(),
            triggers,
            triggered,
        }
    }

    /// How many reconciles may run at once (at least 1).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// The retry delays [`Retry`] reports to the error policy.
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Adds a watch: `events` (e.g. `watcher(api, config).default_backoff()`), labelled `source` in
    /// every [`Request`] of its objects and in logs.
    pub fn watch(
        mut self,
        source: S,
        events: impl Stream<Item = Result<Event<T>, watcher::Error>> + Send + 'static,
    ) -> Self {
        self.sources.push((source, events.boxed()));
        self
    }

    /// A handle to add and remove watches, before and while [`run`](Self::run) runs.
    pub fn sources(&self) -> Sources<T, S> {
        self.source_commands.clone()
    }

    /// `is_echo(key, object)` true for an update means it is the echo of the controller's own write:
    /// the store takes the object, the queue does not (and a pending backoff is not cut short).
    pub fn skip_echoes(mut self, is_echo: impl Fn(&ClusterKey, &T) -> bool + Send + Sync + 'static) -> Self {
        self.is_echo = Some(Box::new(is_echo));
        self
    }

    /// Called for every key whose object is gone (deleted, or absent from a relist).
    pub fn on_gone(mut self, f: impl Fn(&ClusterKey) + Send + Sync + 'static) -> Self {
        self.on_gone = Some(Box::new(f));
        self
    }

    /// Called with the number of waiting keys whenever the loop has handled something.
    pub fn on_queue_depth(mut self, f: impl Fn(usize) + Send + Sync + 'static) -> Self {
        self.on_queue_depth = Some(Box::new(f));
        self
    }

    /// A handle to queue keys and read the store, also while [`run`](Self::run) runs.
    pub fn handle(&self) -> Handle<T> {
        Handle {
            triggers: self.triggers.clone(),
            store: self.store.clone(),
        }
    }

    /// Runs until `shutdown` completes; in-flight reconciles are then dropped.
    ///
    /// `reconcile(object, request)` returns the next [`Action`]; on an error, `error_policy(key,
    /// error, retry)` does, as an [`Action`] or a [`Decision`] that also says whether the failure was
    /// expected ([`crate::default_error_policy`]: retry after `retry.delay`, unexpected). Errors are
    /// logged with the controller's name and the key: as warnings, or at debug while an expected one
    /// has not repeated more than [`crate::QUIET_FAILURES`] times in a row ([`Decision::warns`]).
    /// Panics are logged as errors and retried with backoff.
    pub async fn run<R, Fut, E, P, D>(self, reconcile: R, error_policy: P, shutdown: impl Future<Output = ()>)
    where
        R: Fn(Arc<T>, Request<S>) -> Fut,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
        P: Fn(&ClusterKey, &E, Retry) -> D,
        D: Into<Decision>,
    {
        let Controller {
            name,
            concurrency,
            backoff,
            sources,
            source_commands,
            mut added,
            is_echo,
            on_gone,
            on_queue_depth,
            store,
            triggers,
            mut triggered,
        } = self;
        // Held so that `triggered` and `added` never end while the loop runs.
        let _triggers = triggers;
        for (label, events) in sources {
            source_commands.add(label, events);
        }
        // Per running watch: its label, and the handle that stops its stream.
        let mut labels: HashMap<usize, (S, AbortHandle)> = HashMap::new();
        let mut events: Tagged<T> = SelectAll::new();
        let gone = |key: ClusterKey, queue: &mut WorkQueue<ClusterKey>| {
            queue.forget(&key);
            if let Some(hook) = &on_gone {
                hook(&key);
            }
        };
        let mut shutdown = std::pin::pin!(shutdown);
        let mut queue = WorkQueue::new(backoff);
        let mut tasks: JoinSet<Result<Action, E>> = JoinSet::new();
        let mut running: HashMap<tokio::task::Id, ClusterKey> = HashMap::new();

        loop {
            // Start whatever is due, up to the concurrency limit.
            while tasks.len() < concurrency {
                let now = Instant::now();
                let Some(key) = queue.pop_due(now) else { break };
                let found = lock(&store).get(&key);
                let Some((object, (source, _))) = found.and_then(|(o, s)| Some((o, labels.get(&s)?))) else {
                    queue.finish(&key, Outcome::Reconciled(Action::AwaitChange), false, now);
                    continue;
                };
                let request = Request {
                    key: key.clone(),
                    source: source.clone(),
                };
                let task = tasks.spawn(reconcile(object, request));
                running.insert(task.id(), key);
            }
            if let Some(report) = &on_queue_depth {
                report(queue.len());
            }
            // With every slot taken, a due key waits for a reconcile to finish, not for its time
            // (which may have passed: waiting for it would spin).
            let deadline = queue.next_deadline().filter(|_| tasks.len() < concurrency);
            tokio::select! {
                _ = &mut shutdown => {
                    tasks.abort_all();
                    return;
                }
                Some(done) = tasks.join_next_with_id(), if !tasks.is_empty() => {
                    let (id, result) = match done {
                        Ok((id, result)) => (id, Ok(result)),
                        Err(join) => (join.id(), Err(join)),
                    };
                    let Some(key) = running.remove(&id) else { continue };
                    let outcome = match result {
                        Ok(Ok(action)) => Outcome::Reconciled(action),
                        Ok(Err(error)) => {
                            let retry = queue.retry(&key);
                            let decision: Decision = error_policy(&key, &error, retry).into();
                            let (action, expected) = (decision.action, decision.expected);
                            if decision.warns(retry.failures) {
                                tracing::warn!(controller = %name, %key, %error, failures = retry.failures, expected, next = ?action, "reconcile failed");
                            } else {
                                tracing::debug!(controller = %name, %key, %error, failures = retry.failures, expected, next = ?action, "reconcile failed");
                            }
                            Outcome::Failed(action)
                        }
                        Err(join) => {
                            let retry = queue.retry(&key);
                            tracing::error!(controller = %name, %key, error = %join, failures = retry.failures, "reconcile panicked; retrying with backoff");
                            Outcome::Failed(Action::RequeueAfter(retry.delay))
                        }
                    };
                    let alive = lock(&store).contains(&key);
                    queue.finish(&key, outcome, alive, Instant::now());
                }
                _ = sleep_until(deadline), if deadline.is_some() => {}
                Some(key) = triggered.recv() => queue.enqueue(key, Instant::now()),
                Some(command) = added.recv() => match command {
                    SourceCommand::Add(SourceId(id), label, stream) => {
                        tracing::debug!(controller = %name, source = ?label, "watch started");
                        let (stream, stop) = futures::stream::abortable(stream);
                        events.push(stream.map(move |e| (id, e)).boxed());
                        labels.insert(id, (label, stop));
                    }
                    SourceCommand::Remove(SourceId(id)) => {
                        let Some((label, stop)) = labels.remove(&id) else { continue };
                        stop.abort();
                        let changes = lock(&store).remove_source(id);
                        tracing::debug!(controller = %name, source = ?label, forgotten = changes.len(), "watch stopped");
                        for change in changes {
                            if let Change::Gone(key) = change {
                                gone(key, &mut queue);
                            }
                        }
                    }
                },
                Some((source, event)) = events.next() => {
                    // An event a stopped watch had yielded before it was stopped is not folded in.
                    let Some((label, _)) = labels.get(&source) else { continue };
                    match event {
                        Ok(event) => {
                            let changes = lock(&store).apply(source, event, |k, o| is_echo.as_ref().is_some_and(|f| f(k, o)));
                            let now = Instant::now();
                            for change in changes {
                                match change {
                                    Change::Queue(key) => queue.enqueue(key, now),
                                    Change::Gone(key) => gone(key, &mut queue),
                                }
                            }
                        }
                        Err(error) => tracing::warn!(controller = %name, source = ?label, %error, "watch failed; retrying with backoff"),
                    }
                },
            }
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use faros_core::kcp::ANNOTATION_CLUSTER;
    use futures::channel::mpsc::{UnboundedSender, unbounded};
    use kube::api::{ApiResource, DynamicObject};
    use pretty_assertions::assert_eq;
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;
    use tokio::sync::{mpsc as tmpsc, oneshot};

    type Feed = UnboundedSender<Result<Event<DynamicObject>, watcher::Error>>;

    fn obj(cluster: &str, name: &str, rv: &str) -> DynamicObject {
        let ar = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let mut o = DynamicObject::new(name, &ar).within("default");
        o.metadata.annotations = Some([(ANNOTATION_CLUSTER.to_string(), cluster.to_string())].into());
        o.metadata.resource_version = Some(rv.into());
        o
    }

    fn key(cluster: &str, name: &str) -> ClusterKey {
        ClusterKey::of(&obj(cluster, name, "1")).unwrap()
    }

    /// A reconcile's start: which key, which object version, when.
    type Started = (String, String, Instant);

    struct Harness {
        feed: Feed,
        started: tmpsc::UnboundedReceiver<Started>,
        handle: Handle<DynamicObject>,
        stop: Option<oneshot::Sender<()>>,
        done: tokio::task::JoinHandle<()>,
    }

    impl Harness {
        /// Runs a controller whose reconcile reports its start, takes `work`, then returns what
        /// `result` says for the object.
        fn start<D: Into<Decision> + 'static>(
            concurrency: usize,
            work: Duration,
            result: impl Fn(&DynamicObject) -> Result<Action, String> + Send + Sync + 'static,
            error_policy: impl Fn(&ClusterKey, &String, Retry) -> D + Send + 'static,
        ) -> Self {
            let (feed, events) = unbounded();
            let (tx, started) = tmpsc::unbounded_channel();
            let controller = Controller::new("test")
                .concurrency(concurrency)
                .watch("vw", events)
                .skip_echoes(|_, o: &DynamicObject| o.metadata.resource_version.as_deref() == Some("echo"));
            let handle = controller.handle();
            let (stop, stopped) = oneshot::channel::<()>();
            let result = Arc::new(result);
            let done = tokio::spawn(controller.run(
                move |o: Arc<DynamicObject>, req: Request<&'static str>| {
                    let tx = tx.clone();
                    let result = result.clone();
                    async move {
                        assert_eq!(req.source, "vw");
                        let rv = o.metadata.resource_version.clone().unwrap_or_default();
                        let _ = tx.send((req.key.to_string(), rv, Instant::now()));
                        tokio::time::sleep(work).await;
                        result(&o)
                    }
                },
                error_policy,
                async move {
                    let _ = stopped.await;
                },
            ));
            Self {
                feed,
                started,
                handle,
                stop: Some(stop),
                done,
            }
        }

        fn send(&self, e: Event<DynamicObject>) {
            self.feed.unbounded_send(Ok(e)).unwrap();
        }

        /// The next reconcile start, within `within` of (virtual) time.
        async fn next(&mut self, within: Duration) -> Option<Started> {
            tokio::time::timeout(within, self.started.recv()).await.ok().flatten()
        }

        async fn stop(mut self) {
            let _ = self.stop.take().unwrap().send(());
            tokio::time::timeout(Duration::from_secs(5), self.done)
                .await
                .expect("run returns after shutdown")
                .unwrap();
        }
    }

    const FOREVER: Duration = Duration::from_secs(3600);

    #[tokio::test(start_paused = true)]
    async fn every_key_once_newest_object_bounded_and_never_concurrent() {
        let in_flight = Arc::new(Mutex::new(BTreeSet::<String>::new()));
        let max = Arc::new(AtomicUsize::new(0));
        let (track, seen_max) = (in_flight.clone(), max.clone());
        let (feed, events) = unbounded();
        let controller = Controller::new("test").concurrency(2).watch((), events);
        let (log_tx, mut log) = tmpsc::unbounded_channel();
        let run = tokio::spawn(controller.run(
            move |o: Arc<DynamicObject>, req: Request<()>| {
                let (track, seen_max, log_tx) = (track.clone(), seen_max.clone(), log_tx.clone());
                async move {
                    let k = req.key.to_string();
                    let n = {
                        let mut t = track.lock().unwrap();
                        assert!(t.insert(k.clone()), "{k} reconciled twice at once");
                        t.len()
                    };
                    seen_max.fetch_max(n, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    track.lock().unwrap().remove(&k);
                    let _ = log_tx.send(format!("{k}@{}", o.metadata.resource_version.clone().unwrap()));
                    Ok::<_, String>(Action::AwaitChange)
                }
            },
            crate::default_error_policy,
            std::future::pending(),
        ));
        for e in [
            Event::Init,
            Event::InitApply(obj("c1", "a", "1")),
            Event::InitApply(obj("c2", "a", "1")),
            Event::InitApply(obj("c1", "b", "1")),
            Event::InitDone,
            Event::Apply(obj("c1", "b", "2")),
            Event::Apply(obj("c1", "b", "3")),
        ] {
            feed.unbounded_send(Ok(e)).unwrap();
        }
        let mut done = Vec::new();
        while done.len() < 3 {
            done.push(tokio::time::timeout(FOREVER, log.recv()).await.unwrap().unwrap());
        }
        // Three objects, two at a time; the burst on c1/b is one reconcile of its newest version.
        done.sort();
        assert_eq!(done, vec!["c1|default/a@1", "c1|default/b@3", "c2|default/a@1"]);
        assert!(
            tokio::time::timeout(FOREVER, log.recv()).await.is_err(),
            "nothing else runs"
        );
        assert_eq!(max.load(Ordering::SeqCst), 2);
        run.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn failures_back_off_per_key_and_deleted_objects_stop_retrying() {
        let mut h = Harness::start(
            4,
            Duration::ZERO,
            |o| match o.metadata.name.as_deref() {
                Some("bad") => Err("boom".into()),
                _ => Ok(Action::AwaitChange),
            },
            crate::default_error_policy,
        );
        h.send(Event::Apply(obj("c1", "bad", "1")));
        let mut starts = Vec::new();
        for _ in 0..4 {
            starts.push(h.next(FOREVER).await.unwrap().2);
        }
        let gaps: Vec<u128> = starts.windows(2).map(|w| (w[1] - w[0]).as_millis()).collect();
        assert_eq!(gaps, vec![500, 1000, 2000]);
        h.send(Event::Apply(obj("c1", "good", "1")));
        assert_eq!(
            h.next(FOREVER).await.unwrap().0,
            "c1|default/good",
            "other keys are not held up"
        );
        h.send(Event::Delete(obj("c1", "bad", "1")));
        assert_eq!(h.next(FOREVER).await, None, "a deleted object is not retried");
        h.stop().await;
    }

    #[tokio::test(start_paused = true)]
    async fn error_policy_decides_the_retry() {
        let mut h = Harness::start(
            1,
            Duration::ZERO,
            |_| Err("conflict".into()),
            |_: &ClusterKey, e: &String, retry: Retry| {
                assert_eq!(e, "conflict");
                if retry.failures < 3 {
                    Action::RequeueAfter(Duration::from_millis(50))
                } else {
                    Action::AwaitChange
                }
            },
        );
        h.send(Event::Apply(obj("c1", "a", "1")));
        let t0 = h.next(FOREVER).await.unwrap().2;
        let t1 = h.next(FOREVER).await.unwrap().2;
        let t2 = h.next(FOREVER).await.unwrap().2;
        assert_eq!(
            (t1 - t0, t2 - t1),
            (Duration::from_millis(50), Duration::from_millis(50))
        );
        assert_eq!(h.next(FOREVER).await, None, "AwaitChange: no more retries");
        h.send(Event::Apply(obj("c1", "a", "2")));
        assert_eq!(h.next(FOREVER).await.unwrap().1, "2", "a change runs it again");
        h.stop().await;
    }

    /// The "reconcile failed" lines a test's controller logs: (level, key, failures).
    type Failed = (tracing::Level, String, String);

    /// Collects the "reconcile failed" events of the thread it is the default subscriber of (a
    /// paused-time test runs every task on the test's thread).
    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<Failed>>>);

    impl tracing::Subscriber for Capture {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            struct Fields(HashMap<&'static str, String>);
            impl tracing::field::Visit for Fields {
                fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
                    self.0.insert(field.name(), format!("{value:?}"));
                }
            }
            let mut fields = Fields(HashMap::new());
            event.record(&mut fields);
            let mut f = fields.0;
            if f.get("message").map(String::as_str) == Some("reconcile failed") {
                let (key, failures) = (f.remove("key").unwrap(), f.remove("failures").unwrap());
                self.0.lock().unwrap().push((*event.metadata().level(), key, failures));
            }
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    /// A conflict-like failure the policy calls expected is retried as the policy says and logged at
    /// debug while it heals, a warning once it repeats past [`crate::QUIET_FAILURES`]; an unexpected
    /// one is a warning from the first.
    #[tokio::test(start_paused = true)]
    async fn expected_failures_log_at_debug_until_they_repeat() {
        use tracing::Level;
        let capture = Capture::default();
        // tracing caches each callsite's interest process-wide. While one scoped subscriber is the
        // only dispatcher, a callsite another test's thread reaches first is judged by that
        // thread's default alone (none: "never"), and this capture would miss the warning it
        // shares with them (tracing-core's `has_just_one`). With a second live dispatcher every
        // registration asks all of them.
        let _second = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
        let _default = tracing::subscriber::set_default(capture.clone());
        let mut h = Harness::start(
            1,
            Duration::ZERO,
            |o| match o.metadata.name.as_deref() {
                Some("stale") => Err("conflict".into()),
                _ => Err("boom".into()),
            },
            |_: &ClusterKey, e: &String, retry: Retry| match e.as_str() {
                // Five conflicts, then nothing more: the test needs an end.
                "conflict" if retry.failures < 5 => Decision::expected(Action::RequeueAfter(Duration::from_millis(50))),
                "conflict" => Decision::expected(Action::AwaitChange),
                _ => Decision::unexpected(Action::AwaitChange),
            },
        );
        h.send(Event::Apply(obj("c1", "stale", "1")));
        let mut starts = Vec::new();
        while let Some((_, _, t)) = h.next(FOREVER).await {
            starts.push(t);
        }
        let gaps: Vec<u128> = starts.windows(2).map(|w| (w[1] - w[0]).as_millis()).collect();
        assert_eq!(gaps, vec![50; 4], "retried after the policy's 50 ms, not the backoff");
        h.send(Event::Apply(obj("c1", "broken", "1")));
        assert_eq!(h.next(FOREVER).await.unwrap().0, "c1|default/broken");
        assert_eq!(h.next(FOREVER).await, None);
        h.stop().await;
        let line = |level, key: &str, failures: u32| (level, format!("c1|default/{key}"), failures.to_string());
        assert_eq!(
            *capture.0.lock().unwrap(),
            vec![
                line(Level::DEBUG, "stale", 1),
                line(Level::DEBUG, "stale", 2),
                line(Level::DEBUG, "stale", 3),
                line(Level::WARN, "stale", 4),
                line(Level::WARN, "stale", 5),
                line(Level::WARN, "broken", 1),
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn requeue_after_resyncs_echoes_skip_and_handle_triggers() {
        let resync = Duration::from_secs(300);
        let mut h = Harness::start(
            1,
            Duration::ZERO,
            move |_| Ok(Action::RequeueAfter(resync)),
            crate::default_error_policy,
        );
        // A worker waiting on an empty queue wakes on the first event.
        assert_eq!(h.next(Duration::from_secs(10)).await, None);
        h.send(Event::Apply(obj("c1", "a", "1")));
        let (k, _, t0) = h.next(FOREVER).await.unwrap();
        assert_eq!(k, "c1|default/a");
        // The echo of our own write updates the store but queues nothing: the resync comes on time.
        h.send(Event::Apply(obj("c1", "a", "echo")));
        let (_, rv, t1) = h.next(FOREVER).await.unwrap();
        assert_eq!((t1 - t0, rv.as_str()), (resync, "echo"));
        // Something else (a related object changed) queues the key through the handle, at once.
        h.handle.enqueue(key("c1", "a"));
        let (_, _, t2) = h.next(FOREVER).await.unwrap();
        assert_eq!(t2, t1);
        assert_eq!(
            h.handle.with_store(|s| s.keys().cloned().collect::<Vec<_>>()),
            vec![key("c1", "a")]
        );
        // A key the store does not hold is dropped.
        h.handle.enqueue(key("c9", "nope"));
        let (k, _, t3) = h.next(FOREVER).await.unwrap();
        assert_eq!((k.as_str(), t3 - t2), ("c1|default/a", resync));
        h.stop().await;
    }

    #[tokio::test(start_paused = true)]
    async fn relist_prunes_and_on_gone_is_called() {
        let (feed, events) = unbounded();
        let (gone_tx, mut gone) = tmpsc::unbounded_channel();
        let depth = Arc::new(AtomicUsize::new(usize::MAX));
        let d = depth.clone();
        let controller = Controller::new("test")
            .watch((), events)
            .on_gone(move |k| {
                let _ = gone_tx.send(k.to_string());
            })
            .on_queue_depth(move |n| d.store(n, Ordering::SeqCst));
        let handle = controller.handle();
        let (stop, stopped) = oneshot::channel::<()>();
        let run = tokio::spawn(controller.run(
            |_, _: Request<()>| async { Ok::<_, String>(Action::AwaitChange) },
            crate::default_error_policy,
            async move {
                let _ = stopped.await;
            },
        ));
        for e in [
            Event::Init,
            Event::InitApply(obj("c1", "a", "1")),
            Event::InitApply(obj("c1", "b", "1")),
            Event::InitDone,
            Event::Init,
            Event::InitApply(obj("c1", "b", "2")),
            Event::InitDone,
        ] {
            feed.unbounded_send(Ok(e)).unwrap();
        }
        let first = tokio::time::timeout(FOREVER, gone.recv()).await.unwrap();
        assert_eq!(first.as_deref(), Some("c1|default/a"));
        assert_eq!(handle.with_store(|s| s.len()), 1);
        let _ = stop.send(());
        run.await.unwrap();
        assert_eq!(depth.load(Ordering::SeqCst), 0);
    }

    async fn next_line(log: &mut tmpsc::UnboundedReceiver<String>) -> String {
        tokio::time::timeout(FOREVER, log.recv()).await.unwrap().unwrap()
    }

    /// Shards come and go: a watch added while running feeds reconciles labelled with its source;
    /// a removed one stops, and its objects are gone (no longer reconciled) while the other
    /// source's stay.
    #[tokio::test(start_paused = true)]
    async fn sources_added_and_removed_while_running() {
        let (gone_tx, mut gone) = tmpsc::unbounded_channel();
        let (feed_a, events_a) = unbounded();
        let controller = Controller::new("test")
            .watch("shard-a".to_string(), events_a)
            .on_gone(move |k| {
                let _ = gone_tx.send(k.to_string());
            });
        let (sources, handle) = (controller.sources(), controller.handle());
        let (log_tx, mut log) = tmpsc::unbounded_channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let run = tokio::spawn(controller.run(
            move |o: Arc<DynamicObject>, req: Request<String>| {
                let log_tx = log_tx.clone();
                async move {
                    let _ = log_tx.send(format!(
                        "{}@{} via {}",
                        req.key,
                        o.metadata.resource_version.clone().unwrap(),
                        req.source
                    ));
                    Ok::<_, String>(Action::AwaitChange)
                }
            },
            crate::default_error_policy,
            async move {
                let _ = stopped.await;
            },
        ));
        feed_a.unbounded_send(Ok(Event::Apply(obj("c1", "x", "1")))).unwrap();
        assert_eq!(next_line(&mut log).await, "c1|default/x@1 via shard-a");

        let (feed_b, events_b) = unbounded();
        let b = sources.add("shard-b".to_string(), events_b);
        for e in [Event::Init, Event::InitApply(obj("c2", "x", "1")), Event::InitDone] {
            feed_b.unbounded_send(Ok(e)).unwrap();
        }
        assert_eq!(next_line(&mut log).await, "c2|default/x@1 via shard-b");
        assert_eq!(handle.with_store(|s| s.len()), 2);

        sources.remove(b);
        let forgotten = tokio::time::timeout(FOREVER, gone.recv()).await.unwrap();
        assert_eq!(forgotten.as_deref(), Some("c2|default/x"));
        // The stopped watch's stream was dropped: its feed is closed.
        tokio::time::timeout(FOREVER, async {
            while !feed_b.is_closed() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .unwrap();
        assert_eq!(
            handle.with_store(|s| s.keys().map(ToString::to_string).collect::<Vec<_>>()),
            vec!["c1|default/x"]
        );
        // The remaining source goes on as before.
        feed_a.unbounded_send(Ok(Event::Apply(obj("c1", "x", "2")))).unwrap();
        assert_eq!(next_line(&mut log).await, "c1|default/x@2 via shard-a");
        let _ = stop.send(());
        run.await.unwrap();
    }
}
