//! Drift: after an attempt succeeded, the release on the edge is compared with what the
//! attempt left there, from Helm's own storage records (their labels, watched; a record's
//! content is read once, when a revision the installer did not make appears).
//!
//! Nothing is corrected here: drift is reported (the Drifted condition, Ready=False,
//! Stalled=True, an Event), and a raised spec.retry seals the same plan again as a repair.

use k8s_openapi::jiff::SignedDuration;
use serde_json::Value;

use crate::{
    api::{Drift, InstalledRelease, JobResult, Plan, SealedPlan, WorkspaceStatus},
    text::shown,
};

use super::{
    action::{Next, Note},
    decision_draft::DecisionDraft,
    observation::ReleaseRevision,
};

pub use super::observation::ReleaseContent;

/// Drift by contents: the manifest's fields compared with what is live.
pub mod contents;
/// Whether an edit came after the attempt: by the edge's order of writes.
pub mod edit_order;
/// Drift reasons: the Drifted condition's reason.
pub mod reason;
/// What a revision made outside the installer installs, in a sentence.
mod revision_difference;
/// The kinds of a release's objects drift cannot be read for, named.
pub mod unfollowed;

pub use revision_difference::{describe, first_difference};

/// How long after a Job's completion a revision may have been made and still count as the
/// attempt's own: helm writes its record before it exits, the job controller notes the
/// completion after. The rest is room for a slow edge.
const OWN_REVISION_SLACK: SignedDuration = SignedDuration::from_secs(30);

/// Whether the shell should read the content of `newest` to describe it: it is not the
/// installed revision, and the recorded drift does not describe it yet.
pub fn needs_content(status: &WorkspaceStatus, newest: &ReleaseRevision) -> bool {
    let installed = status
        .release
        .as_ref()
        .is_some_and(|r| r.record_uid == newest.uid && newest.status == "deployed");
    let described =
        status.drift.as_ref().and_then(|d| d.record_uid.as_deref()) == Some(newest.uid.as_str());
    !installed && !described
}

/// The check's next time: the interval, spread by the Workspace's UID so that a thousand
/// installs made together are not all checked in the same second.
pub fn next_check(uid: &str, interval: u64) -> Next {
    if interval == 0 {
        return Next::Idle;
    }
    let spread = interval / 10 + 1;
    let offset = uid
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b.into()))
        % spread;
    Next::After(interval + offset)
}

impl DecisionDraft<'_> {
    /// Rule `installed_release_is_checked_for_drift`: an installed attempt's release is
    /// compared with the revision it left; the first check records that revision.
    pub fn check_drift(&mut self) -> Next {
        if self.settings().drift_interval_seconds == 0
            || self.status.job_result != Some(JobResult::Succeeded)
            || !self.status.cleaned_up
            || self.status.deleting
        {
            return Next::Idle;
        }
        let Some(sealed) = self.current_plan().cloned() else {
            return Next::Idle;
        };
        let next = self.content_check_next(next_check(
            self.uid(),
            self.settings().drift_interval_seconds,
        ));
        // An edge that cannot be read is judged later, not now.
        let Some(edge_objects) = self.observation().edge_objects.clone() else {
            return next;
        };
        let plan = &sealed.plan;
        let newest = edge_objects.release.as_ref();
        if let Some(record) = newest
            && record.is_transient()
            && self.recently_changed(record)
        {
            // Someone's helm is at work on it: judge what it leaves, not its steps.
            return Next::After(5);
        }
        let baseline = self.status.release.clone();
        let found = match (baseline.as_ref(), newest) {
            (None, Some(record)) if record.status == "deployed" && self.made_by_attempt(record) => {
                self.status.release = Some(installed(plan, record));
                // The objects too: a content check made right after the attempt may
                // already show an edit made while it ran.
                self.take_content_baseline(&record.uid);
                self.record_unfollowed(plan, &record.uid);
                self.object_drift(plan, &record.uid)
            }
            // Not seen yet: the watch may lag the Job's completion by a moment; after that,
            // a release with no record at all is gone.
            (None, None) if !self.long_finished() => None,
            (Some(known), Some(record))
                if record.uid == known.record_uid && record.status == "deployed" =>
            {
                self.take_content_baseline(&known.record_uid);
                self.record_unfollowed(plan, &known.record_uid);
                self.object_drift(plan, &known.record_uid)
            }
            (baseline, None) => Some(Drift {
                reason: reason::RELEASE_MISSING.to_owned(),
                message: format!(
                    "release {} is no longer installed in namespace {} on edge {}{}: it was uninstalled outside the installer",
                    plan.release,
                    plan.namespace,
                    plan.edge_name,
                    baseline
                        .map(|b| format!(
                            " (attempt {} left revision {})",
                            plan.attempt, b.revision
                        ))
                        .unwrap_or_default(),
                ),
                revision: None,
                record_uid: None,
                detected_at: self.now(),
                objects: Vec::new(),
                automatic_repair: None,
            }),
            (baseline, Some(record)) => {
                let replaced = baseline
                    .is_some_and(|b| record.uid != b.record_uid && record.revision <= b.revision);
                let (why, what) = if replaced {
                    (
                        reason::RELEASE_REPLACED,
                        format!(
                            "release {} was uninstalled and installed again outside the installer: revision {} ({})",
                            plan.release,
                            record.revision,
                            shown(&record.status)
                        ),
                    )
                } else if baseline.is_some_and(|b| b.record_uid == record.uid) {
                    (
                        reason::RELEASE_CHANGED,
                        format!(
                            "revision {} of release {} is now {}, not deployed",
                            record.revision,
                            plan.release,
                            shown(&record.status)
                        ),
                    )
                } else {
                    (
                        reason::RELEASE_CHANGED,
                        format!(
                            "release {} is at revision {} ({}), made outside the installer{}",
                            plan.release,
                            record.revision,
                            shown(&record.status),
                            baseline
                                .map(|b| format!(" after revision {}", b.revision))
                                .unwrap_or_default()
                        ),
                    )
                };
                let described = self
                    .status
                    .drift
                    .as_ref()
                    .is_some_and(|d| d.record_uid.as_deref() == Some(record.uid.as_str()));
                let content = match &edge_objects.release_content {
                    Some(content) => describe(content, plan, self.checked_values(plan)),
                    // Described already, when this revision was first found.
                    None if described => return next,
                    None => String::new(),
                };
                Some(Drift {
                    reason: why.to_owned(),
                    message: format!(
                        "{what} in namespace {} on edge {}{content}",
                        plan.namespace, plan.edge_name
                    ),
                    revision: Some(record.revision),
                    record_uid: Some(record.uid.clone()),
                    detected_at: self.now(),
                    objects: Vec::new(),
                    automatic_repair: None,
                })
            }
        };
        match found {
            None => self.status.drift = None,
            Some(mut drift) => {
                let name = self.ws().metadata.name.clone().unwrap_or_default();
                drift.message = format!(
                    "{}. To install attempt {}'s plan again: kubectl provider repair {name} (raises spec.retry)",
                    drift.message, plan.attempt
                );
                let new = self.status.drift.as_ref().is_none_or(|d| {
                    d.reason != drift.reason
                        || d.record_uid != drift.record_uid
                        || d.objects != drift.objects
                });
                if new {
                    // A repair asked for already answers this drift too.
                    drift.automatic_repair = self
                        .status
                        .drift
                        .as_ref()
                        .and_then(|d| d.automatic_repair.clone());
                    // The record found, or for a missing release the one that went.
                    let gone = self.status.release.as_ref().map(|r| r.record_uid.as_str());
                    let which = drift.record_uid.as_deref().or(gone).unwrap_or("missing");
                    self.event(
                        Note::warning("ReleaseDrifted", drift.message.clone())
                            .with_action(format!("FindDrift/{}", shown(which))),
                    );
                    self.status.drift = Some(drift);
                }
                self.repair_automatically(&sealed);
            }
        }
        next
    }

    /// `next`, or sooner when the installed revision's next content check is due then
    /// (its interval after the last one), so that checks keep their interval whatever
    /// the drift interval.
    fn content_check_next(&self, next: Next) -> Next {
        let interval = self.settings().content_check_interval_seconds;
        let checked = self
            .observation()
            .edge_objects
            .as_ref()
            .and_then(|o| o.contents.as_ref());
        let (Some(checked), 1..) = (checked, interval) else {
            return next;
        };
        let since = (self.observation().now.as_second() - checked.checked_at.as_second()).max(0);
        let due_in = interval.saturating_sub(since as u64).max(1);
        match next {
            Next::After(seconds) => Next::After(seconds.min(due_in)),
            Next::Idle => Next::After(due_in),
            other => other,
        }
    }

    /// The sealed plan, when it is the recorded attempt.
    pub fn current_plan(&self) -> Option<&SealedPlan> {
        self.ws()
            .spec
            .plan
            .as_ref()
            .filter(|sealed| self.status.attempt_id.as_deref() == Some(&sealed.plan.attempt_id))
    }

    /// Whether Helm changed `revision` within the last ten minutes (a helm killed mid-way
    /// leaves a record pending for good; that is then reported as it is).
    fn recently_changed(&self, revision: &ReleaseRevision) -> bool {
        let changed = revision
            .modified
            .or_else(|| revision.created.as_ref().map(|c| c.0.as_second()));
        // A time in the future is a forged record's, not a helm at work.
        changed.is_none_or(|at| (0..600).contains(&(self.observation().now.as_second() - at)))
    }

    /// Whether the attempt's Job completed long enough ago for its release's record to be
    /// in any watch cache.
    fn long_finished(&self) -> bool {
        self.status
            .finished_at
            .as_ref()
            .is_none_or(|f| f.0 + OWN_REVISION_SLACK + OWN_REVISION_SLACK < self.observation().now)
    }

    /// Whether `revision` was made by the recorded attempt's Job: it is no newer than the
    /// Job's completion.
    fn made_by_attempt(&self, revision: &ReleaseRevision) -> bool {
        match (&revision.created, &self.status.finished_at) {
            (Some(created), Some(finished)) => created.0 <= finished.0 + OWN_REVISION_SLACK,
            _ => true,
        }
    }

    /// At success: records the revision the attempt left (when the edge's cache has it
    /// already; otherwise the first drift check does) and keeps the plan for a rollback.
    pub fn record_installed(&mut self) {
        let Some(sealed) = self.current_plan().cloned() else {
            return;
        };
        self.status.drift = None;
        self.status.release = self
            .observation()
            .edge_objects
            .as_ref()
            .and_then(|r| r.release.as_ref())
            .filter(|r| r.status == "deployed" && self.made_by_attempt(r))
            .map(|r| installed(&sealed.plan, r));
        let spec = &self.ws().spec;
        let attempt = sealed.plan.attempt;
        if let Some(record) = self
            .status
            .attempts
            .iter_mut()
            .rev()
            .find(|r| r.attempt == attempt)
        {
            record.kept = Some(crate::api::KeptPlan {
                version: spec.version.clone(),
                values: spec.values.clone(),
                plan: sealed,
            });
        }
        // Rule `kept_plans_are_bounded`: newest first, at most rollback_history of them
        // and, past the newest, at most KEPT_PLANS_BYTES together.
        let keep = self.settings().rollback_history;
        let (mut kept, mut bytes) = (0, 0);
        for record in self.status.attempts.iter_mut().rev() {
            let Some(plan) = &record.kept else {
                continue;
            };
            kept += 1;
            bytes += serde_json::to_vec(plan).map(|json| json.len()).unwrap_or(0);
            if kept > keep || (kept > 1 && bytes > super::settings::KEPT_PLANS_BYTES) {
                record.kept = None;
            }
        }
    }
}

impl DecisionDraft<'_> {
    /// The plan's values, when they are at hand: inline in the plan, or read by digest and
    /// checked.
    fn checked_values<'v>(&'v self, plan: &'v Plan) -> Option<&'v Value> {
        match crate::plan_values::source_of(plan) {
            crate::plan_values::Source::Inline(values) => Some(values),
            crate::plan_values::Source::Stored { .. } => match &self.observation().values {
                super::observation::ValuesCheck::Verified { values, .. } => Some(values.as_ref()),
                _ => None,
            },
        }
    }
}

fn installed(plan: &Plan, revision: &ReleaseRevision) -> InstalledRelease {
    InstalledRelease {
        name: plan.release.clone(),
        revision: revision.revision,
        record_uid: revision.uid.clone(),
        content_baseline: None,
    }
}

mod automatic_repair;
mod objects;
mod stopped_repair;

pub use automatic_repair::REQUEST_AGAIN_SECONDS;
pub use stopped_repair::{REPAIR_LOOP, repair_stopped};
#[cfg(test)]
mod tests;
