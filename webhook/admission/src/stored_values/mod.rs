//! What the webhook knows of the stored PlanValues without asking the hub: a metadata
//! watch of every PlanValues object, kept compact (no managed fields, no values), with the
//! objects this process created or read back and checked.
//!
//! It answers the two questions every seal of stored values asked the API server before:
//! how many values of a namespace wait for their installer (a list per seal), and whether
//! the values of this name are there, unchanged and marked sealed a moment ago (a create,
//! a mark and a read per seal of values stored already). It answers only while it is
//! current: from the end of a list until the watch fails (then it lists again); else the
//! webhook asks the API server as before. Values this process creates are counted at
//! once, before the watch shows them. It can lag the hub by a watch event: a count a few
//! objects short admits a few more than `MAX_PENDING` (the API server is asked near the
//! bound), and values deleted a moment ago are sealed over, as a seal in flight during
//! the deletion would be; the installer checks the values' digest before anything runs.

mod index;

use std::{
    sync::{
        Arc, RwLock,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use futures::StreamExt;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::{Api, Client, core::PartialObjectMeta, runtime::watcher};
use prometheus_client::metrics::gauge::Gauge;
use providers_runtime::locks::ReadWriteLocked;
use providers_shared::{
    api::PlanValues,
    plan_values::reseal::{KnownValues, sealed_again_without_write},
};

/// The longest wait before listing again after the watch failed.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

use index::{Entry, Index, Key};

/// The webhook's index of stored PlanValues. Cloning shares it.
#[derive(Clone)]
pub struct StoredValues {
    index: Arc<RwLock<Index>>,
    /// Listed, and the watch has not failed since.
    current: Arc<AtomicBool>,
    window: SignedDuration,
    gauges: IndexGauges,
}

/// What the index shows on `/metrics`.
#[derive(Clone, Debug, Default)]
pub struct IndexGauges {
    /// `providers_webhook_stored_values_known`: objects held.
    pub known: Gauge,
    /// `providers_webhook_stored_values_current`: 1 while the index answers.
    pub current: Gauge,
}

impl StoredValues {
    /// An index fed by nothing yet; `window` is how long after its mark values are sealed
    /// again without a new one.
    pub fn new(window: SignedDuration, gauges: IndexGauges) -> Self {
        Self {
            index: Arc::default(),
            current: Arc::default(),
            window,
            gauges,
        }
    }

    /// The mark window this webhook writes beside each mark.
    pub fn window(&self) -> SignedDuration {
        self.window
    }

    /// Follows every PlanValues object's metadata on the hub, for as long as the process
    /// runs. A failed watch lists again, after a backoff; the index does not answer
    /// meanwhile.
    pub fn watch(&self, client: Client) {
        let api = Api::<PartialObjectMeta<PlanValues>>::all(client);
        let index = self.clone();
        tokio::spawn(async move {
            let mut backoff = Duration::from_secs(1);
            loop {
                let mut listing = None;
                let stream = watcher::watcher(api.clone(), watcher::Config::default());
                let mut stream = std::pin::pin!(stream);
                while let Some(event) = stream.next().await {
                    match event {
                        Ok(event) => {
                            if index.on_event(&mut listing, event) {
                                backoff = Duration::from_secs(1);
                            }
                        }
                        Err(error) => {
                            tracing::warn!(%error, retry_in = ?backoff, "watching PlanValues; listing again");
                            break;
                        }
                    }
                }
                index.set_current(false);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        });
    }

    fn set_current(&self, current: bool) {
        self.current.store(current, Ordering::Release);
        self.gauges.current.set(i64::from(current));
    }

    fn is_current(&self) -> bool {
        self.current.load(Ordering::Acquire)
    }

    /// Takes one watch event in; a list in progress is gathered in `listing`, outside the
    /// lock. Whether the event ended a list.
    fn on_event(
        &self,
        listing: &mut Option<Vec<(Key, Entry)>>,
        event: watcher::Event<PartialObjectMeta<PlanValues>>,
    ) -> bool {
        let key = |meta: &PartialObjectMeta<PlanValues>| {
            (
                meta.metadata.namespace.clone().unwrap_or_default(),
                meta.metadata.name.clone().unwrap_or_default(),
            )
        };
        match event {
            watcher::Event::Init => {
                self.set_current(false);
                *listing = Some(Vec::new());
                return false;
            }
            watcher::Event::InitApply(meta) => {
                if let Some(listing) = listing.as_mut() {
                    listing.push((key(&meta), Entry::of(&meta.metadata)));
                }
                return false;
            }
            _ => {}
        }
        let mut index = self.index.write_locked();
        let listed = match event {
            watcher::Event::InitDone => {
                index.replace(listing.take().unwrap_or_default());
                true
            }
            watcher::Event::Apply(meta) => {
                let key = key(&meta);
                let entry = Entry::of(&meta.metadata).keeping_check_of(index.get(&key.0, &key.1));
                index.insert(key, entry);
                false
            }
            watcher::Event::Delete(meta) => {
                let (namespace, name) = key(&meta);
                index.remove(&namespace, &name);
                false
            }
            watcher::Event::Init | watcher::Event::InitApply(_) => false,
        };
        index.forget_unseen(Instant::now());
        let len = index.len;
        drop(index);
        self.gauges
            .known
            .set(i64::try_from(len).unwrap_or(i64::MAX));
        if listed {
            self.set_current(true);
        }
        listed
    }

    /// How many values of `namespace` wait for their installer, while the index is
    /// current.
    pub fn pending(&self, namespace: &str) -> Option<usize> {
        if !self.is_current() {
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

    /// Whether a seal at `now` over the values `name` of `namespace`, whose digest is
    /// `digest`, needs no write (rule `stored_values_are_sealed_again_without_a_write`).
    pub fn sealed_again_without_write(
        &self,
        namespace: &str,
        name: &str,
        digest: &str,
        now: Timestamp,
        creating: bool,
    ) -> bool {
        if !self.is_current() {
            return false;
        }
        let index = self.index.read_locked();
        let Some(entry) = index.get(namespace, name) else {
            return false;
        };
        let known = KnownValues {
            // Shown by the watch, unchanged since this process checked it, for this digest.
            checked: !entry.unseen
                && entry.checked.as_ref().is_some_and(|(generation, checked)| {
                    *generation == entry.generation && checked == digest
                }),
            last_sealed: entry.marked,
            owned: entry.owned,
        };
        sealed_again_without_write(&known, now, self.window, creating)
    }

    /// This process created `object`, holding `digest`: counted from now on.
    pub fn created(&self, object: &PlanValues, digest: &str) {
        if !self.is_current() {
            return;
        }
        let meta = &object.metadata;
        let key = (
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        );
        let mut entry = Entry::of(meta);
        entry.checked = Some((entry.generation, digest.to_owned()));
        let mut index = self.index.write_locked();
        if let Some(seen) = index
            .objects
            .get_mut(&key.0)
            .and_then(|o| o.get_mut(&key.1))
            && seen.uid == entry.uid
        {
            // The watch showed it first: only the check is news.
            if seen.generation == entry.generation {
                seen.checked = entry.checked;
            }
            return;
        }
        entry.unseen = true;
        let now = Instant::now();
        index
            .unseen
            .push_back((key.clone(), entry.uid.clone(), now));
        index.insert(key, entry);
        index.forget_unseen(now);
    }

    /// This process read `object` back and found `digest` in it.
    pub fn checked(&self, object: &PlanValues, digest: &str) {
        let meta = &object.metadata;
        let (Some(namespace), Some(name), Some(uid), Some(generation)) = (
            meta.namespace.as_deref(),
            meta.name.as_deref(),
            meta.uid.as_deref(),
            meta.generation,
        ) else {
            return;
        };
        let mut index = self.index.write_locked();
        if let Some(entry) = index
            .objects
            .get_mut(namespace)
            .and_then(|o| o.get_mut(name))
            && entry.uid == uid
            && entry.generation == generation
        {
            entry.checked = Some((generation, digest.to_owned()));
        }
    }
}

// The index's answers through the watch's events.
#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
    use providers_shared::api::PlanValuesSpec;

    use providers_shared::plan_values::LABEL_ADOPTED;

    use super::{index::UNSEEN_FOR, *};

    const DIGEST: &str = "sha256:aa";

    fn now() -> Timestamp {
        Timestamp::from_second(1_800_000_000).unwrap()
    }

    fn meta(name: &str, uid: &str, generation: i64, pending: bool) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some("org-a".into()),
            uid: Some(uid.into()),
            generation: Some(generation),
            annotations: Some(BTreeMap::from([(
                providers_shared::plan_values::ANNOTATION_LAST_SEALED.to_owned(),
                now().to_string(),
            )])),
            labels: Some(BTreeMap::from([(
                LABEL_ADOPTED.to_owned(),
                (!pending).to_string(),
            )])),
            ..ObjectMeta::default()
        }
    }

    fn object(
        name: &str,
        uid: &str,
        generation: i64,
        pending: bool,
    ) -> PartialObjectMeta<PlanValues> {
        PartialObjectMeta {
            types: None,
            metadata: meta(name, uid, generation, pending),
            _phantom: Default::default(),
        }
    }

    fn full(name: &str, uid: &str, generation: i64) -> PlanValues {
        PlanValues {
            metadata: meta(name, uid, generation, true),
            spec: PlanValuesSpec {
                digest: DIGEST.into(),
                size: 2,
                data: String::new(),
            },
        }
    }

    fn index() -> StoredValues {
        StoredValues::new(SignedDuration::from_secs(60), IndexGauges::default())
    }

    fn event(index: &StoredValues, event: watcher::Event<PartialObjectMeta<PlanValues>>) {
        index.on_event(&mut None, event);
    }

    fn listed(index: &StoredValues, objects: Vec<PartialObjectMeta<PlanValues>>) {
        let mut listing = None;
        index.on_event(&mut listing, watcher::Event::Init);
        for object in objects {
            index.on_event(&mut listing, watcher::Event::InitApply(object));
        }
        assert!(index.on_event(&mut listing, watcher::Event::InitDone));
    }

    fn skips(index: &StoredValues, name: &str) -> bool {
        index.sealed_again_without_write("org-a", name, DIGEST, now(), false)
    }

    #[test]
    fn nothing_is_answered_unless_listed_and_current() {
        let index = index();
        let mut listing = None;
        index.on_event(&mut listing, watcher::Event::Init);
        index.on_event(
            &mut listing,
            watcher::Event::InitApply(object("a", "u1", 1, true)),
        );
        assert_eq!(index.pending("org-a"), None);
        index.on_event(&mut listing, watcher::Event::InitDone);
        assert_eq!(index.pending("org-a"), Some(1));
        assert_eq!(index.gauges.current.get(), 1);
        index.checked(&full("a", "u1", 1), DIGEST);
        assert!(skips(&index, "a"));
        // The watch failed: a new list starts, and until it ends nothing is answered.
        index.set_current(false);
        assert_eq!(index.pending("org-a"), None);
        assert!(!skips(&index, "a"));
        listed(&index, vec![object("a", "u1", 1, true)]);
        assert!(
            skips(&index, "a"),
            "a relist keeps what was checked of the same object"
        );
    }

    #[test]
    fn pending_values_are_counted_per_namespace_through_every_event() {
        let index = index();
        listed(
            &index,
            vec![object("a", "u1", 1, true), object("b", "u2", 1, false)],
        );
        assert_eq!(index.pending("org-a"), Some(1));
        assert_eq!(index.pending("org-b"), Some(0));
        event(&index, watcher::Event::Apply(object("c", "u3", 1, true)));
        assert_eq!(index.pending("org-a"), Some(2));
        // Adopted: no longer pending; applied twice, counted once.
        event(&index, watcher::Event::Apply(object("a", "u1", 1, false)));
        event(&index, watcher::Event::Apply(object("a", "u1", 1, false)));
        assert_eq!(index.pending("org-a"), Some(1));
        event(&index, watcher::Event::Delete(object("c", "u3", 1, true)));
        assert_eq!(index.pending("org-a"), Some(0));
        // A relist replaces the whole count.
        listed(
            &index,
            vec![object("d", "u4", 1, true), object("e", "u5", 1, true)],
        );
        assert_eq!(index.pending("org-a"), Some(2));
        assert_eq!(index.gauges.known.get(), 2);
    }

    #[test]
    fn values_this_process_creates_count_at_once_and_are_sealed_over_once_the_watch_shows_them() {
        let index = index();
        listed(&index, vec![]);
        index.created(&full("a", "u1", 1), DIGEST);
        assert_eq!(
            index.pending("org-a"),
            Some(1),
            "counted before the watch shows it"
        );
        assert!(!skips(&index, "a"), "not shown by the watch yet");
        event(&index, watcher::Event::Apply(object("a", "u1", 1, true)));
        assert_eq!(index.pending("org-a"), Some(1), "counted once");
        assert!(skips(&index, "a"));
        assert!(
            !index.sealed_again_without_write("org-a", "a", "sha256:bb", now(), false),
            "another digest"
        );
        // The watch showed it first: the create's answer adds only the check.
        event(&index, watcher::Event::Apply(object("b", "u2", 1, true)));
        index.created(&full("b", "u2", 1), DIGEST);
        assert!(skips(&index, "b"));
        assert_eq!(index.pending("org-a"), Some(2));
    }

    #[test]
    fn a_create_the_watch_never_shows_is_forgotten() {
        let index = index();
        listed(&index, vec![]);
        index.created(&full("a", "u1", 1), DIGEST);
        index
            .index
            .write_locked()
            .forget_unseen(Instant::now() + UNSEEN_FOR);
        assert_eq!(index.pending("org-a"), Some(0));
        assert_eq!(index.index.read_locked().len, 0);
    }

    #[test]
    fn only_values_checked_and_unchanged_since_are_sealed_without_a_write() {
        let index = index();
        listed(&index, vec![object("a", "u1", 1, true)]);
        assert!(!skips(&index, "a"), "listed, never checked");
        index.checked(&full("a", "u1", 1), DIGEST);
        assert!(skips(&index, "a"));
        assert!(!skips(&index, "missing"));
        // Its spec changed (the generation rose): checked no more, even back at 1.
        event(&index, watcher::Event::Apply(object("a", "u1", 2, true)));
        assert!(!skips(&index, "a"));
        event(&index, watcher::Event::Apply(object("a", "u1", 1, true)));
        assert!(!skips(&index, "a"));
        // A read-back of another generation than the watch shows checks nothing.
        index.checked(&full("a", "u1", 7), DIGEST);
        assert!(!skips(&index, "a"));
        // Deleted and made again under the name: another UID, not checked.
        index.checked(&full("a", "u1", 1), DIGEST);
        event(&index, watcher::Event::Delete(object("a", "u1", 1, true)));
        event(&index, watcher::Event::Apply(object("a", "u9", 1, true)));
        assert!(!skips(&index, "a"));
        // Owned: a create asks whether the owner still exists.
        let mut owned = object("o", "u7", 1, false);
        owned.metadata.owner_references = Some(vec![OwnerReference {
            uid: "w1".into(),
            ..OwnerReference::default()
        }]);
        event(&index, watcher::Event::Apply(owned));
        index.checked(&full("o", "u7", 1), DIGEST);
        assert!(skips(&index, "o"));
        assert!(!index.sealed_again_without_write("org-a", "o", DIGEST, now(), true));
        // A mark older than the window is renewed.
        let later = now().checked_add(SignedDuration::from_secs(60)).unwrap();
        assert!(!index.sealed_again_without_write("org-a", "o", DIGEST, later, false));
    }
}
