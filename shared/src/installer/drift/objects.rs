//! Drift of the objects a release made: rule `release_objects_are_checked_for_drift`.
//! An object of the installed revision that a field manager other than the release wrote
//! after the attempt finished, or that is gone, is drift. Read from metadata alone
//! (`release_objects`), and from the newest content check of the release (`contents`).

use crate::api::{ContentBaseline, Drift, DriftedObject, Plan};

use super::{
    contents::{ContentSeen, Difference, FOUND_BY_CONTENTS},
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
        for object in self.content_drift(plan, record_uid) {
            let named = found.iter().any(|f| {
                (&f.kind, &f.namespace, &f.name) == (&object.kind, &object.namespace, &object.name)
            });
            match object {
                _ if named => {}
                object if found.len() < MAX_DRIFTED => found.push(object),
                _ => more += 1,
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
            _ => {
                let fields = match first.fields.as_slice() {
                    [] => String::new(),
                    fields => format!(" ({})", fields.join(", ")),
                };
                match (&first.manager, first.found_by.as_deref()) {
                    (Some(manager), _) => format!("was changed by {manager}{fields}"),
                    (None, Some(FOUND_BY_CONTENTS)) => format!(
                        "holds other contents than the release's manifest{fields}, as a comparison of its contents shows (its field managers do not say who changed it)"
                    ),
                    (None, _) => format!("was changed by someone{fields}"),
                }
            }
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

impl DecisionDraft<'_> {
    /// Rule `release_objects_are_compared_by_contents`: the objects the newest content
    /// check of the revision recorded in `record_uid` found changed or gone, but for the
    /// fields the platform lets anyone write. Without a check of that revision in this
    /// process (after a restart, until its next one), what the status recorded of an
    /// earlier one stands, so a drift found by contents is not taken back unseen.
    fn content_drift(&self, plan: &Plan, record_uid: &str) -> Vec<DriftedObject> {
        let checked = self
            .observation()
            .edge_objects
            .as_ref()
            .and_then(|o| o.contents.as_ref())
            .filter(|c| c.record_uid == record_uid);
        let Some(checked) = checked else {
            return self
                .status
                .drift
                .iter()
                .flat_map(|d| &d.objects)
                .filter(|o| o.found_by.as_deref() == Some(FOUND_BY_CONTENTS))
                .cloned()
                .collect();
        };
        // The record rewritten since it was first read: the manifest it holds now says
        // nothing, and the rewrite is the drift.
        if let Some(record) = &checked.rewritten_record {
            return vec![DriftedObject {
                fields: vec!["data.release".to_owned()],
                found_by: Some(FOUND_BY_CONTENTS.to_owned()),
                ..drifted(
                    &ReleaseObject {
                        api_version: "v1".to_owned(),
                        kind: "Secret".to_owned(),
                        namespace: plan.namespace.clone(),
                        name: record.clone(),
                    },
                    "Changed",
                )
            }];
        }
        let policy = plan.drift.clone().unwrap_or_default();
        let baseline = self
            .status
            .release
            .as_ref()
            .and_then(|r| r.content_baseline.as_deref())
            .unwrap_or_default();
        checked
            .objects
            .iter()
            .filter_map(|(object, seen)| {
                let (change, fields) = match seen {
                    ContentSeen::Same | ContentSeen::Unread(_) => return None,
                    ContentSeen::Missing => ("Deleted", Vec::new()),
                    ContentSeen::Differs(differences) => {
                        let kept: Vec<String> = differences
                            .iter()
                            .filter(|d| !policy.ignores_field(&object.kind, &d.field))
                            .filter(|d| !in_baseline(baseline, object, d))
                            .map(|d| d.field.clone())
                            .take(MAX_FIELDS)
                            .collect();
                        if kept.is_empty() {
                            return None;
                        }
                        ("Changed", kept)
                    }
                };
                Some(DriftedObject {
                    fields,
                    found_by: Some(FOUND_BY_CONTENTS.to_owned()),
                    ..drifted(object, change)
                })
            })
            .collect()
    }

    /// Rule `helm_s_own_reading_is_the_baseline`: the first content check after the
    /// attempt (of the revision recorded in `record_uid`, made by the process that saw
    /// the attempt end) records, on the installed release, the fields helm itself stored
    /// otherwise than the manifest reads (the managed fields then give them to helm
    /// alone): a YAML reading that differs from ours, not an edit. What differs and was
    /// written by anyone else is drift then as later. Kept once found; none found writes
    /// nothing, and no later check takes one.
    pub(super) fn take_content_baseline(&mut self, record_uid: &str) {
        let checked = self
            .observation()
            .edge_objects
            .as_ref()
            .and_then(|o| o.contents.clone())
            .filter(|c| c.record_uid == record_uid);
        let finished = self.status.finished_at.as_ref().map(|f| f.0);
        let Some(release) = self.status.release.as_mut() else {
            return;
        };
        let Some(checked) = checked else {
            return;
        };
        if release.content_baseline.is_some()
            || release.record_uid != record_uid
            || !checked.after_attempt
            || finished.is_some_and(|f| checked.checked_at < f)
        {
            return;
        }
        let baseline = checked
            .objects
            .iter()
            .flat_map(|(object, seen)| match seen {
                // A Secret's value is never known here, so it cannot be pinned: a
                // Secret's difference is never taken for helm's own.
                ContentSeen::Differs(differences) => differences
                    .iter()
                    .filter(|d| d.helm_only && d.live_digest.is_some())
                    .map(|d| ContentBaseline {
                        object: object.describe(),
                        field: d.field.clone(),
                        digest: d.live_digest.clone(),
                    })
                    .collect(),
                _ => Vec::new(),
            })
            .take(MAX_BASELINE)
            .collect::<Vec<_>>();
        // Nothing of helm's own: nothing to keep, and no write for it.
        if !baseline.is_empty() {
            release.content_baseline = Some(baseline);
        }
    }
}

/// The most fields a release's content baseline holds.
const MAX_BASELINE: usize = 32;

/// Whether `difference` of `object` is one helm itself stored, and still holds the value
/// it stored.
fn in_baseline(
    baseline: &[ContentBaseline],
    object: &ReleaseObject,
    difference: &Difference,
) -> bool {
    let described = object.describe();
    baseline.iter().any(|b| {
        b.object == described
            && b.field == difference.field
            && b.digest.is_some()
            && b.digest == difference.live_digest
    })
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
        found_by: None,
    }
}
