//! What the caches keep of the content checks of an edge's releases (ADR 47): the newest
//! check of each installed revision, and since when the edge is watched (an attempt that
//! ended later was seen ending, and is checked at once).

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

    /// Since when these caches watch the edge: an attempt that ended later was seen
    /// ending.
    pub fn watching_since(&self) -> k8s_openapi::jiff::Timestamp {
        self.releases.since()
    }
}
