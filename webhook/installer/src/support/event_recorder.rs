//! The installer's Events (events.k8s.io/v1) about Workspaces and Edges.
//!
//! A repeat of one Event (same object, type, reason, action and note) within six minutes
//! becomes a series on the first one. kube's `Recorder` leaves the note out of what makes
//! a repeat, so a different note under the same reason and action (a second writer's
//! drift, another Workspace's orphans swept) was counted on the first Event and never
//! shown. What is kept per series is its name, count and time (about a hundred bytes), not
//! the whole Event and its key, and expired memos are swept at most once a minute instead
//! of on every publish: at 1,000 Workspaces on one edge kube's `Recorder` held about 3 MB
//! of Events at the installer's peak (docs/performance.md), and swept all of them on each
//! publish.

use std::{
    collections::HashMap,
    hash::{BuildHasher, Hash, Hasher, RandomState},
    sync::Mutex,
    time::{Duration, Instant},
};

use k8s_openapi::{
    api::{core::v1::ObjectReference, events::v1 as events},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
    runtime::events::{Event, EventType},
};
use providers_runtime::locks::Locked;
use serde_json::json;

/// How long a published Event takes repeats into its series (kube's `Recorder` too).
const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);
/// How often expired memos are swept.
const SWEEP_EVERY: Duration = Duration::from_secs(60);
/// The most memos kept: past it, a new series takes the place of another (the other's next
/// repeat makes an Event of its own), so a burst of distinct Events cannot grow the
/// installer.
const MAX_MEMOS: usize = 50_000;
/// The longest name an object may have.
const MAX_NAME: usize = 253;

/// Publishes Events as one controller instance.
pub struct EventRecorder {
    client: Client,
    controller: String,
    instance: String,
    series: Mutex<Series>,
}

impl EventRecorder {
    pub fn new(client: Client, controller: &str, instance: &str) -> Self {
        Self {
            client,
            controller: controller.to_owned(),
            instance: instance.to_owned(),
            series: Mutex::new(Series::default()),
        }
    }

    /// Publishes `event` about `regarding`: a new Event, or the next of its series.
    pub async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let key = self.series().key(event, regarding);
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let api: Api<events::Event> = Api::namespaced(self.client.clone(), namespace);
        let now = Timestamp::now();
        let repeat = self.series().repeat(key, Instant::now());
        if let Some(Repeat { name, count }) = repeat {
            let patch = json!({
                "series": { "count": count, "lastObservedTime": MicroTime(now) }
            });
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    self.series().record(key, name, count, Instant::now());
                    return Ok(());
                }
                // Gone (the API server's Event TTL, or deleted): a new Event starts again.
                Err(kube::Error::Api(status)) if status.is_not_found() => {}
                Err(error) => return Err(error),
            }
        }
        let created = api
            .create(
                &PostParams::default(),
                &self.new_event(event, regarding, now),
            )
            .await?;
        if let Some(name) = created.metadata.name {
            self.series().record(key, name, 1, Instant::now());
        }
        Ok(())
    }

    fn series(&self) -> std::sync::MutexGuard<'_, Series> {
        self.series.locked()
    }

    fn new_event(
        &self,
        event: &Event,
        regarding: &ObjectReference,
        now: Timestamp,
    ) -> events::Event {
        events::Event {
            metadata: ObjectMeta {
                namespace: regarding.namespace.clone(),
                name: Some(event_name(
                    regarding.name.as_deref().unwrap_or(&self.controller),
                    now,
                )),
                ..ObjectMeta::default()
            },
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            note: event.note.clone(),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            related: event.secondary.clone(),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            type_: Some(
                match event.type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .to_owned(),
            ),
            ..events::Event::default()
        }
    }
}

/// The next Event of a series: the first Event's name and the count it reaches.
#[derive(Debug, PartialEq, Eq)]
struct Repeat {
    name: String,
    count: i32,
}

/// What is remembered of the Events published within the series window, by a hash of
/// what makes two Events one series (a collision makes a series of two different Events
/// of the same object, about once in 2^64 pairs).
struct Series {
    hasher: RandomState,
    memos: HashMap<u64, Memo>,
    swept_at: Option<Instant>,
}

struct Memo {
    name: String,
    count: i32,
    at: Instant,
}

impl Default for Series {
    fn default() -> Self {
        Self {
            hasher: RandomState::new(),
            memos: HashMap::new(),
            swept_at: None,
        }
    }
}

/// An Event's name: the object's and the time in hex (as kube's `Recorder` names them),
/// with the object's name cut so that the whole is a valid name: a Workspace's name may be
/// 253 characters, and an Event refused for its name would be lost.
fn event_name(object: &str, now: Timestamp) -> String {
    let suffix = format!(".{:x}", now.as_nanosecond());
    let mut room = MAX_NAME.saturating_sub(suffix.len()).min(object.len());
    while !object.is_char_boundary(room) {
        room -= 1;
    }
    // A name's parts start and end with a letter or digit.
    let prefix = object[..room].trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
    format!("{prefix}{suffix}")
}

impl Series {
    fn key(&self, event: &Event, regarding: &ObjectReference) -> u64 {
        let mut hasher = self.hasher.build_hasher();
        matches!(event.type_, EventType::Warning).hash(&mut hasher);
        event.reason.hash(&mut hasher);
        event.action.hash(&mut hasher);
        event.note.hash(&mut hasher);
        for part in [
            &regarding.api_version,
            &regarding.kind,
            &regarding.namespace,
            &regarding.name,
            &regarding.uid,
        ] {
            part.hash(&mut hasher);
        }
        if let Some(related) = &event.secondary {
            for part in [
                &related.api_version,
                &related.kind,
                &related.namespace,
                &related.name,
                &related.uid,
            ] {
                part.hash(&mut hasher);
            }
        }
        hasher.finish()
    }

    /// The series `key` continues at `now`, if its last Event is within the window.
    fn repeat(&mut self, key: u64, now: Instant) -> Option<Repeat> {
        self.forget_expired(now);
        self.memos
            .get(&key)
            .filter(|memo| now.duration_since(memo.at) < SERIES_WINDOW)
            .map(|memo| Repeat {
                name: memo.name.clone(),
                count: memo.count.saturating_add(1),
            })
    }

    /// Remembers that the Event `name` of series `key` reached `count` at `now`.
    fn record(&mut self, key: u64, name: String, count: i32, now: Instant) {
        if self.memos.len() >= MAX_MEMOS
            && !self.memos.contains_key(&key)
            && let Some(other) = self.memos.keys().next().copied()
        {
            self.memos.remove(&other);
        }
        self.memos.insert(
            key,
            Memo {
                name,
                count,
                at: now,
            },
        );
    }

    fn forget_expired(&mut self, now: Instant) {
        if self
            .swept_at
            .is_some_and(|at| now.duration_since(at) < SWEEP_EVERY)
        {
            return;
        }
        self.swept_at = Some(now);
        self.memos
            .retain(|_, memo| now.duration_since(memo.at) < SERIES_WINDOW);
        self.memos.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(reason: &str, note: &str) -> Event {
        Event {
            type_: EventType::Normal,
            reason: reason.into(),
            note: Some(note.into()),
            action: "Reconcile".into(),
            secondary: None,
        }
    }

    fn workspace(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("providers.platform.dev/v1alpha1".into()),
            kind: Some("Workspace".into()),
            namespace: Some("team-a".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            ..ObjectReference::default()
        }
    }

    #[test]
    fn a_repeat_within_the_window_continues_the_series() {
        let mut series = Series::default();
        let start = Instant::now();
        let key = series.key(&event("Waiting", "edge down"), &workspace("a"));
        assert_eq!(series.repeat(key, start), None);
        series.record(key, "a.17".into(), 1, start);
        let later = start + Duration::from_secs(30);
        assert_eq!(
            series.repeat(key, later),
            Some(Repeat {
                name: "a.17".into(),
                count: 2
            })
        );
        series.record(key, "a.17".into(), 2, later);
        assert_eq!(series.repeat(key, later).map(|r| r.count), Some(3));
    }

    #[test]
    fn another_object_reason_action_type_or_note_is_another_series() {
        let series = Series::default();
        let key = series.key(&event("Waiting", "edge down"), &workspace("a"));
        assert_ne!(
            key,
            series.key(&event("Waiting", "edge down"), &workspace("b"))
        );
        assert_ne!(
            key,
            series.key(&event("Installed", "edge down"), &workspace("a"))
        );
        let mut other_action = event("Waiting", "edge down");
        other_action.action = "Attempt2".into();
        assert_ne!(key, series.key(&other_action, &workspace("a")));
        let mut warning = event("Waiting", "edge down");
        warning.type_ = EventType::Warning;
        assert_ne!(key, series.key(&warning, &workspace("a")));
        // Another note (a second writer's drift) is an Event of its own.
        assert_ne!(
            key,
            series.key(&event("Waiting", "edge slow"), &workspace("a"))
        );
        assert_eq!(
            key,
            series.key(&event("Waiting", "edge down"), &workspace("a"))
        );
    }

    #[test]
    fn a_repeat_after_the_window_starts_a_new_event_and_old_memos_are_swept() {
        let mut series = Series::default();
        let start = Instant::now();
        let key = series.key(&event("Waiting", "edge down"), &workspace("a"));
        series.repeat(key, start);
        series.record(key, "a.17".into(), 1, start);
        let after = start + SERIES_WINDOW + Duration::from_secs(1);
        assert_eq!(series.repeat(key, after), None);
        assert!(series.memos.is_empty(), "the expired memo is swept");
    }

    #[test]
    fn memos_stop_growing_at_their_bound_and_a_new_series_is_still_remembered() {
        let mut series = Series::default();
        let now = Instant::now();
        for key in 0..MAX_MEMOS as u64 + 10 {
            series.record(key, format!("e.{key}"), 1, now);
        }
        assert_eq!(series.memos.len(), MAX_MEMOS);
        let newest = MAX_MEMOS as u64 + 9;
        assert!(
            series.memos.contains_key(&newest),
            "the newest series has its memo"
        );
        // A series already remembered counts on, and takes no other's place.
        series.record(newest, format!("e.{newest}"), 2, now);
        assert_eq!(series.memos[&newest].count, 2);
        assert_eq!(series.memos.len(), MAX_MEMOS);
    }

    #[test]
    fn an_events_name_is_valid_whatever_the_objects_name() {
        let now = Timestamp::from_second(1_796_600_000).expect("a time");
        let short = event_name("a1", now);
        assert!(short.starts_with("a1.") && short.len() < 30, "{short}");
        // A Workspace's name may be 253 characters, with dots and dashes: cut where one
        // of them would end the name's first part.
        let room = MAX_NAME - ".18eece2e63778000".len();
        for name in [
            "w".repeat(253),
            format!("{}-x{}", "w".repeat(room - 1), "w".repeat(253 - room - 1)),
            format!("{}.x{}", "w".repeat(room - 1), "w".repeat(253 - room - 1)),
        ] {
            assert_eq!(name.len(), 253);
            let event = event_name(&name, now);
            assert!(event.len() <= MAX_NAME, "{} characters", event.len());
            let parts_ok = event.split('.').all(|part| {
                !part.is_empty()
                    && part.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && part.ends_with(|c: char| c.is_ascii_alphanumeric())
            });
            assert!(parts_ok, "{event}");
        }
    }
}
