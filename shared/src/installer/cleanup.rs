//! ReconcileCleanup and Cleanup: after a terminal result is recorded, revoke the runner's
//! identity, then release the Job's finalizer, then say so. The provider's runtime
//! credential stays.

use super::{
    action::{Action, Next},
    conditions::{Activity, reason},
    decision_draft::DecisionDraft,
    names::AttemptNames,
    observation::EdgeObjects,
    patch,
};

impl DecisionDraft<'_> {
    /// Rules `identity_is_revoked_after_the_result`, `job_is_released_after_revocation`,
    /// `cleanup_is_recorded_last`.
    pub fn cleanup(&mut self) -> Next {
        if self.status.cleaned_up {
            // Said before the drift check, whose automatic repair request comes last.
            self.activity = self.done_activity();
            return self.check_drift();
        }
        let edge_objects = match self.reachable("revoke the runner's identity") {
            Ok(edge_objects) => edge_objects,
            Err(next) => return next,
        };
        // Said before the first write, so the result and this activity go out together.
        self.activity = Activity::busy(
            reason::CLEANING_UP,
            format!(
                "attempt {}: the result is recorded; revoking the runner's identity and releasing its Job",
                self.status.attempt.unwrap_or_default()
            ),
        );
        // The result is written before the first of these (DecisionDraft::edge), and the
        // cleanup is recorded after the last: the shell stops at the first that fails, so
        // `cleanedUp` is only ever written once all of them are done.
        self.revoke_identity(&edge_objects);
        self.release_job(&edge_objects);
        self.remove_earlier_jobs(&edge_objects);
        self.status.cleaned_up = true;
        self.activity = self.done_activity();
        // An installed release is checked for drift at once: that first check starts
        // following its objects, so a hand edit right after the install is seen.
        if self.status.job_result == Some(crate::api::JobResult::Succeeded)
            && self.settings().drift_interval_seconds > 0
        {
            return Next::Continue;
        }
        Next::Idle
    }

    /// Rule `earlier_attempts_jobs_are_removed`: the Jobs of this Workspace's earlier
    /// attempts (labelled with its UID, not the recorded attempt's) are released and
    /// deleted, by UID. Only the latest attempt's Job stays on the edge, for its log;
    /// otherwise every attempt would leave a Job and its Pod for the Workspace's life, and
    /// a Workspace created later under the same name would meet them.
    pub fn remove_earlier_jobs(&mut self, edge_objects: &EdgeObjects) {
        let namespace = self.target_namespace();
        for (name, job) in &edge_objects.earlier_jobs {
            if !job.owned_by(self.uid()) || job.deleting {
                continue;
            }
            if let Some(patch) = patch::remove_finalizer(job) {
                self.edge(Action::ReleaseJob {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    patch,
                });
            }
            self.delete_on_edge(super::action::Kind::Job, &namespace, name, &job.uid);
        }
    }

    /// Deletes the recorded attempt's ServiceAccount, Role, RoleBinding and values
    /// Secret that are still there; says whether there were any.
    pub fn revoke_identity(&mut self, edge_objects: &EdgeObjects) -> bool {
        let attempt_id = self.status.attempt_id.clone().unwrap_or_default();
        let Some(job) = self.status.job.clone() else {
            return false;
        };
        let namespace = self.target_namespace();
        let names = AttemptNames::for_job(&job);
        let mut any = false;
        for (kind, observed, name) in edge_objects.runner_objects(&names) {
            if let Some(object) = observed
                && object.of_attempt(self.uid(), &attempt_id)
                && !object.deleting
            {
                any = true;
                self.delete_on_edge(kind, &namespace, name, &object.uid);
            }
        }
        any
    }

    /// Removes the installer's finalizer from the recorded attempt's Job; says whether it
    /// had one.
    pub fn release_job(&mut self, edge_objects: &EdgeObjects) -> bool {
        let attempt_id = self.status.attempt_id.clone().unwrap_or_default();
        let Some(job) = &edge_objects.job else {
            return false;
        };
        if !job.object.of_attempt(self.uid(), &attempt_id) {
            return false;
        }
        let Some(patch) = patch::remove_finalizer(&job.object) else {
            return false;
        };
        self.edge(Action::ReleaseJob {
            namespace: self.target_namespace(),
            name: self.status.job.clone().unwrap_or_default(),
            patch,
        });
        true
    }
}
