//! What the installer's own writes returned, trusted over a watch cache that has not shown
//! them yet: one rule set for the hub's Workspaces and the edges' objects.
//!
//! An entry is trusted until the cache shows the write (the caller says how it knows:
//! the resourceVersion the write left, for a Workspace; the UID, for an edge object) or
//! until it is a TTL old, whichever comes first. Entries past their TTL are swept at the
//! first write once a TTL has passed since the last sweep: an object the installer never
//! reads again (a deleted Job, a deleted Workspace) is not kept for the process's life.

use std::{
    borrow::Borrow,
    collections::HashMap,
    hash::Hash,
    time::{Duration, Instant},
};

pub struct OwnWrites<K, V> {
    ttl: Duration,
    entries: HashMap<K, (V, Instant)>,
    swept_at: Option<Instant>,
}

impl<K: Eq + Hash, V> OwnWrites<K, V> {
    /// An overlay whose entries are trusted for at most `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: HashMap::new(),
            swept_at: None,
        }
    }

    /// Remembers what a write of `key` returned at `now`, in place of what an earlier one
    /// did.
    pub fn insert(&mut self, key: K, value: V, now: Instant) {
        if self
            .swept_at
            .is_none_or(|at| now.duration_since(at) >= self.ttl)
        {
            let ttl = self.ttl;
            self.entries
                .retain(|_, (_, at)| now.duration_since(*at) < ttl);
            self.swept_at = Some(now);
        }
        self.entries.insert(key, (value, now));
    }

    /// Forgets the write of `key` (the object is gone, or no longer the installer's to
    /// read).
    pub fn forget<Q: Eq + Hash + ?Sized>(&mut self, key: &Q)
    where
        K: Borrow<Q>,
    {
        self.entries.remove(key);
    }

    /// What the installer's last write of `key` returned, while the cache has not caught
    /// up with it (`caught_up` says whether it has) and it is younger than the TTL; an
    /// entry the cache has caught up with, or too old, is forgotten.
    pub fn trusted<Q: Eq + Hash + ?Sized>(
        &mut self,
        key: &Q,
        caught_up: impl FnOnce(&V) -> bool,
        now: Instant,
    ) -> Option<&V>
    where
        K: Borrow<Q>,
    {
        let (value, at) = self.entries.get(key)?;
        if caught_up(value) || now.duration_since(*at) >= self.ttl {
            self.entries.remove(key);
            return None;
        }
        self.entries.get(key).map(|(value, _)| value)
    }

    /// What the installer's last write of `key` returned, however old: not to be trusted
    /// over the cache, only to recognise the write's own echo in a watch.
    pub fn last(&self, key: &K) -> Option<&V> {
        self.entries.get(key).map(|(value, _)| value)
    }

    /// The keys of the writes remembered.
    #[cfg(any(test, feature = "testing"))]
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.entries.keys()
    }

    /// How many writes are remembered.
    #[cfg(any(test, feature = "testing"))]
    #[allow(clippy::len_without_is_empty, reason = "a count for tests to compare")]
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Duration = Duration::from_secs(60);

    #[test]
    fn a_write_is_trusted_until_the_cache_shows_it() {
        let mut own = OwnWrites::new(TTL);
        let now = Instant::now();
        own.insert("ws", "7", now);
        let shows = |cached: &'static str| move |mine: &&str| *mine == cached;
        assert_eq!(own.trusted(&"ws", shows("6"), now), Some(&"7"));
        assert_eq!(own.trusted(&"ws", shows("7"), now), None);
        assert_eq!(
            own.trusted(&"ws", shows("6"), now),
            None,
            "forgotten once the cache showed it"
        );
        assert_eq!(own.trusted(&"other", shows("6"), now), None);
    }

    #[test]
    fn a_write_is_trusted_for_at_most_the_ttl() {
        let mut own = OwnWrites::new(TTL);
        let now = Instant::now();
        own.insert("ws", "7", now);
        let never = |_: &&str| false;
        assert!(own.trusted(&"ws", never, now + TTL / 2).is_some());
        assert!(own.trusted(&"ws", never, now + TTL).is_none());
        assert_eq!(own.len(), 0, "an expired entry read is forgotten");
    }

    #[test]
    fn a_later_write_replaces_an_earlier_and_forget_drops_it() {
        let mut own = OwnWrites::new(TTL);
        let now = Instant::now();
        own.insert("ws", "7", now);
        own.insert("ws", "8", now + TTL / 2);
        let never = |_: &&str| false;
        assert_eq!(own.trusted(&"ws", never, now + TTL), Some(&"8"));
        own.forget(&"ws");
        assert_eq!(own.trusted(&"ws", never, now), None);
    }

    #[test]
    fn entries_never_read_again_are_swept_once_a_ttl_has_passed() {
        let mut own = OwnWrites::new(TTL);
        let now = Instant::now();
        own.insert("deleted-1", "1", now);
        own.insert("deleted-2", "2", now + TTL / 2);
        assert_eq!(own.len(), 2, "no sweep within a TTL of the last");
        own.insert("live", "3", now + TTL + TTL / 4);
        assert_eq!(
            own.len(),
            2,
            "the expired entry is swept, the one still young is kept"
        );
        own.insert("later", "4", now + 2 * TTL + TTL / 2);
        assert_eq!(own.len(), 1, "swept again a TTL after the last sweep");
    }
}
