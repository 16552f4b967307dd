//! What the webhook knows of the stored PlanValues without asking the hub: a metadata
//! watch of every PlanValues object, kept compact (no managed fields, no values), and the
//! objects this process created or read back and checked.
//!
//! It answers the two questions every seal of stored values asked the API server before:
//! how many values of a namespace wait for their installer (a list per seal), and whether
//! the values of this name are there, unchanged and marked sealed a moment ago (a create,
//! a mark and a read per seal of values stored already). Until its first list it answers
//! neither, and the webhook asks the API server as before. It can lag the hub by a watch
//! event: a count a few objects short admits a few more than `MAX_PENDING`, and values
//! deleted a moment ago are still sealed over, as a seal in flight during the deletion
//! would be; the installer checks the values' digest before anything runs.

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
};

use futures::StreamExt;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::{
    Api, Client,
    core::PartialObjectMeta,
    runtime::{WatchStreamExt, watcher},
};
use prometheus_client::metrics::gauge::Gauge;
use providers_shared::{
    api::PlanValues,
    plan_values::{
        LABEL_ADOPTED,
        reseal::{KnownValues, last_sealed_of, sealed_again_without_write},
    },
};

use providers_runtime::{locks::ReadWriteLocked, synced::Synced};

/// One stored object, as its metadata shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    uid: String,
    generation: i64,
    last_sealed: Option<Timestamp>,
    /// Not yet taken into its Workspace's ownership by the installer.
    pending: bool,
    owned: bool,
}

impl Entry {
    fn of(meta: &PartialObjectMeta<PlanValues>) -> Self {
        let meta = &meta.metadata;
        Self {
            uid: meta.uid.clone().unwrap_or_default(),
            generation: meta.generation.unwrap_or_default(),
            last_sealed: last_sealed_of(meta),
            pending: meta
                .labels
                .as_ref()
                .and_then(|labels| labels.get(LABEL_ADOPTED))
                .is_some_and(|adopted| adopted == "false"),
            owned: meta
                .owner_references
                .as_ref()
                .is_some_and(|owners| !owners.is_empty()),
        }
    }
}

#[derive(Default)]
struct Index {
    /// Objects held, in every namespace.
    len: usize,
    /// Namespace, then name.
    objects: HashMap<String, HashMap<String, Entry>>,
    /// Pending objects per namespace.
    pending: HashMap<String, usize>,
    /// UID to the generation this process created or read back and checked.
    checked: HashMap<String, i64>,
    /// The objects of a list in progress.
    listing: Option<Vec<(String, String, Entry)>>,
}

impl Index {
    fn insert(&mut self, namespace: String, name: String, entry: Entry) {
        let pending = entry.pending;
        let old = self
            .objects
            .entry(namespace.clone())
            .or_default()
            .insert(name, entry);
        if old.is_none() {
            self.len += 1;
        }
        if old.as_ref().is_some_and(|old| old.pending) {
            self.uncount(&namespace);
        }
        if pending {
            *self.pending.entry(namespace).or_default() += 1;
        }
    }

    fn remove(&mut self, namespace: &str, name: &str) {
        let Some(objects) = self.objects.get_mut(namespace) else {
            return;
        };
        let Some(old) = objects.remove(name) else {
            return;
        };
        self.len -= 1;
        if objects.is_empty() {
            self.objects.remove(namespace);
        }
        self.checked.remove(&old.uid);
        if old.pending {
            self.uncount(namespace);
        }
    }

    fn uncount(&mut self, namespace: &str) {
        if let Some(count) = self.pending.get_mut(namespace) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.pending.remove(namespace);
            }
        }
    }

    /// A whole list replaces what was known; what this process checked is kept only for
    /// objects still there.
    fn replace(&mut self, listed: Vec<(String, String, Entry)>) {
        let checked = std::mem::take(&mut self.checked);
        self.objects.clear();
        self.pending.clear();
        self.len = 0;
        for (namespace, name, entry) in listed {
            if let Some(generation) = checked.get(&entry.uid) {
                self.checked.insert(entry.uid.clone(), *generation);
            }
            self.insert(namespace, name, entry);
        }
    }
}

/// The webhook's index of stored PlanValues. Cloning shares it.
#[derive(Clone)]
pub struct StoredValues {
    index: Arc<RwLock<Index>>,
    listed: Arc<Synced>,
    window: SignedDuration,
    /// How many objects it holds (`providers_webhook_stored_values_known`).
    known: Gauge,
}

impl StoredValues {
    /// An index fed by nothing yet; `window` is how long after its mark values are sealed
    /// again without a new one, and `known` shows how many objects it holds.
    pub fn new(window: SignedDuration, known: Gauge) -> Self {
        Self {
            index: Arc::default(),
            listed: Arc::default(),
            window,
            known,
        }
    }

    /// Follows every PlanValues object's metadata on the hub, for as long as the process
    /// runs.
    pub fn watch(&self, client: Client) {
        let stream = watcher::watcher(
            Api::<PartialObjectMeta<PlanValues>>::all(client),
            watcher::Config::default(),
        )
        .default_backoff();
        let index = self.clone();
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                match event {
                    Ok(event) => index.on_event(event),
                    Err(error) => tracing::warn!(%error, "watching PlanValues"),
                }
            }
        });
    }

    fn on_event(&self, event: watcher::Event<PartialObjectMeta<PlanValues>>) {
        let key = |meta: &PartialObjectMeta<PlanValues>| {
            (
                meta.metadata.namespace.clone().unwrap_or_default(),
                meta.metadata.name.clone().unwrap_or_default(),
            )
        };
        let mut index = self.index.write_locked();
        let mut listed = false;
        match event {
            watcher::Event::Init => index.listing = Some(Vec::new()),
            watcher::Event::InitApply(meta) => {
                let (namespace, name) = key(&meta);
                let entry = Entry::of(&meta);
                if let Some(listing) = index.listing.as_mut() {
                    listing.push((namespace, name, entry));
                }
            }
            watcher::Event::InitDone => {
                let objects = index.listing.take().unwrap_or_default();
                index.replace(objects);
                listed = true;
            }
            watcher::Event::Apply(meta) => {
                let (namespace, name) = key(&meta);
                let entry = Entry::of(&meta);
                // A changed object is no longer the one checked.
                if index
                    .checked
                    .get(&entry.uid)
                    .is_some_and(|generation| *generation != entry.generation)
                {
                    index.checked.remove(&entry.uid);
                }
                index.insert(namespace, name, entry);
            }
            watcher::Event::Delete(meta) => {
                let (namespace, name) = key(&meta);
                index.remove(&namespace, &name);
            }
        }
        let len = index.len;
        drop(index);
        self.known.set(i64::try_from(len).unwrap_or(i64::MAX));
        if listed {
            self.listed.set();
        }
    }

    /// How many values of `namespace` wait for their installer, once the first list is in.
    pub fn pending(&self, namespace: &str) -> Option<usize> {
        if !self.listed.is_set() {
            return None;
        }
        Some(
            self.index
                .read_locked()
                .pending
                .get(namespace)
                .copied()
                .unwrap_or_default(),
        )
    }

    /// Whether a seal at `now` over the values `name` of `namespace` needs no write
    /// (rule `stored_values_are_sealed_again_without_a_write`).
    pub fn sealed_again_without_write(
        &self,
        namespace: &str,
        name: &str,
        now: Timestamp,
        creating: bool,
    ) -> bool {
        if !self.listed.is_set() {
            return false;
        }
        let index = self.index.read_locked();
        let Some(entry) = index.objects.get(namespace).and_then(|o| o.get(name)) else {
            return false;
        };
        let known = KnownValues {
            checked: index.checked.get(&entry.uid) == Some(&entry.generation),
            last_sealed: entry.last_sealed,
            owned: entry.owned,
        };
        sealed_again_without_write(&known, now, self.window, creating)
    }

    /// This process created the object `uid` at `generation`, or read it back and found
    /// its digest.
    pub fn checked(&self, uid: Option<&str>, generation: Option<i64>) {
        if let (Some(uid), Some(generation)) = (uid, generation) {
            self.index
                .write_locked()
                .checked
                .insert(uid.to_owned(), generation);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    use super::*;

    fn now() -> Timestamp {
        Timestamp::from_second(1_800_000_000).unwrap()
    }

    fn object(
        name: &str,
        uid: &str,
        generation: i64,
        pending: bool,
    ) -> PartialObjectMeta<PlanValues> {
        let annotations = BTreeMap::from([(
            providers_shared::plan_values::ANNOTATION_LAST_SEALED.to_owned(),
            now().to_string(),
        )]);
        let labels = BTreeMap::from([(LABEL_ADOPTED.to_owned(), (!pending).to_string())]);
        PartialObjectMeta {
            types: None,
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("org-a".into()),
                uid: Some(uid.into()),
                generation: Some(generation),
                annotations: Some(annotations),
                labels: Some(labels),
                ..ObjectMeta::default()
            },
            _phantom: Default::default(),
        }
    }

    fn listed(index: &StoredValues, objects: Vec<PartialObjectMeta<PlanValues>>) {
        index.on_event(watcher::Event::Init);
        for object in objects {
            index.on_event(watcher::Event::InitApply(object));
        }
        index.on_event(watcher::Event::InitDone);
    }

    #[test]
    fn nothing_is_answered_before_the_first_list() {
        let index = StoredValues::new(SignedDuration::from_secs(60), Gauge::default());
        index.checked(Some("u1"), Some(1));
        index.on_event(watcher::Event::Init);
        index.on_event(watcher::Event::InitApply(object("a", "u1", 1, true)));
        assert_eq!(index.pending("org-a"), None);
        assert!(!index.sealed_again_without_write("org-a", "a", now(), true));
        index.on_event(watcher::Event::InitDone);
        assert_eq!(index.pending("org-a"), Some(1));
        assert!(index.sealed_again_without_write("org-a", "a", now(), true));
    }

    #[test]
    fn pending_values_are_counted_per_namespace_through_every_event() {
        let index = StoredValues::new(SignedDuration::from_secs(60), Gauge::default());
        listed(
            &index,
            vec![object("a", "u1", 1, true), object("b", "u2", 1, false)],
        );
        assert_eq!(index.pending("org-a"), Some(1));
        assert_eq!(index.pending("org-b"), Some(0));
        index.on_event(watcher::Event::Apply(object("c", "u3", 1, true)));
        assert_eq!(index.pending("org-a"), Some(2));
        // Adopted: no longer pending; applied twice, counted once.
        index.on_event(watcher::Event::Apply(object("a", "u1", 1, false)));
        index.on_event(watcher::Event::Apply(object("a", "u1", 1, false)));
        assert_eq!(index.pending("org-a"), Some(1));
        index.on_event(watcher::Event::Delete(object("c", "u3", 1, true)));
        assert_eq!(index.pending("org-a"), Some(0));
        // A relist replaces the whole count.
        listed(
            &index,
            vec![object("d", "u4", 1, true), object("e", "u5", 1, true)],
        );
        assert_eq!(index.pending("org-a"), Some(2));
    }

    #[test]
    fn only_values_this_process_checked_and_unchanged_since_are_sealed_without_a_write() {
        let index = StoredValues::new(SignedDuration::from_secs(60), Gauge::default());
        listed(&index, vec![object("a", "u1", 1, true)]);
        assert!(
            !index.sealed_again_without_write("org-a", "a", now(), false),
            "listed, never checked"
        );
        index.checked(Some("u1"), Some(1));
        assert!(index.sealed_again_without_write("org-a", "a", now(), false));
        assert!(!index.sealed_again_without_write("org-a", "missing", now(), false));
        // Its spec changed (the generation rose): checked no more, even back at 1.
        index.on_event(watcher::Event::Apply(object("a", "u1", 2, true)));
        assert!(!index.sealed_again_without_write("org-a", "a", now(), false));
        index.on_event(watcher::Event::Apply(object("a", "u1", 1, true)));
        assert!(!index.sealed_again_without_write("org-a", "a", now(), false));
        // Deleted and made again under the name: another UID, not checked.
        index.checked(Some("u1"), Some(1));
        index.on_event(watcher::Event::Delete(object("a", "u1", 1, true)));
        index.on_event(watcher::Event::Apply(object("a", "u9", 1, true)));
        assert!(!index.sealed_again_without_write("org-a", "a", now(), false));
        // Owned: a create asks whether the owner still exists.
        let mut owned = object("o", "u7", 1, false);
        owned.metadata.owner_references = Some(vec![OwnerReference {
            uid: "w1".into(),
            ..OwnerReference::default()
        }]);
        index.checked(Some("u7"), Some(1));
        index.on_event(watcher::Event::Apply(owned));
        assert!(index.sealed_again_without_write("org-a", "o", now(), false));
        assert!(!index.sealed_again_without_write("org-a", "o", now(), true));
        // A mark older than the window is renewed.
        let later = now().checked_add(SignedDuration::from_secs(60)).unwrap();
        assert!(!index.sealed_again_without_write("org-a", "o", later, false));
    }
}
