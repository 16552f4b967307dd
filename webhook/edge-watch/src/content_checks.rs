//! What the caches keep of the content checks of an edge's releases (ADR 47): the newest
//! check of each installed revision, the digest of its manifest when first read (a record
//! rewritten since is drift), and since when the edge is watched (an attempt that ended
//! later was seen ending, and is checked at once).

use std::sync::Arc;

use providers_shared::installer::drift::contents::ContentFindings;

use crate::EdgeCache;

impl EdgeCache {
    /// The newest content check of the revision recorded in `record_uid`, when this
    /// process made one.
    pub fn content_check(&self, record_uid: &str) -> Option<Arc<ContentFindings>> {
        self.releases.content_check(record_uid)
    }

    /// Keeps a content check of a revision, the newest.
    pub fn keep_content_check(&self, findings: Arc<ContentFindings>) {
        self.releases.keep_content_check(findings);
    }

    /// The digest of the manifest of the revision recorded in `record_uid` when this
    /// process first read it.
    pub fn pinned_manifest(&self, record_uid: &str) -> Option<String> {
        self.releases.pinned_manifest(record_uid)
    }

    /// Pins the digest of a revision's manifest at its first read; a later pin of the same
    /// revision keeps the first.
    pub fn pin_manifest(&self, record_uid: &str, digest: &str) {
        self.releases.pin_manifest(record_uid, digest);
    }

    /// Since when these caches watch the edge: an attempt that ended later was seen
    /// ending.
    pub fn watching_since(&self) -> k8s_openapi::jiff::Timestamp {
        self.releases.since()
    }
}
