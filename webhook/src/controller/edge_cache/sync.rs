//! Waiting for a watch to have listed: the mark it sets, and how long a decision waits.

use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use tokio::sync::Notify;

/// How long a decision waits for an edge's caches to be filled after (re)connecting.
pub const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

/// A one-way "has listed" mark that any number of waiters can wait for.
#[derive(Debug, Default)]
pub(super) struct Flag {
    set: AtomicBool,
    changed: Notify,
}

impl Flag {
    pub(super) fn set(&self) {
        self.set.store(true, Ordering::Release);
        self.changed.notify_waiters();
    }

    pub(super) fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    pub(super) async fn wait(&self) {
        loop {
            // Registered before the check, so a set between the two is not missed.
            let changed = self.changed.notified();
            if self.set.load(Ordering::Acquire) {
                return;
            }
            changed.await;
        }
    }
}
