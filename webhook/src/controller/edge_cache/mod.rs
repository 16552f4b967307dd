//! What the installer knows of one edge without asking it: watch caches of the objects it
//! makes there (selected by its `managed-by` label) and of Helm's release records
//! (metadata only), plus what its own writes did since, until the watches catch up.
//!
//! Decisions read from here, so a reconcile costs the edge's API server nothing but the
//! writes it decides. The caches can lag; that is safe because every write is guarded
//! (creates fail with AlreadyExists, deletions carry the observed UID, patches test it),
//! and a create that finds the object already there reads it once, live, to learn whose
//! it is (`learned`).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use k8s_openapi::{api::batch::v1::Job, apimachinery::pkg::apis::meta::v1::ObjectMeta};
use kube::{
    Client, Resource,
    api::{ApiResource, GroupVersionKind},
    discovery::Scope,
};
use providers_shared::installer::{
    JobState, Kind, ObjectSeen, ObjectState, ReleaseRevision, job_state, newest_revision,
    release_objects::ReleaseObject, state_of,
};

mod compact_meta;
mod compact_store;
mod follow;
mod metadata_decode;
mod metadata_watch;
mod namespaced;
mod packed_pairs;
mod stream_pool;
mod sync;
mod wake;
pub mod watches;

pub use stream_pool::{DEFAULT_STREAMS_PER_CONNECTION, StreamPool};

use compact_meta::{CompactJob, CompactMeta};
use compact_store::CompactStore;
use namespaced::{NamespaceWatches, is_helm_record};
pub use sync::SYNC_TIMEOUT;
use sync::WatchesListed;
use wake::ReleaseFollowers;

use super::{own_writes::OwnWrites, unreachable::Reachability};
use crate::locks::Locked;

/// How long the installer trusts what its own write to an edge returned over a watch
/// cache that has not seen it yet. Far longer than a watch lags; short enough that a cache
/// that never sees the object (one without the installer's label) is asked again soon.
const OWN_WRITES_TTL: Duration = Duration::from_secs(60);

/// The kinds of edge objects a decision reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cached {
    Namespace,
    Attempt(Kind),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    kind: Cached,
    namespace: String,
    name: String,
}

/// What a write of the installer's own said about an object.
#[derive(Clone, Debug)]
enum EdgeWrite {
    Present(Box<WrittenObject>),
    Gone { uid: String },
}

#[derive(Clone, Debug)]
enum WrittenObject {
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
type EdgeWrites = OwnWrites<Key, EdgeWrite>;

/// The caches of one edge. Cloning shares them.
#[derive(Clone)]
pub struct EdgeCache {
    namespaces: CompactStore<CompactMeta>,
    service_accounts: CompactStore<CompactMeta>,
    roles: CompactStore<CompactMeta>,
    role_bindings: CompactStore<CompactMeta>,
    /// The Secrets of each namespace of the installer's (Helm's records among them).
    namespaced: Arc<NamespaceWatches>,
    jobs: CompactStore<CompactJob>,
    own: Arc<Mutex<EdgeWrites>>,
    /// The installed releases watched for drift: `(namespace, release)` → the Workspace
    /// (`<org>/<name>`) a change of their records wakes.
    followed: ReleaseFollowers,
    /// Why the edge's API is thought unreachable: a watch failed or a write got no
    /// answer, and nothing has answered since. The caches then hold what was last seen,
    /// which no decision should act on.
    unreachable: Reachability,
    /// How many of the watches have listed once.
    listed: Arc<WatchesListed>,
    /// The API resource of each `(apiVersion, kind)` a release made, found once by
    /// discovery; `None` for a kind not served or not namespaced (not followed).
    kinds: Arc<Mutex<HashMap<KindKey, FoundKind>>>,
    /// The objects Helm recorded for each installed revision, by its record's UID: read
    /// once per record.
    manifests: Arc<Mutex<HashMap<String, Arc<Vec<ReleaseObject>>>>>,
}

/// `(apiVersion, kind)` of the objects a release made.
type KindKey = (String, String);
/// A kind's namespaced API resource as discovery found it (`None`: not served, or not
/// namespaced), and when.
type FoundKind = (Option<ApiResource>, Instant);

/// The most objects of installed revisions kept in memory, all revisions together (past
/// it, they are read again).
const MAX_MANIFEST_OBJECTS: usize = 200_000;
/// How long a kind the edge does not serve is not asked about again.
const KIND_MISS_TTL: Duration = Duration::from_secs(600);
/// The most kinds whose discovery is remembered per edge.
const MAX_KINDS: usize = 1_000;

impl EdgeCache {
    /// Waits until every cache holds its first list: at once when they do, and every
    /// reconcile that waits is woken when the last one is in.
    pub async fn ready(&self) -> bool {
        tokio::time::timeout(SYNC_TIMEOUT, self.listed.wait_all())
            .await
            .is_ok()
    }

    /// Why a decision about the objects in `namespace` must see the edge unreachable, if
    /// it must (`controller/unreachable.rs`): a watch or a write found it so, or its
    /// watches, or that namespace's Secret watch, did not list within [`SYNC_TIMEOUT`].
    pub async fn unreachable_for(&self, namespace: &str) -> Option<String> {
        if let Some(why) = self.unreachable() {
            return Some(why);
        }
        if !self.ready().await {
            return Some(format!(
                "its watches did not list the installer's objects within {} s",
                SYNC_TIMEOUT.as_secs()
            ));
        }
        if !self.ready_in(namespace).await {
            return Some(format!(
                "its watch of the Secrets in namespace {namespace} did not list them within {} s (is the installer's RoleBinding providers-installer there, and the ClusterRole providers-edge-namespace of manifests/edge applied?)",
                SYNC_TIMEOUT.as_secs()
            ));
        }
        None
    }

    /// Why the edge is thought unreachable, when it is.
    pub fn unreachable(&self) -> Option<String> {
        self.unreachable.why()
    }

    /// A write or a probe found the edge unreachable (`Some`) or answering (`None`).
    pub fn set_unreachable(&self, why: Option<String>) {
        self.unreachable.set(why);
    }

    /// An object's state: the installer's own latest write where the cache has not seen
    /// it yet, otherwise the cache.
    pub fn object(&self, kind: Cached, namespace: &str, name: &str) -> Option<ObjectState> {
        let cached = match kind {
            Cached::Namespace => meta_of(&self.namespaces, name, None),
            Cached::Attempt(Kind::ServiceAccount) => {
                meta_of(&self.service_accounts, name, Some(namespace))
            }
            Cached::Attempt(Kind::Role) => meta_of(&self.roles, name, Some(namespace)),
            Cached::Attempt(Kind::RoleBinding) => {
                meta_of(&self.role_bindings, name, Some(namespace))
            }
            Cached::Attempt(Kind::Secret) => self
                .namespaced
                .secrets(namespace)
                .and_then(|secrets| meta_of(&secrets, name, Some(namespace))),
            Cached::Attempt(Kind::Job) => {
                return self.job(namespace, name).map(|job| job.object);
            }
        };
        match self.own_write(
            kind,
            namespace,
            name,
            cached.as_ref().map(|o| o.uid.as_str()),
        ) {
            OwnWriteSays::Present(seen) => match *seen {
                WrittenObject::Object(object) => Some(object),
                WrittenObject::Job(job) => Some(job.object),
            },
            OwnWriteSays::Gone => None,
            OwnWriteSays::Cache => cached,
        }
    }

    /// The installer's Jobs in `namespace` labelled for the Workspace `uid`, but the one
    /// named `except`: those of its earlier attempts, kept after their results.
    pub fn jobs_of(&self, namespace: &str, uid: &str, except: &str) -> Vec<(String, ObjectState)> {
        self.jobs.filter_map(|job| {
            let meta = &job.meta;
            (meta.namespace() == Some(namespace)
                && meta.name() != except
                && meta.label(providers_shared::installer::names::LABEL_WORKSPACE_UID) == Some(uid))
            .then(|| (meta.name().to_owned(), meta.state()))
        })
    }

    /// The attempt's Job.
    pub fn job(&self, namespace: &str, name: &str) -> Option<JobState> {
        let cached = self.jobs.get(Some(namespace), name, CompactJob::state);
        let kind = Cached::Attempt(Kind::Job);
        match self.own_write(
            kind,
            namespace,
            name,
            cached.as_ref().map(|j| j.object.uid.as_str()),
        ) {
            OwnWriteSays::Present(seen) => match *seen {
                WrittenObject::Job(job) => Some(job),
                WrittenObject::Object(_) => cached,
            },
            OwnWriteSays::Cache => cached,
            OwnWriteSays::Gone => None,
        }
    }

    /// The newest revision of `release` in `namespace`, from Helm's records. With the
    /// revision an installed attempt left, two lookups by name answer when nothing changed
    /// (that revision is there and the next is not); otherwise every record is looked at.
    pub fn release_revision(
        &self,
        namespace: &str,
        release: &str,
        installed: Option<i64>,
    ) -> Option<ReleaseRevision> {
        let records = self.namespaced.secrets(namespace)?;
        let of_release =
            |r: &CompactMeta| is_helm_record(r.label("owner")) && r.label("name") == Some(release);
        if let Some(revision) = installed {
            let record = |revision: i64| {
                records
                    .get(
                        Some(namespace),
                        &format!("sh.helm.release.v1.{release}.v{revision}"),
                        |r| of_release(r).then(|| r.to_meta()),
                    )
                    .flatten()
            };
            if record(revision + 1).is_none()
                && let Some(found) = record(revision)
            {
                return newest_revision(std::slice::from_ref(&found));
            }
        }
        let records: Vec<ObjectMeta> = records.filter_map(|r| of_release(r).then(|| r.to_meta()));
        newest_revision(&records)
    }

    /// Waits until the Secrets of `namespace` are listed, when it is one of the installer's
    /// (in the label-selected namespace cache), starting their watch the first time. One
    /// the cache has not brought yet is ready at once: nothing of it is there but what the
    /// installer's own writes remember.
    pub async fn ready_in(&self, namespace: &str) -> bool {
        if meta_of(&self.namespaces, namespace, None).is_some() {
            self.namespaced.ensure(namespace);
        }
        self.namespaced.ready(namespace).await
    }

    /// Watches the Secrets of a namespace of the installer's.
    pub fn watch_namespace(&self, namespace: &str) {
        self.namespaced.ensure(namespace);
    }

    /// How many namespaces' Secrets are watched.
    pub fn namespaces_watched(&self) -> usize {
        self.namespaced.count()
    }

    /// The installer's own Secrets (by its `managed-by` label) in every namespace watched,
    /// for the orphan sweep: `(namespace, name, what a decision reads)`.
    pub fn managed_secrets(&self) -> Vec<(String, String, ObjectState)> {
        self.namespaced.all_secrets(|meta| {
            (meta.label(providers_shared::installer::names::LABEL_MANAGED_BY)
                == Some(providers_shared::installer::names::MANAGED_BY))
            .then(|| {
                (
                    meta.namespace().unwrap_or_default().to_owned(),
                    meta.name().to_owned(),
                    meta.state(),
                )
            })
        })
    }

    /// The objects of the installed revision recorded in `record_uid`, when read before.
    pub fn manifest(&self, record_uid: &str) -> Option<Arc<Vec<ReleaseObject>>> {
        self.manifests.locked().get(record_uid).cloned()
    }

    /// Keeps the objects of the revision recorded in `record_uid`.
    pub fn keep_manifest(&self, record_uid: &str, objects: Arc<Vec<ReleaseObject>>) {
        let mut manifests = self.manifests.locked();
        let held: usize = manifests.values().map(|o| o.len()).sum();
        if held + objects.len() > MAX_MANIFEST_OBJECTS {
            manifests.clear();
        }
        manifests.insert(record_uid.to_owned(), objects);
    }

    /// Follows `objects` of an installed release in `namespace` (a watch per kind, started
    /// the first time a release there names it) and says what the edge shows of each.
    pub async fn follow_objects(
        &self,
        client: &Client,
        namespace: &str,
        objects: &[ReleaseObject],
        may_follow: impl Fn(&ApiResource) -> bool,
    ) -> Vec<(ReleaseObject, ObjectSeen)> {
        let mut kinds: Vec<(String, String)> = objects
            .iter()
            .map(|o| (o.api_version.clone(), o.kind.clone()))
            .collect();
        kinds.sort();
        kinds.dedup();
        for kind in &kinds {
            if self.namespaced.follow_watch(namespace, kind).is_some() {
                continue;
            }
            let Some(resource) = self.resource_of(client, kind).await else {
                continue;
            };
            if !may_follow(&resource) {
                continue;
            }
            self.namespaced.follow(namespace, kind, &resource);
        }
        follow::seen_all(objects, |object| {
            self.namespaced.follow_watch(
                namespace,
                &(object.api_version.clone(), object.kind.clone()),
            )
        })
    }

    /// How many watches follow release objects for drift: one per namespace and kind, and
    /// one per kind followed across the edge.
    pub fn follow_watches(&self) -> usize {
        self.namespaced.follows()
    }

    /// The namespaced API resource of a kind, asked once of the edge's discovery (a kind
    /// not found, or not namespaced, again after [`KIND_MISS_TTL`]).
    async fn resource_of(&self, client: &Client, kind: &(String, String)) -> Option<ApiResource> {
        if let Some((known, at)) = self.kinds.locked().get(kind)
            && (known.is_some() || at.elapsed() < KIND_MISS_TTL)
        {
            return known.clone();
        }
        let (group, version) = match kind.0.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", kind.0.as_str()),
        };
        let gvk = GroupVersionKind::gvk(group, version, &kind.1);
        let found = match kube::discovery::pinned_kind(client, &gvk).await {
            Ok((resource, capabilities)) if capabilities.scope == Scope::Namespaced => {
                Some(resource)
            }
            Ok(_) => None,
            Err(error) => {
                tracing::debug!(kind = ?kind, %error, "cannot find a kind on the edge");
                None
            }
        };
        let mut kinds = self.kinds.locked();
        if kinds.len() >= MAX_KINDS {
            kinds.clear();
        }
        kinds.insert(kind.clone(), (found.clone(), Instant::now()));
        found
    }

    /// Wakes `workspace` when the records of `release` in `namespace` change.
    pub fn follow_release(&self, namespace: &str, release: &str, workspace: &str) {
        let mut followed = self.followed.locked();
        let key = (namespace.to_owned(), release.to_owned());
        if followed.get(&key).map(String::as_str) != Some(workspace) {
            followed.insert(key, workspace.to_owned());
        }
    }

    /// The installer created or changed `object` (the API server's answer).
    pub fn wrote_object<K: Resource>(&self, kind: Cached, object: &K) {
        let seen = WrittenObject::Object(state_of(object));
        self.remember(kind, object.meta(), EdgeWrite::Present(Box::new(seen)));
    }

    /// The installer created or changed a Job (the API server's answer).
    pub fn wrote_job(&self, job: &Job) {
        let seen = WrittenObject::Job(job_state(job));
        self.remember(
            Cached::Attempt(Kind::Job),
            &job.metadata,
            EdgeWrite::Present(Box::new(seen)),
        );
    }

    /// The installer deleted the object with `uid` (or found it gone).
    pub fn deleted(&self, kind: Cached, namespace: &str, name: &str, uid: &str) {
        self.own.locked().insert(
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
        self.own.locked().insert(key, own, Instant::now());
    }

    /// What the installer's own writes say of an object the cache holds with
    /// `cached_uid`; forgets what the cache has caught up with, or what is too old.
    fn own_write(
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
            .own
            .locked()
            .trusted(&key, |own| own.shown(cached_uid), Instant::now())
        {
            Some(EdgeWrite::Present(seen)) => OwnWriteSays::Present(seen.clone()),
            Some(EdgeWrite::Gone { .. }) => OwnWriteSays::Gone,
            None => OwnWriteSays::Cache,
        }
    }
}

enum OwnWriteSays {
    Present(Box<WrittenObject>),
    Gone,
    Cache,
}

fn meta_of(
    store: &CompactStore<CompactMeta>,
    name: &str,
    namespace: Option<&str>,
) -> Option<ObjectState> {
    store.get(namespace, name, CompactMeta::state)
}

#[cfg(test)]
mod tests;
