//! `faros-runtime`: the one controller runtime of faros, shared by the hub reconciler and the
//! provider SDK.
//!
//! It is kcp-aware: a wildcard watch through a virtual workspace (`<vw>/clusters/*`) returns
//! same-named objects of every workspace, so objects are keyed by [`ClusterKey`] (the `kcp.io/cluster`
//! annotation, namespace, name) instead of kube-runtime's (namespace, name), which would merge them.
//!
//! | module | job |
//! |---|---|
//! | [`action`] | [`Action`]: what a reconcile asks for next |
//! | [`key`] | [`ClusterKey`]: an object's identity across logical clusters |
//! | [`backoff`] | [`Backoff`], [`Retry`]: per-key exponential retry delays; [`Decision`]: the error policy's answer |
//! | [`queue`] | [`WorkQueue`]: the IO-free per-key queue (due keys, running keys, failures) |
//! | [`store`] | [`Store`]: the IO-free fold of watch events into the object cache and the queue |
//! | [`controller`] | [`Controller`]: the reconcile loop driver (watches in, bounded reconciles out) |
//! | [`reflect`] | [`reflect::drive`]: the one relist/index driver (watch events folded into an index, relists whole) |
//! | [`finalizer`] | [`finalizer()`](finalizer::finalizer): a reconcile behind a finalizer (`Apply`, `Cleanup`), guarded JSON patches |
//!
//! Guarantees of the driver: events are deduplicated per key (a burst of updates is one reconcile of
//! the newest object); a key is never reconciled twice at the same time; at most `concurrency`
//! reconciles run; a failure is retried as the error policy decides (per-key exponential backoff by
//! default) and logged as a warning, or at debug if the policy calls it expected (self-healing, such
//! as a 409 from a stale copy) and it has not repeated more than [`QUIET_FAILURES`] times in a row;
//! deleted objects (also those a relist no longer shows) leave the queue; a reconcile may ask to run
//! again after a delay (resync).
//!
//! What it must not do: build clients or speak HTTP of its own (callers hand it watch streams, build
//! their own clients from the key, and hand [`finalizer`] the `Api` it writes the finalizer
//! through), know any faros resource type, or make any controller's decision (what to write, which
//! errors are special, what a cleanup is): only queueing, keys, backoff, the loop, the finalizer's
//! bookkeeping and the error policy hook.
//! (Which failures are expected is the error policy's call; the runtime only turns that and the
//! key's failure count into a log level.)

pub mod action;
pub mod backoff;
pub mod controller;
pub mod finalizer;
pub mod key;
pub mod queue;
pub mod reflect;
pub mod store;

pub use action::Action;
pub use backoff::{Backoff, Decision, QUIET_FAILURES, RETRY_MAX, RETRY_MIN, Retry, default_error_policy};
pub use controller::{Controller, Handle, Request, SourceId, Sources};
pub use key::ClusterKey;
pub use queue::{Outcome, WorkQueue};
pub use store::Store;
