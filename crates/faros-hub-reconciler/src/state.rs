//! What the reconciler shows of itself: bootstrap done, leadership role, metrics. Read by the health
//! endpoints ([`crate::health`]) and in-process callers, written by [`crate::Reconciler::run`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::watch;

use crate::leader::Role;
use crate::metrics::Metrics;

/// Observable state, shared with the health endpoints and with in-process callers.
#[derive(Debug)]
pub struct State {
    pub metrics: Arc<Metrics>,
    bootstrapped: AtomicBool,
    pub(crate) role: watch::Sender<Role>,
}

impl State {
    pub(crate) fn new(metrics: Metrics) -> Self {
        let (role, _) = watch::channel(Role::Starting);
        Self {
            metrics: Arc::new(metrics),
            bootstrapped: AtomicBool::new(false),
            role,
        }
    }

    pub fn is_bootstrapped(&self) -> bool {
        self.bootstrapped.load(Ordering::Acquire)
    }

    pub(crate) fn set_bootstrapped(&self) {
        self.bootstrapped.store(true, Ordering::Release);
        self.metrics.set_bootstrapped(true);
    }

    pub fn role(&self) -> Role {
        self.role.borrow().clone()
    }

    /// Changes of [`Self::role`].
    pub fn subscribe_role(&self) -> watch::Receiver<Role> {
        self.role.subscribe()
    }

    /// Ready = bootstrap done and the election has decided (leader or standby).
    pub fn is_ready(&self) -> bool {
        self.is_bootstrapped() && self.role() != Role::Starting
    }
}
