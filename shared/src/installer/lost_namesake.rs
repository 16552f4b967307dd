//! What a lost Workspace of the same name left on the edge (ADR 41).
//!
//! A hub restored from a backup, or a Workspace whose finalizer was forced off, leaves its
//! release namespace, and perhaps a Job and a runner identity, marked with the UID of a
//! Workspace that no longer exists. A Workspace created again under the same
//! `<org>/<name>` (a restore gives it a new UID) finds them. Only one Workspace of a name
//! exists at a time, so an object marked for this name and another UID is a lost
//! Workspace's; but the decision does not release or take over such an object itself:
//! the orphan sweep does, after it has listed every Workspace on the hub and seen that UID
//! among none of them, and removes the lost attempt's Job and identity before it releases
//! the namespace. Until then the attempt waits, saying so, instead of being refused.

use super::{
    action::Next,
    conditions::{Activity, reason},
    decision_draft::DecisionDraft,
    names,
    observation::ObjectState,
};

/// How long an attempt waits before it looks again for the sweep's work.
const RECHECK_SECONDS: u64 = 15;

impl DecisionDraft<'_> {
    /// Whether `object` carries the installer's marks for this Workspace's `<org>/<name>`
    /// and another Workspace's UID: left by a lost Workspace of this name.
    pub(super) fn left_by_lost_namesake(&self, object: &ObjectState) -> bool {
        let uid = object.label(names::LABEL_WORKSPACE_UID);
        !uid.is_empty()
            && !self.uid().is_empty()
            && uid != self.uid()
            && object.label(names::LABEL_MANAGED_BY) == names::MANAGED_BY
            && object
                .annotations
                .get(names::ANNOTATION_WORKSPACE)
                .map(String::as_str)
                == Some(self.key())
    }

    /// Whether `object`, a Job or runner object, was left by a lost Workspace of this name
    /// for one of its attempts: only those (they carry the attempt's ID) does the sweep
    /// remove, so only for those is waiting bounded.
    pub(super) fn left_by_lost_attempt(&self, object: &ObjectState) -> bool {
        // One already being deleted is skipped by the sweep: if a finalizer not the
        // installer's holds it, waiting would never end.
        self.left_by_lost_namesake(object)
            && !object.label(names::LABEL_ATTEMPT_ID).is_empty()
            && !object.deleting
    }

    /// Rule `lost_namesakes_objects_wait_for_the_sweep`: the attempt waits (no result, no
    /// write on the edge) until the orphan sweep has removed or released `what`.
    pub(super) fn wait_for_sweep(&mut self, what: &str, object: &ObjectState) -> Next {
        self.activity = Activity::idle(
            reason::WAITING_FOR_ORPHAN_SWEEP,
            format!(
                "{what} on edge {} was left by an earlier Workspace named {} (UID {}) that no longer exists, as after a restore of the hub from a backup; the installer's orphan sweep removes what that Workspace's attempt left and releases its namespace (at the start of every installer replica's run, then every --orphan-sweep-interval), and this attempt then continues with the release as it is",
                self.edge_name(),
                self.key(),
                object.label(names::LABEL_WORKSPACE_UID),
            ),
        );
        Next::After(RECHECK_SECONDS)
    }
}
