//! What the edge shows of an installed release's objects: the objects Helm recorded for
//! each revision (read once per record), the API resource of each kind found once by
//! discovery, and the watches that follow those objects for drift.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use k8s_openapi::jiff::Timestamp;
use kube::{
    Client,
    api::{ApiResource, GroupVersionKind},
    discovery::Scope,
};
use providers_shared::installer::{
    drift::contents::ContentFindings, release_objects::ReleaseObject,
};

use std::collections::HashMap;

use providers_runtime::locks::Locked;

/// `(apiVersion, kind)` of the objects a release made.
type KindKey = (String, String);
/// A kind's namespaced API resource as discovery found it (`None`: not served, or not
/// namespaced), and when.
type FoundKind = (Option<ApiResource>, Instant);

/// The most objects of installed revisions kept in memory, all revisions together (past
/// it, they are read again).
const MAX_MANIFEST_OBJECTS: usize = 200_000;
/// The most content checks remembered per edge (past it, every release is checked again
/// at its spread point of the interval).
const MAX_CONTENT_CHECKS: usize = 100_000;
/// How long a kind the edge does not serve is not asked about again.
const KIND_MISS_TTL: Duration = Duration::from_secs(600);
/// The most kinds whose discovery is remembered per edge.
const MAX_KINDS: usize = 1_000;

/// What the installer remembers of an edge's releases: the objects of each revision it
/// read, and the kinds discovery found. Cloning shares them.
#[derive(Clone)]
pub(super) struct ReleaseObjects {
    /// The API resource of each `(apiVersion, kind)` a release made, found once by
    /// discovery; `None` for a kind not served or not namespaced (not followed).
    kinds: Arc<Mutex<HashMap<KindKey, FoundKind>>>,
    /// The objects Helm recorded for each installed revision, by its record's UID: read
    /// once per record.
    manifests: Arc<Mutex<HashMap<String, Arc<Vec<ReleaseObject>>>>>,
    /// The newest content check of each installed revision, by its record's UID.
    contents: Arc<Mutex<HashMap<String, Arc<ContentFindings>>>>,
    /// The SHA-256 of each installed revision's manifest when first read, by its record's
    /// UID: a record rewritten since is seen by the next content check.
    pinned: Arc<Mutex<HashMap<String, String>>>,
    /// When these caches were made: an attempt that ended later was seen ending.
    since: Timestamp,
}

impl Default for ReleaseObjects {
    fn default() -> Self {
        Self {
            kinds: Arc::default(),
            manifests: Arc::default(),
            contents: Arc::default(),
            pinned: Arc::default(),
            since: Timestamp::now(),
        }
    }
}

impl ReleaseObjects {
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

    /// The newest content check of the revision recorded in `record_uid`.
    pub fn content_check(&self, record_uid: &str) -> Option<Arc<ContentFindings>> {
        self.contents.locked().get(record_uid).cloned()
    }

    /// Keeps a content check, the newest of its revision.
    pub fn keep_content_check(&self, findings: Arc<ContentFindings>) {
        let mut contents = self.contents.locked();
        if contents.len() >= MAX_CONTENT_CHECKS {
            contents.clear();
        }
        contents.insert(findings.record_uid.clone(), findings);
    }

    /// The digest of the manifest of the revision recorded in `record_uid` when first read.
    pub fn pinned_manifest(&self, record_uid: &str) -> Option<String> {
        self.pinned.locked().get(record_uid).cloned()
    }

    /// Pins the digest of a revision's manifest, unless one is pinned already.
    pub fn pin_manifest(&self, record_uid: &str, digest: &str) {
        let mut pinned = self.pinned.locked();
        if pinned.len() >= MAX_CONTENT_CHECKS {
            pinned.clear();
        }
        pinned
            .entry(record_uid.to_owned())
            .or_insert_with(|| digest.to_owned());
    }

    /// When these caches were made.
    pub fn since(&self) -> Timestamp {
        self.since
    }

    /// The namespaced API resource of a kind, asked once of the edge's discovery (a kind
    /// not found, or not namespaced, again after [`KIND_MISS_TTL`]).
    pub(super) async fn resource_of(
        &self,
        client: &Client,
        kind: &(String, String),
    ) -> Option<ApiResource> {
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
}
