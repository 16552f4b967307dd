//! Whether a watch has its first list: the one mark every watch of both processes sets,
//! that any number of tasks can wait for and `/readyz` reads without waiting.
//!
//! A reflector store's own `wait_until_ready` wakes only the last of several waiters (the
//! others would wait for their timeout), and says nothing to a reader that must not wait;
//! this mark is set from the watch stream itself, on its first `InitDone`.

use std::sync::atomic::{AtomicBool, Ordering};

use kube::runtime::watcher;
use tokio::sync::Notify;

#[derive(Debug, Default)]
pub struct Synced {
    set: AtomicBool,
    changed: Notify,
}

impl Synced {
    /// The watch has its first list; every waiter is woken.
    pub fn set(&self) {
        self.set.store(true, Ordering::Release);
        self.changed.notify_waiters();
    }

    /// Sets the mark when `event` ends a list.
    pub fn on_event<K>(&self, event: &watcher::Event<K>) {
        if matches!(event, watcher::Event::InitDone) {
            self.set();
        }
    }

    /// A new watch starts in its place (a new run of the replica): not listed yet.
    pub fn clear(&self) {
        self.set.store(false, Ordering::Release);
    }

    /// Whether the watch has its first list, without waiting.
    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// Waits until the watch has its first list: at once when it has.
    pub async fn wait(&self) {
        loop {
            // Registered before the check, so a set between the two is not missed.
            let changed = self.changed.notified();
            if self.is_set() {
                return;
            }
            changed.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{sync::Arc, time::Duration};

    use super::*;

    #[tokio::test]
    async fn every_waiter_is_woken_and_a_reader_never_waits() {
        let synced = Arc::new(Synced::default());
        assert!(!synced.is_set());
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let synced = synced.clone();
                tokio::spawn(async move { synced.wait().await })
            })
            .collect();
        tokio::task::yield_now().await;
        synced.on_event(&watcher::Event::<()>::Init);
        assert!(!synced.is_set(), "only the end of a list sets it");
        synced.on_event(&watcher::Event::<()>::InitDone);
        assert!(synced.is_set());
        for waiter in waiters {
            tokio::time::timeout(Duration::from_secs(1), waiter)
                .await
                .expect("every waiter is woken")
                .unwrap();
        }
        synced.wait().await;
        synced.clear();
        assert!(!synced.is_set(), "a new watch lists again");
    }
}
