//! What the installer's own writes to an edge said, kept over the watch caches until they
//! show them: a create or patch answered with the object, a deletion with its UID gone.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use k8s_openapi::{api::batch::v1::Job, apimachinery::pkg::apis::meta::v1::ObjectMeta};
use kube::Resource;
use providers_shared::installer::{JobState, Kind, ObjectState, job_state, state_of};

use super::cached::Cached;
use providers_runtime::{locks::Locked, own_writes::OwnWrites};

/// How long the installer trusts what its own write to an edge returned over a watch
/// cache that has not seen it yet. Far longer than a watch lags; short enough that a cache
/// that never sees the object (one without the installer's label) is asked again soon.
pub(super) const OWN_WRITES_TTL: Duration = Duration::from_secs(60);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Key {
    pub(super) kind: Cached,
    pub(super) namespace: String,
    pub(super) name: String,
}

/// What a write of the installer's own said about an object.
#[derive(Clone, Debug)]
pub(super) enum EdgeWrite {
    Present(Box<WrittenObject>),
    Gone { uid: String },
}

#[derive(Clone, Debug)]
pub(super) enum WrittenObject {
    Object(ObjectState),
    Job(JobState),
}

impl EdgeWrite {
    /// Whether the cache, holding the object with `cached_uid`, shows this write: the
    /// object written is there, or the one deleted is not.
    fn shown(&self, cached_uid: Option<&str>) -> bool {
        match self {
            EdgeWrite::Present(seen) => {
                let uid = match seen.as_ref() {
                    WrittenObject::Object(o) => o.uid.as_str(),
                    WrittenObject::Job(j) => j.object.uid.as_str(),
                };
                cached_uid == Some(uid)
            }
            EdgeWrite::Gone { uid } => cached_uid != Some(uid.as_str()),
        }
    }
}

/// The installer's own writes to an edge, by object, until the watches show them.
pub(super) type EdgeWrites = OwnWrites<Key, EdgeWrite>;

/// The installer's own writes to one edge, until its watches show them. Cloning shares
/// them.
#[derive(Clone)]
pub(super) struct OwnEdgeWrites(Arc<Mutex<EdgeWrites>>);

impl OwnEdgeWrites {
    pub(super) fn new() -> Self {
        Self(Arc::new(Mutex::new(EdgeWrites::new(OWN_WRITES_TTL))))
    }

    /// How many writes are remembered.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.0.locked().len()
    }

    /// Whether `job` is exactly what the installer's own last write of it returned.
    pub(super) fn is_own_job(&self, job: &Job) -> bool {
        let key = Key {
            kind: Cached::Attempt(Kind::Job),
            namespace: job.metadata.namespace.clone().unwrap_or_default(),
            name: job.metadata.name.clone().unwrap_or_default(),
        };
        let own = self.0.locked();
        matches!(
            own.last(&key),
            Some(EdgeWrite::Present(seen)) if matches!(
                seen.as_ref(),
                WrittenObject::Job(mine) if Some(&mine.object.resource_version) == job.metadata.resource_version.as_ref()
                    && Some(&mine.object.uid) == job.metadata.uid.as_ref()
            )
        )
    }

    /// The installer created or changed `object` (the API server's answer).
    pub(super) fn wrote_object<K: Resource>(&self, kind: Cached, object: &K) {
        let seen = WrittenObject::Object(state_of(object));
        self.remember(kind, object.meta(), EdgeWrite::Present(Box::new(seen)));
    }

    /// The installer created or changed a Job (the API server's answer).
    pub(super) fn wrote_job(&self, job: &Job) {
        let seen = WrittenObject::Job(job_state(job));
        self.remember(
            Cached::Attempt(Kind::Job),
            &job.metadata,
            EdgeWrite::Present(Box::new(seen)),
        );
    }

    /// The installer deleted the object with `uid` (or found it gone).
    pub(super) fn deleted(&self, kind: Cached, namespace: &str, name: &str, uid: &str) {
        self.0.locked().insert(
            Key {
                kind,
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            },
            EdgeWrite::Gone {
                uid: uid.to_owned(),
            },
            Instant::now(),
        );
    }

    fn remember(&self, kind: Cached, meta: &ObjectMeta, own: EdgeWrite) {
        let key = Key {
            kind,
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
        };
        self.0.locked().insert(key, own, Instant::now());
    }

    /// What the installer's own writes say of an object the cache holds with
    /// `cached_uid`; forgets what the cache has caught up with, or what is too old.
    pub(super) fn says(
        &self,
        kind: Cached,
        namespace: &str,
        name: &str,
        cached_uid: Option<&str>,
    ) -> OwnWriteSays {
        let namespace = match kind {
            Cached::Namespace => String::new(),
            Cached::Attempt(_) => namespace.to_owned(),
        };
        let key = Key {
            kind,
            namespace,
            name: name.to_owned(),
        };
        match self
            .0
            .locked()
            .trusted(&key, |own| own.shown(cached_uid), Instant::now())
        {
            Some(EdgeWrite::Present(seen)) => OwnWriteSays::Present(seen.clone()),
            Some(EdgeWrite::Gone { .. }) => OwnWriteSays::Gone,
            None => OwnWriteSays::Cache,
        }
    }
}

/// What the installer's own writes say of an object, over the cache.
pub(super) enum OwnWriteSays {
    Present(Box<WrittenObject>),
    Gone,
    Cache,
}
