//! `providers-edge-watch`: what the installer knows of one edge without asking it: watch
//! caches of the objects it makes there (selected by its `managed-by` label) and of Helm's
//! release records (metadata only), plus what its own writes did since, until the watches
//! catch up. README.md says what it costs and what it does not do.
//!
//! Decisions read from here, so a reconcile costs the edge's API server nothing but the
//! writes it decides. The caches can lag; that is safe because every write is guarded
//! (creates fail with AlreadyExists, deletions carry the observed UID, patches test it),
//! and a create that finds the object already there reads it once, live, to learn whose
//! it is (`learned`).
#![forbid(unsafe_code)]

use std::{collections::HashMap, sync::Arc};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Client, api::ApiResource};
use providers_shared::installer::{
    JobState, Kind, ObjectSeen, ObjectState, ReleaseRevision, Unfollowed, newest_revision,
    release_objects::ReleaseObject,
};

mod cached;
mod compact_meta;
mod compact_store;
mod content_checks;
// The caches fed by hand, for unit tests of whole passes (here and, with the feature
// `testing`, in other crates).
#[cfg(any(test, feature = "testing"))]
pub mod fed;
mod follow;
mod follower;
pub mod grants;
mod metadata_decode;
mod metadata_events;
mod metadata_watch;
mod namespaced;
mod own_edge_writes;
mod packed_pairs;
mod release_objects;
mod secret_watch;
mod stream_pool;
mod sync;
mod wake;
pub mod watches;

pub use cached::Cached;

/// The kinds (`(apiVersion, kind)`) of a release that are not followed, and why.
pub type UnfollowedKinds = HashMap<(String, String), Unfollowed>;
pub use stream_pool::{DEFAULT_STREAMS_PER_CONNECTION, StreamPool};

use compact_meta::{CompactJob, CompactMeta};
use compact_store::CompactStore;
use namespaced::{FollowRefused, NamespaceWatches};
use own_edge_writes::{OwnEdgeWrites, OwnWriteSays, WrittenObject};
use release_objects::ReleaseObjects;
use secret_watch::is_helm_record;
pub use sync::SYNC_TIMEOUT;
use sync::WatchesListed;
use wake::ReleaseWorkspaces;

use providers_runtime::locks::Locked;
use providers_runtime::unreachable::Reachability;

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
    own: OwnEdgeWrites,
    /// The installed releases watched for drift: `(namespace, release)` → the Workspace
    /// (`<org>/<name>`) a change of their records wakes.
    release_workspaces: ReleaseWorkspaces,
    /// Why the edge's API is thought unreachable: a watch failed or a write got no
    /// answer, and nothing has answered since. The caches then hold what was last seen,
    /// which no decision should act on.
    unreachable: Reachability,
    /// How many of the watches have listed once.
    listed: Arc<WatchesListed>,
    /// The objects of each installed revision read, and the kinds discovery found.
    releases: ReleaseObjects,
    /// Who the installer is on this edge, asked once per credential (the caches are made
    /// again for a new one).
    identity: Arc<tokio::sync::OnceCell<String>>,
}

impl EdgeCache {
    /// Waits until every cache holds its first list: at once when they do, and every
    /// reconcile that waits is woken when the last one is in.
    pub async fn ready(&self) -> bool {
        tokio::time::timeout(SYNC_TIMEOUT, self.listed.wait_all())
            .await
            .is_ok()
    }

    /// Why a decision about the objects in `namespace` must see the edge unreachable, if
    /// it must (`providers_runtime::unreachable`): a watch or a write found it so, or its
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
        match self.own.says(
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
        match self.own.says(
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
        self.releases.manifest(record_uid)
    }

    /// Keeps the objects of the revision recorded in `record_uid`.
    pub fn keep_manifest(&self, record_uid: &str, objects: Arc<Vec<ReleaseObject>>) {
        self.releases.keep_manifest(record_uid, objects);
    }

    /// The namespaced API resource of `(apiVersion, kind)`, found once by discovery.
    pub async fn resource_of(
        &self,
        client: &Client,
        kind: &(String, String),
    ) -> Option<ApiResource> {
        self.releases.resource_of(client, kind).await
    }

    /// Follows the kinds of `objects`, an installed release's in `namespace` (a watch per
    /// kind, started the first time a release there names it), and says which kinds are
    /// not followed and why. A pass does this before it observes; observing then only
    /// reads what the watches show ([`Self::seen_objects`]).
    pub async fn follow_kinds(
        &self,
        client: &Client,
        namespace: &str,
        objects: &[ReleaseObject],
        may_follow: impl Fn(&ApiResource) -> bool,
    ) -> UnfollowedKinds {
        let mut kinds: Vec<(String, String)> = objects
            .iter()
            .map(|o| (o.api_version.clone(), o.kind.clone()))
            .collect();
        kinds.sort();
        kinds.dedup();
        let mut unfollowed = UnfollowedKinds::new();
        for kind in kinds {
            if self.namespaced.follow_watch(namespace, &kind).is_some() {
                continue;
            }
            let Some(resource) = self.releases.resource_of(client, &kind).await else {
                unfollowed.insert(kind, Unfollowed::NotServed);
                continue;
            };
            if !may_follow(&resource) {
                unfollowed.insert(kind, Unfollowed::NotRunnerWritable);
                continue;
            }
            match self.namespaced.follow(namespace, &kind, &resource) {
                Ok(_) => {}
                Err(FollowRefused::TooManyKinds) => {
                    unfollowed.insert(kind, Unfollowed::TooManyKinds);
                }
                // Not known yet: the namespace's watches or a stream come later.
                Err(FollowRefused::NamespaceNotWatched | FollowRefused::NoStream) => {}
            }
        }
        unfollowed
    }

    /// What the edge shows of each of `objects` in `namespace`: a kind in `unfollowed` is
    /// named with its reason, any other kind without a watch is unknown. Reads only.
    pub fn seen_objects(
        &self,
        namespace: &str,
        objects: &[ReleaseObject],
        unfollowed: &UnfollowedKinds,
    ) -> Vec<(ReleaseObject, ObjectSeen)> {
        follow::seen_all(objects, |object| {
            let kind = (object.api_version.clone(), object.kind.clone());
            self.namespaced
                .follow_watch(namespace, &kind)
                .ok_or_else(|| unfollowed.get(&kind).copied())
        })
    }

    /// How many watches follow release objects for drift: one per namespace and kind, and
    /// one per kind followed across the edge.
    pub fn follow_watches(&self) -> usize {
        self.namespaced.follows()
    }

    /// The installer created or changed `object` (the API server's answer).
    pub fn wrote_object<K: kube::Resource>(&self, kind: Cached, object: &K) {
        self.own.wrote_object(kind, object);
    }

    /// The installer created or changed a Job (the API server's answer).
    pub fn wrote_job(&self, job: &k8s_openapi::api::batch::v1::Job) {
        self.own.wrote_job(job);
    }

    /// The installer deleted the object with `uid` (or found it gone).
    pub fn deleted(&self, kind: Cached, namespace: &str, name: &str, uid: &str) {
        self.own.deleted(kind, namespace, name, uid);
    }

    /// The user the installer authenticates as on this edge (`client` is this edge's),
    /// asked by a SelfSubjectReview the first time, then known for the credential's life.
    pub async fn identity(&self, client: &Client) -> Result<String, kube::Error> {
        self.identity
            .get_or_try_init(|| grants::who_am_i(client))
            .await
            .cloned()
    }

    /// Wakes `workspace` when the records of `release` in `namespace` change.
    pub fn wake_on_release(&self, namespace: &str, release: &str, workspace: &str) {
        let mut release_workspaces = self.release_workspaces.locked();
        let key = (namespace.to_owned(), release.to_owned());
        if release_workspaces.get(&key).map(String::as_str) != Some(workspace) {
            release_workspaces.insert(key, workspace.to_owned());
        }
    }
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
