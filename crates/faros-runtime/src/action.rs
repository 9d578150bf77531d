//! What a reconcile (or the error policy) asks for next.

use std::time::Duration;

/// What to do with a key after its reconcile (successful or failed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing until the object changes (or something else queues the key).
    AwaitChange,
    /// Reconcile again after the delay even if nothing changes (resync, polling, retry).
    RequeueAfter(Duration),
}
