//! A watch cache that keeps a compact form of each object instead of the object: what
//! kube's reflector `Store` does, for the edge caches (`compact_meta`).
//!
//! It takes a watcher's events as the reflector does: applies and deletions change the
//! store at once; a (re)list is gathered aside from `Init` and replaces the store whole at
//! `InitDone`, so a reader never sees half a list.

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
};

use kube::{Resource, runtime::watcher};

use providers_runtime::locks::ReadWriteLocked;

/// The objects by `namespace/name` (`name` for a cluster-scoped kind).
type Objects<T> = HashMap<Box<str>, T>;

/// The compact objects a watch brought. Cloning shares them.
pub(super) struct CompactStore<T> {
    objects: Arc<RwLock<Objects<T>>>,
}

impl<T> Clone for CompactStore<T> {
    fn clone(&self) -> Self {
        Self {
            objects: self.objects.clone(),
        }
    }
}

impl<T> Default for CompactStore<T> {
    fn default() -> Self {
        Self {
            objects: Arc::default(),
        }
    }
}

fn key(namespace: Option<&str>, name: &str) -> Box<str> {
    match namespace {
        Some(namespace) => format!("{namespace}/{name}").into_boxed_str(),
        None => name.into(),
    }
}

impl<T> CompactStore<T> {
    /// What `read` makes of the object `name` (in `namespace`), if it is there.
    pub(super) fn get<R>(
        &self,
        namespace: Option<&str>,
        name: &str,
        read: impl FnOnce(&T) -> R,
    ) -> Option<R> {
        self.objects
            .read_locked()
            .get(&key(namespace, name))
            .map(read)
    }

    /// What `read` makes of each object it takes.
    pub(super) fn filter_map<R>(&self, read: impl FnMut(&T) -> Option<R>) -> Vec<R> {
        self.objects
            .read_locked()
            .values()
            .filter_map(read)
            .collect()
    }
}

/// Applies a watch's events of `K` to a [`CompactStore`], compacting each object.
pub(super) struct CompactWriter<K, T> {
    store: CompactStore<T>,
    compact: fn(&K) -> T,
    /// The objects of a list in progress.
    listing: Objects<T>,
}

/// An empty store, and the writer that fills it with `compact` of each object.
pub(super) fn compact_store<K, T>(compact: fn(&K) -> T) -> (CompactStore<T>, CompactWriter<K, T>) {
    let store = CompactStore::default();
    let writer = CompactWriter {
        store: store.clone(),
        compact,
        listing: HashMap::new(),
    };
    (store, writer)
}

impl<K: Resource, T> CompactWriter<K, T> {
    pub(super) fn apply_watcher_event(&mut self, event: &watcher::Event<K>) {
        let key_of = |object: &K| {
            key(
                object.meta().namespace.as_deref(),
                object.meta().name.as_deref().unwrap_or_default(),
            )
        };
        match event {
            watcher::Event::Apply(object) => {
                let compact = (self.compact)(object);
                self.store
                    .objects
                    .write_locked()
                    .insert(key_of(object), compact);
            }
            watcher::Event::Delete(object) => {
                self.store.objects.write_locked().remove(&key_of(object));
            }
            watcher::Event::Init => self.listing = HashMap::new(),
            watcher::Event::InitApply(object) => {
                self.listing.insert(key_of(object), (self.compact)(object));
            }
            watcher::Event::InitDone => {
                let mut listed = std::mem::take(&mut self.listing);
                listed.shrink_to_fit();
                *self.store.objects.write_locked() = listed;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::{api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::ObjectMeta};

    use super::*;

    fn object(namespace: Option<&str>, name: &str, version: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: namespace.map(Into::into),
                resource_version: Some(version.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn version(object: &ConfigMap) -> String {
        object.metadata.resource_version.clone().unwrap_or_default()
    }

    #[test]
    fn applies_and_deletions_show_at_once_and_a_relist_replaces_the_store_whole() {
        let (store, mut writer) = compact_store(version);
        writer.apply_watcher_event(&watcher::Event::Apply(object(Some("a"), "x", "1")));
        writer.apply_watcher_event(&watcher::Event::Apply(object(Some("b"), "x", "2")));
        writer.apply_watcher_event(&watcher::Event::Apply(object(None, "x", "3")));
        let get = |ns: Option<&str>, name: &str| store.get(ns, name, Clone::clone);
        assert_eq!(get(Some("a"), "x").as_deref(), Some("1"));
        assert_eq!(get(Some("b"), "x").as_deref(), Some("2"));
        assert_eq!(get(None, "x").as_deref(), Some("3"));
        writer.apply_watcher_event(&watcher::Event::Delete(object(Some("a"), "x", "1")));
        assert_eq!(get(Some("a"), "x"), None);

        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitApply(object(Some("c"), "y", "4")));
        assert_eq!(
            get(Some("b"), "x").as_deref(),
            Some("2"),
            "a list in progress is not seen"
        );
        assert_eq!(get(Some("c"), "y"), None);
        writer.apply_watcher_event(&watcher::Event::InitDone);
        assert_eq!(get(Some("b"), "x"), None, "gone while the watch was away");
        assert_eq!(get(Some("c"), "y").as_deref(), Some("4"));
        assert_eq!(store.filter_map(|v| Some(v.clone())), ["4"], "and only it");
    }
}
