//! Waiting for an edge's watches to have listed: how many have, and how long a decision
//! waits.

use std::{
    sync::atomic::{AtomicUsize, Ordering},
    time::Duration,
};

use providers_runtime::synced::Synced;

/// How long a decision waits for an edge's caches to be filled after (re)connecting.
pub const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

/// How many of an edge's watches have had their first list, of how many; `all` is set
/// once every one has, and wakes every reconcile that waits for them.
#[derive(Debug, Default)]
pub(super) struct WatchesListed {
    count: AtomicUsize,
    of: AtomicUsize,
    all: Synced,
}

impl WatchesListed {
    /// One more watch has its first list.
    pub(super) fn one_more(&self) {
        self.count.fetch_add(1, Ordering::AcqRel);
        self.mark_if_all_listed();
    }

    /// How many watches there are, once all are started.
    pub(super) fn of(&self, watches: usize) {
        self.of.store(watches, Ordering::Release);
        self.mark_if_all_listed();
    }

    fn mark_if_all_listed(&self) {
        let of = self.of.load(Ordering::Acquire);
        if of > 0 && self.count.load(Ordering::Acquire) >= of {
            self.all.set();
        }
    }

    /// Waits until every watch has its first list.
    pub(super) async fn wait_all(&self) {
        self.all.wait().await;
    }
}
