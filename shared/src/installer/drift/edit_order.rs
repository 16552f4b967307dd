//! Rule `edits_are_ordered_by_version`: whether an edit of a release's object came after
//! the attempt ended is decided by the order of the edge's writes, not by the seconds of
//! `managedFields`.
//!
//! An edit's time in `managedFields` has whole seconds, so an edit in the second the
//! attempt ended looks like the attempt's own. The edge's API server orders every write
//! by its `resourceVersion` (etcd's revision, one counter for every object it stores), and
//! the watches that follow a release see each version of an object in that order. So each
//! edit carries the versions that bound it (written after the version last seen without
//! it, at or before the first version seen with it), the Workspace records the version of
//! its Job when the Job's end was seen, and the two compare, within the attempt's last
//! second only: the seconds still decide every other edit. What the versions cannot place
//! in that second (an edit first seen in a list: after a restart, or when the kind's watch
//! began after the attempt) counts as after it: drift named is repaired or explained,
//! while drift assumed away stays unseen for good.

use k8s_openapi::jiff::Timestamp;

pub use crate::installer::release_objects::{EditVersions, version_number};
use crate::installer::release_objects::{FieldEdit, ObjectTrace};

/// The end of an attempt, as its Workspace recorded it.
#[derive(Clone, Copy, Debug, Default)]
pub struct AttemptEnd {
    /// When the Job finished (whole seconds, the edge's clock).
    pub at: Option<Timestamp>,
    /// The Job's resourceVersion when its end was seen.
    pub version: Option<u64>,
}

/// Whether `edit` was written after the attempt ended. The seconds decide what they can:
/// a later second is after, an earlier one before. Only within the attempt's last second
/// do the versions decide, so that neither a later write to the Job (which moves its
/// version on) nor a kind stored apart from Jobs (whose versions count on their own, as
/// with `--etcd-servers-overrides`) can place an edit of another second.
pub fn written_after(edit: &FieldEdit, end: AttemptEnd) -> bool {
    let (Some(ended_at), Some(at)) = (end.at, edit.time) else {
        return true;
    };
    if at != ended_at {
        return at > ended_at;
    }
    if let Some(ended) = end.version {
        if edit.versions.first_seen.is_some_and(|v| v <= ended) {
            return false;
        }
        if edit.versions.absent_in.is_some_and(|v| v >= ended) {
            return true;
        }
    }
    // Nothing orders it within the second: counted as after (see the module's note).
    true
}

/// `now`, the trace of an object's newest version, with the versions of each edit carried
/// from `previous` (the trace of the version seen before, when there was one): an edit
/// unchanged since keeps its bounds, a new or changed one is bounded by the two versions.
pub fn ordered(mut now: ObjectTrace, previous: Option<&ObjectTrace>) -> ObjectTrace {
    let before = previous.and_then(|p| p.version);
    // An object made again under the name (its deletion missed in a relist) keeps nothing
    // of the old one's edits: every edit of it came after the old version.
    let same_object = previous.filter(|p| p.uid == now.uid);
    for edit in &mut now.edits {
        let kept = same_object.and_then(|p| p.edits.iter().find(|old| same_write(old, edit)));
        edit.versions = match kept {
            Some(old) => old.versions,
            None => EditVersions {
                first_seen: now.version,
                absent_in: before,
            },
        };
    }
    now
}

/// Whether two edits are the same write of the same manager: a manager that writes again
/// has a new time or new fields.
fn same_write(a: &FieldEdit, b: &FieldEdit) -> bool {
    a.manager == b.manager
        && a.operation == b.operation
        && a.time == b.time
        && a.fields == b.fields
        && a.more_fields == b.more_fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::SignedDuration;

    fn second() -> Timestamp {
        "2026-12-07T15:19:57Z".parse().unwrap()
    }

    fn edit(manager: &str, at: Timestamp) -> FieldEdit {
        FieldEdit {
            manager: manager.into(),
            operation: "Update".into(),
            time: Some(at),
            fields: vec!["data.greeting".into()],
            more_fields: false,
            versions: EditVersions::default(),
        }
    }

    fn trace(version: u64, edits: Vec<FieldEdit>) -> ObjectTrace {
        ObjectTrace {
            uid: "cm1".into(),
            version: Some(version),
            opted_out: false,
            edits,
        }
    }

    fn end(version: u64) -> AttemptEnd {
        AttemptEnd {
            at: Some(second()),
            version: Some(version),
        }
    }

    #[test]
    fn an_edit_in_the_attempt_s_last_second_after_its_end_is_after() {
        let listed = ordered(trace(90, vec![]), None);
        let edited = ordered(
            trace(120, vec![edit("kubectl-patch", second())]),
            Some(&listed),
        );
        assert_eq!(
            edited.edits[0].versions,
            EditVersions {
                first_seen: Some(120),
                absent_in: Some(90)
            }
        );
        // Seen first in 120: before a Job that ended at 130.
        assert!(!written_after(&edited.edits[0], end(130)));
        // Absent in 90: after a Job that ended at 90.
        assert!(written_after(&edited.edits[0], end(90)));
        // Between 90 and 120 for a Job that ended at 100: the same second counts as after.
        assert!(written_after(&edited.edits[0], end(100)));
    }

    #[test]
    fn the_same_second_decides_nothing_once_versions_order_the_edit() {
        let listed = ordered(trace(100, vec![]), None);
        let edited = ordered(
            trace(101, vec![edit("kubectl-patch", second())]),
            Some(&listed),
        );
        assert!(
            written_after(&edited.edits[0], end(100)),
            "written after version 100, where the Job ended"
        );
        let before = ordered(trace(99, vec![edit("kubectl-patch", second())]), None);
        assert!(
            !written_after(&before.edits[0], end(100)),
            "seen in version 99, before the Job's end"
        );
    }

    #[test]
    fn an_unchanged_edit_keeps_its_versions_and_a_new_write_gets_new_ones() {
        let first = ordered(trace(50, vec![edit("kubectl-patch", second())]), None);
        let status_only = ordered(
            trace(80, vec![edit("kubectl-patch", second())]),
            Some(&first),
        );
        assert_eq!(status_only.edits[0].versions, first.edits[0].versions);
        let again = ordered(
            trace(
                140,
                vec![edit(
                    "kubectl-patch",
                    second() + SignedDuration::from_secs(1),
                )],
            ),
            Some(&status_only),
        );
        assert_eq!(
            again.edits[0].versions,
            EditVersions {
                first_seen: Some(140),
                absent_in: Some(80)
            }
        );
    }

    #[test]
    fn what_versions_cannot_place_is_placed_by_the_second_and_the_same_second_counts_as_after() {
        // First seen in a list at version 150, after the Job's end at 100: written at or
        // before 150, which does not say before or after 100.
        let listed = |at| ordered(trace(150, vec![edit("kubectl-patch", at)]), None);
        let one = SignedDuration::from_secs(1);
        assert!(!written_after(&listed(second() - one).edits[0], end(100)));
        assert!(written_after(&listed(second() + one).edits[0], end(100)));
        assert!(written_after(&listed(second()).edits[0], end(100)));
    }

    #[test]
    fn versions_never_place_an_edit_of_another_second() {
        let one = SignedDuration::from_secs(1);
        // Seen first at or before the Job's recorded version, but a second later: the
        // Job was written again after its end, or the kind counts its versions apart.
        let later = ordered(trace(90, vec![edit("kubectl-patch", second() + one)]), None);
        assert!(written_after(&later.edits[0], end(100)));
        // Absent in a version past the Job's, a second earlier: before.
        let listed = ordered(trace(200, vec![]), None);
        let earlier = ordered(
            trace(210, vec![edit("kube-controller-manager", second() - one)]),
            Some(&listed),
        );
        assert!(!written_after(&earlier.edits[0], end(100)));
    }

    #[test]
    fn an_object_made_again_under_its_name_keeps_none_of_the_old_bounds() {
        let old = ordered(trace(50, vec![edit("kubectl-patch", second())]), None);
        let mut again = trace(150, vec![edit("kubectl-patch", second())]);
        again.uid = "cm2".into();
        let again = ordered(again, Some(&old));
        assert_eq!(
            again.edits[0].versions,
            EditVersions {
                first_seen: Some(150),
                absent_in: Some(50)
            }
        );
    }

    #[test]
    fn without_the_end_s_version_the_seconds_decide() {
        let edited = ordered(trace(120, vec![edit("kubectl-patch", second())]), None);
        let seconds_only = AttemptEnd {
            at: Some(second()),
            version: None,
        };
        assert!(written_after(&edited.edits[0], seconds_only));
        assert_eq!(version_number("12345"), Some(12345));
        assert_eq!(version_number("opaque-1"), None);
    }
}
