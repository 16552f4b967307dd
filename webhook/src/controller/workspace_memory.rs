//! What the installer remembers of each Workspace between its reconciles: how often in a
//! row it backed off, and the resourceVersion its own last write left. Only reconciles
//! read and write it.

use std::{
    collections::HashMap,
    sync::{Mutex, PoisonError},
};

#[derive(Default)]
pub struct WorkspaceMemory {
    /// Consecutive backoffs per Workspace (`namespace/name`).
    backoff: Mutex<HashMap<String, u32>>,
    /// The resourceVersion of each Workspace as the installer's last write of it left it,
    /// until the watch cache has it too.
    written: Mutex<HashMap<String, String>>,
}

impl WorkspaceMemory {
    /// Whether the watch cache's copy of a Workspace may be older than the installer's own
    /// last write of it; forgets the write once the cache has it.
    pub fn cache_behind(&self, key: &str, cached_version: Option<&str>) -> bool {
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        match written.get(key) {
            None => false,
            Some(version) if Some(version.as_str()) == cached_version => {
                written.remove(key);
                false
            }
            Some(_) => true,
        }
    }

    /// Remembers the resourceVersion the installer's last write of a Workspace left.
    pub fn wrote(&self, key: &str, version: Option<&str>) {
        let mut written = self.written.lock().unwrap_or_else(PoisonError::into_inner);
        match version {
            Some(version) => {
                written.insert(key.to_owned(), version.to_owned());
            }
            None => {
                written.remove(key);
            }
        }
    }

    /// The next delay for a Workspace that keeps waiting on a transient problem:
    /// 1 s, 2 s, 4 s, ... up to 60 s.
    pub fn backoff(&self, key: &str) -> std::time::Duration {
        let Ok(mut map) = self.backoff.lock() else {
            return std::time::Duration::from_secs(5);
        };
        let count = map.entry(key.to_owned()).or_insert(0);
        let seconds = 1u64 << (*count).min(6);
        *count = count.saturating_add(1);
        std::time::Duration::from_secs(seconds.min(60))
    }

    /// Forgets the backoff of a Workspace that made progress.
    pub fn reset_backoff(&self, key: &str) {
        if let Ok(mut map) = self.backoff.lock() {
            map.remove(key);
        }
    }
}
