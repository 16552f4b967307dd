//! The edges known to this replica, as decisions and `/readyz` see them.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, RwLock},
};

use k8s_openapi::jiff::Timestamp;
use kube::Client;
use providers_shared::installer::EdgeState;

use providers_edge_watch::EdgeCache;
use providers_runtime::locks::ReadWriteLocked;
use providers_runtime::synced::Synced;

/// What the reconciler needs of an edge.
#[derive(Clone)]
struct EdgeEntry {
    state: EdgeState,
    client: Option<Client>,
    cache: Option<EdgeCache>,
    since: Timestamp,
}

/// An edge as a decision sees it: its state, and while it is Ready a client for writes and
/// the caches for reads.
#[derive(Clone)]
pub struct EdgeView {
    pub state: EdgeState,
    pub client: Option<Client>,
    pub cache: Option<EdgeCache>,
}

/// The edges known to this replica.
#[derive(Clone, Default)]
pub struct Edges {
    inner: Arc<RwLock<Registry>>,
    /// Whether the first list of Edges is in: an unknown edge is then missing.
    listed: Arc<Synced>,
}

#[derive(Default)]
struct Registry {
    entries: HashMap<String, EdgeEntry>,
    /// The Edges that have a worker, probed or not.
    worked: HashSet<String>,
}

impl Edges {
    /// The state of an edge, with a client and its caches when it is Ready.
    pub fn lookup(&self, name: &str) -> EdgeView {
        let view = |state| EdgeView {
            state,
            client: None,
            cache: None,
        };
        let registry = self.inner.read_locked();
        match registry.entries.get(name) {
            Some(entry) => EdgeView {
                state: entry.state.clone(),
                client: entry.client.clone(),
                cache: entry.cache.clone(),
            },
            None if self.listed.is_set() => view(EdgeState::Missing),
            None => view(EdgeState::Unprobed),
        }
    }

    /// The Ready edges and their clients.
    pub fn ready_edges(&self) -> Vec<(String, Client)> {
        let registry = self.inner.read_locked();
        registry
            .entries
            .iter()
            .filter(|(_, entry)| matches!(entry.state, EdgeState::Ready(_)))
            .filter_map(|(name, entry)| Some((name.clone(), entry.client.clone()?)))
            .collect()
    }

    /// Forgets everything: a new run probes afresh.
    pub fn reset(&self) {
        self.listed.clear();
        *self.inner.write_locked() = Registry::default();
    }

    /// How many Edges are probed, once the Edge list is in and every Edge with a worker has
    /// been probed at least once; otherwise what is still awaited.
    pub fn probed(&self) -> Result<usize, String> {
        let registry = self.inner.read_locked();
        if !self.listed.is_set() {
            return Err("the Edge list is not in yet".into());
        }
        let awaited = registry
            .worked
            .iter()
            .filter(|name| !registry.entries.contains_key(*name))
            .count();
        if awaited == 0 {
            return Ok(registry.entries.len());
        }
        // A count, not names: the admin port answers without authentication.
        Err(format!("{awaited} edge(s) not probed yet"))
    }

    /// An Edge gets a worker: it counts as awaited until its first probe.
    pub(crate) fn expect(&self, name: &str) {
        let mut registry = self.inner.write_locked();
        registry.worked.insert(name.to_owned());
    }

    /// The first list of Edges is in.
    pub(crate) fn set_synced(&self) {
        self.listed.set();
    }

    /// Records a probe; returns the time of the last change of state.
    pub(crate) fn record_probe(
        &self,
        name: &str,
        state: EdgeState,
        client: Option<(Client, EdgeCache)>,
    ) -> (bool, Timestamp) {
        let mut registry = self.inner.write_locked();
        let previous = registry.entries.get(name);
        let changed = previous.is_none_or(|p| p.state != state);
        let since = match previous {
            Some(previous) if !changed => previous.since,
            _ => Timestamp::now(),
        };
        let (client, cache) = client.unzip();
        registry.entries.insert(
            name.to_owned(),
            EdgeEntry {
                state,
                client,
                cache,
                since,
            },
        );
        (changed, since)
    }

    pub(crate) fn remove(&self, name: &str) {
        let mut registry = self.inner.write_locked();
        registry.entries.remove(name);
        registry.worked.remove(name);
    }

    #[cfg(test)]
    pub(crate) fn record_unreachable_for_test(&self, name: &str) {
        self.record_probe(name, EdgeState::Unreachable("a test".into()), None);
    }
}
