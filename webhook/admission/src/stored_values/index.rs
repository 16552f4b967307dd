//! The index itself: every stored object's compact metadata by namespace and name, the
//! pending count per namespace, and this process's own creates until the watch shows
//! them.

use std::{
    collections::{HashMap, VecDeque},
    time::{Duration, Instant},
};

use k8s_openapi::jiff::Timestamp;
use providers_shared::plan_values::{LABEL_ADOPTED, reseal::last_marked};

/// How long an object this process created is counted before its watch event arrives.
pub(super) const UNSEEN_FOR: Duration = Duration::from_secs(30);

/// One stored object, as its metadata shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) uid: String,
    pub(super) generation: i64,
    pub(super) marked: Option<Timestamp>,
    /// Not yet taken into its Workspace's ownership by the installer.
    pub(super) pending: bool,
    pub(super) owned: bool,
    /// The generation and digest this process created, or read back and found.
    pub(super) checked: Option<(i64, String)>,
    /// Made by this process and not shown by the watch yet.
    pub(super) unseen: bool,
}

impl Entry {
    pub(super) fn of(meta: &kube::api::ObjectMeta) -> Self {
        Self {
            uid: meta.uid.clone().unwrap_or_default(),
            generation: meta.generation.unwrap_or_default(),
            marked: last_marked(meta),
            pending: meta
                .labels
                .as_ref()
                .and_then(|labels| labels.get(LABEL_ADOPTED))
                .is_some_and(|adopted| adopted == "false"),
            owned: meta
                .owner_references
                .as_ref()
                .is_some_and(|owners| !owners.is_empty()),
            checked: None,
            unseen: false,
        }
    }

    /// What this process checked of the same object, unchanged since, carried over.
    pub(super) fn keeping_check_of(mut self, old: Option<&Entry>) -> Self {
        if let Some(old) = old
            && old.uid == self.uid
            && old
                .checked
                .as_ref()
                .is_some_and(|(g, _)| *g == self.generation)
        {
            self.checked = old.checked.clone();
        }
        self
    }
}

/// A namespace and a name.
pub(super) type Key = (String, String);

#[derive(Default)]
pub(super) struct Index {
    /// Objects held, in every namespace.
    pub(super) len: usize,
    /// Namespace, then name.
    pub(super) objects: HashMap<String, HashMap<String, Entry>>,
    /// Pending objects per namespace.
    pub(super) pending: HashMap<String, usize>,
    /// Objects this process created, oldest first, until the watch shows them.
    pub(super) unseen: VecDeque<(Key, String, Instant)>,
}

impl Index {
    pub(super) fn get(&self, namespace: &str, name: &str) -> Option<&Entry> {
        self.objects.get(namespace).and_then(|o| o.get(name))
    }

    pub(super) fn insert(&mut self, (namespace, name): Key, entry: Entry) {
        let pending = entry.pending;
        let old = self
            .objects
            .entry(namespace.clone())
            .or_default()
            .insert(name, entry);
        match &old {
            None => self.len += 1,
            Some(old) if old.pending => self.uncount(&namespace),
            Some(_) => {}
        }
        if pending {
            *self.pending.entry(namespace).or_default() += 1;
        }
    }

    pub(super) fn remove(&mut self, namespace: &str, name: &str) {
        let Some(objects) = self.objects.get_mut(namespace) else {
            return;
        };
        let Some(old) = objects.remove(name) else {
            return;
        };
        if objects.is_empty() {
            self.objects.remove(namespace);
        }
        self.len -= 1;
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

    /// Objects this process created that no watch event showed in time are dropped: they
    /// were deleted before the watch saw them, or the create's answer came after the
    /// deletion's event.
    pub(super) fn forget_unseen(&mut self, now: Instant) {
        while let Some(((namespace, name), uid, at)) = self.unseen.front().cloned() {
            if now.duration_since(at) < UNSEEN_FOR {
                break;
            }
            self.unseen.pop_front();
            if self
                .get(&namespace, &name)
                .is_some_and(|entry| entry.unseen && entry.uid == uid)
            {
                self.remove(&namespace, &name);
            }
        }
    }

    /// A whole list replaces what was known, keeping what this process checked of the
    /// objects still there, and its own creates the list may not show yet.
    pub(super) fn replace(&mut self, listed: Vec<(Key, Entry)>) {
        let mut old = std::mem::take(&mut self.objects);
        self.pending.clear();
        self.len = 0;
        for (key, entry) in listed {
            let kept = old.get_mut(&key.0).and_then(|o| o.remove(&key.1));
            let entry = entry.keeping_check_of(kept.as_ref());
            self.insert(key, entry);
        }
        for (namespace, objects) in old {
            for (name, entry) in objects {
                if entry.unseen && self.get(&namespace, &name).is_none() {
                    self.insert((namespace.clone(), name), entry);
                }
            }
        }
    }
}
