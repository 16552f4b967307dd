//! Drift of the objects a release made: rule `release_objects_are_checked_for_drift`.
//! An object of the installed revision that a field manager other than the release wrote
//! after the attempt finished, or that is gone, is drift. Read from metadata alone
//! (`release_objects`): contents are never compared.

use crate::api::{Drift, DriftedObject, Plan};

use super::{
    edit_order::{AttemptEnd, version_number, written_after},
    reason,
};
use crate::installer::{
    decision_draft::DecisionDraft,
    observation::ObjectSeen,
    release_objects::{MAX_FIELDS, ReleaseObject},
};

/// The most objects a drift names.
const MAX_DRIFTED: usize = 8;

impl DecisionDraft<'_> {
    /// The drift of the installed revision's objects (the one recorded with `record_uid`),
    /// when their watches show one.
    pub(super) fn object_drift(&self, plan: &Plan, record_uid: &str) -> Option<Drift> {
        let followed = self.observation().edge_objects.as_ref()?.objects.as_ref()?;
        if followed.record_uid != record_uid {
            return None;
        }
        // Writes up to the attempt's end (the Job's completion) are the release's own:
        // controllers that annotate what helm made (a Deployment's revision) write before
        // the Job completes, and a repair acknowledges what it could not take back. The
        // edge's order of writes says which came after, the seconds only what it cannot
        // (rule `edits_are_ordered_by_version`).
        let end = AttemptEnd {
            at: self.status.finished_at.as_ref().map(|f| f.0),
            version: self
                .status
                .finished_resource_version
                .as_deref()
                .and_then(version_number),
        };
        let policy = plan.drift.clone().unwrap_or_default();
        let mut found: Vec<DriftedObject> = Vec::new();
        let mut more = 0;
        for (object, seen) in &followed.objects {
            let drifted = match seen {
                ObjectSeen::Unknown | ObjectSeen::Unfollowed(_) => None,
                ObjectSeen::Missing => Some(drifted(object, "Deleted")),
                ObjectSeen::Present(trace) if trace.opted_out => None,
                ObjectSeen::Present(trace) => {
                    trace
                        .edits
                        .iter()
                        .filter(|edit| written_after(edit, end))
                        .filter(|edit| !policy.ignores_manager(&edit.manager))
                        .filter_map(|edit| {
                            // The fields the platform lets anyone write are not drift; an
                            // edit of nothing else is none.
                            let fields: Vec<String> = edit
                                .fields
                                .iter()
                                .filter(|path| !policy.ignores_field(&object.kind, path))
                                .take(MAX_FIELDS)
                                .cloned()
                                .collect();
                            let only_ignored =
                                fields.is_empty() && !edit.fields.is_empty() && !edit.more_fields;
                            (!only_ignored).then_some((edit, fields))
                        })
                        .max_by_key(|(edit, _)| edit.time)
                        .map(|(edit, fields)| DriftedObject {
                            manager: Some(edit.manager.clone()),
                            changed_at: edit
                                .time
                                .map(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time),
                            fields,
                            ..drifted(object, "Changed")
                        })
                }
            };
            match drifted {
                Some(object) if found.len() < MAX_DRIFTED => found.push(object),
                Some(_) => more += 1,
                None => {}
            }
        }
        let first = found.first()?;
        let why = if found.iter().any(|o| o.change == "Deleted") {
            reason::OBJECT_DELETED
        } else {
            reason::OBJECT_CHANGED
        };
        let what = match first.change.as_str() {
            "Deleted" => {
                "is gone (deleted, or no longer labelled app.kubernetes.io/managed-by=Helm)"
                    .to_owned()
            }
            _ => format!(
                "was changed by {}{}",
                first.manager.as_deref().unwrap_or("someone"),
                match first.fields.as_slice() {
                    [] => String::new(),
                    fields => format!(" ({})", fields.join(", ")),
                }
            ),
        };
        let others = found.len() - 1 + more;
        Some(Drift {
            reason: why.to_owned(),
            message: format!(
                "{} {} {what} on edge {}, outside the release {}{}",
                first.kind,
                format_args!("{}/{}", first.namespace, first.name),
                plan.edge_name,
                plan.release,
                match others {
                    0 => String::new(),
                    n => format!("; and {n} more object(s) of the release"),
                }
            ),
            revision: None,
            record_uid: None,
            detected_at: self.now(),
            objects: found,
            automatic_repair: None,
        })
    }
}

fn drifted(object: &ReleaseObject, change: &str) -> DriftedObject {
    DriftedObject {
        api_version: object.api_version.clone(),
        kind: object.kind.clone(),
        namespace: object.namespace.clone(),
        name: object.name.clone(),
        change: change.to_owned(),
        manager: None,
        changed_at: None,
        fields: Vec::new(),
    }
}
