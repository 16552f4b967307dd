//! Status: tracking the attempt's Job to its result, and recording it.

use crate::{api::JobResult, text::object_key};

use super::{
    action::{Action, Next, Note, RunnerLog},
    conditions::{Activity, Failure, reason},
    decision_draft::DecisionDraft,
    observation::{JobOutcome, JobState},
};

/// How much of helm's own words a failure message carries.
pub const HELM_MESSAGE_LIMIT: usize = 2048;

/// Why a Job failed, for a tenant who cannot see the edge: helm's own words (the end of its
/// output, from the runner's termination message), sanitized and bounded; the Job's
/// condition when there are none.
fn failure_text(
    attempt: i64,
    job_key: &str,
    edge: &str,
    job: &JobState,
    why: &str,
    message: &str,
) -> String {
    let helm = job
        .runner
        .as_ref()
        .and_then(|pod| pod.message.as_deref())
        .map(|words| crate::text::sanitized_tail(words, HELM_MESSAGE_LIMIT))
        .filter(|words| !words.is_empty());
    match helm {
        Some(words) => format!(
            "attempt {attempt}: helm failed on edge {edge} (Job {job_key}): {words}\nThe whole log: kubectl provider logs. To run the same plan again, raise spec.retry"
        ),
        None => format!(
            "attempt {attempt}: Job {job_key} on edge {edge} failed ({why}: {message}); kubectl provider logs shows the runner's log when there is one. To run the same plan again, raise spec.retry"
        ),
    }
}

impl DecisionDraft<'_> {
    /// Rule `job_result_is_recorded_first`: a terminal Job's result goes to status before
    /// anything is revoked; a running one is tracked.
    pub(super) fn track_job(&mut self, job: &JobState) -> Next {
        let attempt_id = self.status.attempt_id.clone().unwrap_or_default();
        let recorded_uid = self.status.job_uid.clone();
        let theirs = !job.object.of_attempt(self.uid(), &attempt_id)
            || recorded_uid
                .as_deref()
                .is_some_and(|uid| uid != job.object.uid);
        let name = self.status.job.clone().unwrap_or_default();
        let namespace = self.target_namespace();
        let job_key = object_key(&namespace, &name);
        if theirs {
            if job.object.deleting {
                self.activity = Activity::idle(
                    reason::WAITING_FOR_PREVIOUS_ATTEMPT,
                    format!("the Job {job_key} of an earlier Workspace is being deleted"),
                );
                return Next::After(5);
            }
            if recorded_uid.is_some() {
                // The Job we created was replaced by someone else's.
                return self.job_lost();
            }
            if self.left_by_lost_attempt(&job.object) {
                return self.wait_for_sweep(&format!("Job {job_key}"), &job.object);
            }
            self.reject(
                reason::JOB_CONFLICT,
                format!(
                    "a Job {job_key} exists on edge {} and is not this attempt's (it is labelled for Workspace UID {:?}); remove it, then raise spec.retry",
                    self.edge_name(),
                    job.object.label(super::names::LABEL_WORKSPACE_UID)
                ),
            );
            return self.cleanup();
        }
        if recorded_uid.is_none() {
            self.status.job_uid = Some(job.object.uid.clone());
        }
        let attempt = self.status.attempt.unwrap_or_default();
        match &job.outcome {
            JobOutcome::Running => {
                self.activity = Activity::busy(
                    reason::JOB_RUNNING,
                    format!(
                        "attempt {attempt}: Job {job_key} on edge {} runs helm upgrade --install",
                        self.edge_name()
                    ),
                );
                Next::After(300)
            }
            JobOutcome::Succeeded => {
                self.record_result(JobResult::Succeeded, job.finished_at.clone(), None);
                self.status.finished_resource_version =
                    Some(job.object.resource_version.clone()).filter(|v| !v.is_empty());
                self.record_installed();
                self.event(Note::normal(
                    "JobSucceeded",
                    format!(
                        "attempt {attempt}{}: Job {job_key} on edge {} completed; the runner's identity is revoked",
                        self.attempt_summary(attempt),
                        self.edge_name()
                    ),
                ));
                self.cleanup()
            }
            JobOutcome::Failed {
                reason: why,
                message,
            } => {
                let text = failure_text(attempt, &job_key, &self.edge_name(), job, why, message);
                self.event(Note::warning("JobFailed", text.clone()));
                self.record_result(
                    JobResult::Failed,
                    job.finished_at.clone(),
                    Some(Failure::new(reason::JOB_FAILED, text)),
                );
                if let Some(pod) = &job.runner {
                    self.actions.push(Action::KeepRunnerLog(RunnerLog {
                        namespace: namespace.clone(),
                        pod: pod.name.clone(),
                        attempt,
                    }));
                }
                self.cleanup()
            }
        }
    }

    /// Rule `lost_job_fails_the_attempt`: the Job was recorded and is gone without a
    /// result (its finalizer was forced off).
    pub(super) fn job_lost(&mut self) -> Next {
        let text = format!(
            "attempt {}: Job {} (UID {}) disappeared from edge {} before its result was recorded; raise spec.retry to run the plan again",
            self.status.attempt.unwrap_or_default(),
            self.status.job.clone().unwrap_or_default(),
            self.status.job_uid.clone().unwrap_or_default(),
            self.edge_name()
        );
        self.event(Note::warning("JobLost", text.clone()));
        self.record_result(
            JobResult::Failed,
            None,
            Some(Failure::new(reason::JOB_LOST, text)),
        );
        self.cleanup()
    }

    /// ` (version V, requested by U)` for the recorded attempt `attempt`, when recorded.
    fn attempt_summary(&self, attempt: i64) -> String {
        self.status
            .attempts
            .iter()
            .rev()
            .find(|r| r.attempt == attempt)
            .map(|r| format!(" (version {}, requested by {})", r.version, r.owner))
            .unwrap_or_default()
    }
}
