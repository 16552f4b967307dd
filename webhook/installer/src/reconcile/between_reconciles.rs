//! What the installer remembers of each Workspace between its reconciles: how often in a
//! row it backed off, and the resourceVersion its own last write left (an `OwnWrites`
//! overlay, the same rules as the edges' objects). Only reconciles read and write it.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use providers_runtime::locks::Locked;
use providers_runtime::own_writes::OwnWrites;

/// How long the installer trusts the resourceVersion its own write of a Workspace left over
/// a watch cache that shows another. A hub watch lags by seconds, so in practice the cache
/// has caught up long before; the limit is there so that the entry of a Workspace deleted
/// (or changed by someone else) before its cache showed the write is swept, not kept for
/// the process's life, and ten minutes keeps it far from any lag the hub's watch has.
const WRITTEN_TTL: Duration = Duration::from_secs(600);

pub struct BetweenReconciles {
    /// Consecutive backoffs per Workspace (`namespace/name`).
    backoff: Mutex<HashMap<String, u32>>,
    /// The resourceVersion of each Workspace as the installer's last write of it left it,
    /// until the watch cache has it too.
    written: Mutex<OwnWrites<String, String>>,
}

impl Default for BetweenReconciles {
    fn default() -> Self {
        Self {
            backoff: Mutex::default(),
            written: Mutex::new(OwnWrites::new(WRITTEN_TTL)),
        }
    }
}

impl BetweenReconciles {
    /// Whether the watch cache's copy of a Workspace may be older than the installer's own
    /// last write of it; forgets the write once the cache has it.
    pub fn cache_behind(&self, key: &str, cached_version: Option<&str>) -> bool {
        let mut written = self.written.locked();
        written
            .trusted(
                key,
                |version| Some(version.as_str()) == cached_version,
                Instant::now(),
            )
            .is_some()
    }

    /// Remembers the resourceVersion the installer's last write of a Workspace left.
    pub fn remember_written_version(&self, key: &str, version: Option<&str>) {
        let mut written = self.written.locked();
        match version {
            Some(version) => written.insert(key.to_owned(), version.to_owned(), Instant::now()),
            None => written.forget(key),
        }
    }

    /// The next delay for a Workspace that keeps waiting on a transient problem:
    /// 1 s, 2 s, 4 s, ... up to 60 s.
    pub fn backoff(&self, key: &str) -> std::time::Duration {
        let mut map = self.backoff.locked();
        let count = map.entry(key.to_owned()).or_insert(0);
        let seconds = 1u64 << (*count).min(6);
        *count = count.saturating_add(1);
        std::time::Duration::from_secs(seconds.min(60))
    }

    /// Forgets the backoff of a Workspace that made progress.
    pub fn reset_backoff(&self, key: &str) {
        self.backoff.locked().remove(key);
    }
}
