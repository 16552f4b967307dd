//! Start and Status: which attempt runs, binding a sealed plan to its Workspace, and
//! following the attempt's Job to its result.

use crate::api::{AttemptRecord, JobResult, Plan, Target};

use super::{
    action::{Action, Next, Note, RunnerLog},
    conditions::{Failure, Outlook, reason},
    focus::{self, Recorded},
    machine::Machine,
    observed::{EdgeState, JobOutcome, JobState, SealCheck},
};

/// Whether a sealed plan may start a new attempt.
enum Verdict {
    Run,
    /// The published keys cannot be read: wait, do not judge.
    Wait(String),
    /// Never run it: why, as a user reads it.
    Refuse(String),
}

/// How much of helm's own words a failure message carries.
pub const HELM_MESSAGE_LIMIT: usize = 2048;

/// Why a Job failed, for a tenant who cannot see the edge: helm's own words (the end of its
/// output, from the runner's termination message), sanitized and bounded; the Job's
/// condition when there are none.
fn failure_text(
    attempt: i64,
    namespace: &str,
    job_name: &str,
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
            "attempt {attempt}: helm failed on edge {edge} (Job {namespace}/{job_name}): {words}\nThe whole log: kubectl provider logs. To run the same plan again, raise spec.retry"
        ),
        None => format!(
            "attempt {attempt}: Job {namespace}/{job_name} on edge {edge} failed ({why}: {message}); kubectl provider logs shows the runner's log when there is one. To run the same plan again, raise spec.retry"
        ),
    }
}

impl Machine<'_> {
    /// The rules, in order.
    pub fn decide(&mut self) -> Next {
        if self.ws.metadata.deletion_timestamp.is_some() {
            return self.prepare_delete();
        }
        let recorded = focus::recorded(&self.status);
        let Some(sealed) = self.ws.spec.plan.as_ref() else {
            return self.await_plan(recorded);
        };
        if !self.has_finalizer() {
            // Before anything exists on the edge, so deletion always finds it.
            self.actions.push(Action::AddFinalizer);
        }
        let plan = &sealed.plan;
        if let Some(r) = &recorded
            && !focus::is_sealed_attempt(r, plan)
        {
            if plan.attempt <= r.attempt {
                return self.refuse_replay(plan, r);
            }
            if !self.status.cleaned_up {
                return self.finish_older(r, plan.attempt);
            }
        }
        if !recorded
            .as_ref()
            .is_some_and(|r| focus::is_sealed_attempt(r, plan))
        {
            match self.verdict() {
                Verdict::Run => self.bind(plan),
                Verdict::Wait(why) => {
                    self.outlook = Outlook::idle(
                        reason::KEYS_UNAVAILABLE,
                        format!(
                            "cannot verify the seal of attempt {}: {why}; the published keys are read again shortly",
                            plan.attempt
                        ),
                    );
                    return Next::After(30);
                }
                Verdict::Refuse(why) => {
                    self.bind(plan);
                    self.reject(
                        reason::SEAL_INVALID,
                        format!(
                            "attempt {} is not run: {why}. Nothing was created on the edge. A plan refused for its seal is never run, nor retried: change spec.recipe, spec.edge, spec.version or spec.values so the admission webhook seals a new plan",
                            plan.attempt
                        ),
                    );
                    // Nothing was created for it, so there is nothing to clean up.
                    self.status.cleaned_up = true;
                    self.outlook = self.done_outlook();
                    return Next::Idle;
                }
            }
        }
        self.run_attempt(plan)
    }

    /// Rule `unsealed_waits_for_the_webhook`.
    fn await_plan(&mut self, recorded: Option<Recorded>) -> Next {
        if let Some(r) = recorded
            && !self.status.cleaned_up
        {
            // The plan was removed under a running attempt: finish that attempt.
            return self.finish_older(&r, r.attempt + 1);
        }
        self.outlook = Outlook::idle(
            reason::AWAITING_PLAN,
            "spec.plan is not sealed: the admission webhook seals it when the Workspace is written; check that the webhook is registered",
        );
        Next::Idle
    }

    /// Rule `plan_must_verify`: the shell checks the plan with
    /// [`crate::verify::verify_plan`] (the seal, no dry run, bound to this very Workspace:
    /// namespace, name, UID, and for a first attempt its creation time) and reports it here.
    fn verdict(&self) -> Verdict {
        match &self.o.seal {
            SealCheck::Verified => Verdict::Run,
            SealCheck::KeysUnavailable(why) => Verdict::Wait(why.clone()),
            SealCheck::Invalid(why) => Verdict::Refuse(why.clone()),
            SealCheck::NoPlan => Verdict::Refuse("there is no plan to verify".into()),
        }
    }

    /// Rule `new_attempt_binds_to_the_workspace`: the sealed attempt becomes the recorded
    /// one, bound to this Workspace's UID, before anything is created for it.
    fn bind(&mut self, plan: &Plan) {
        let server = match &self.o.edge {
            EdgeState::Ready(route) => Some(route.server.clone()),
            _ => None,
        };
        let s = &mut self.status;
        s.attempt = Some(plan.attempt);
        s.attempt_id = Some(plan.attempt_id.clone());
        s.workspace_uid = Some(self.uid.clone());
        s.job = Some(plan.job.clone());
        s.target = Some(Target {
            edge: plan.edge_name.clone(),
            cluster: plan.cluster.clone(),
            namespace: plan.namespace.clone(),
            server,
        });
        s.job_uid = None;
        s.job_result = None;
        s.finished_at = None;
        s.cleaned_up = false;
        s.preparation = None;
        s.namespace_admission_known = false;
        s.namespace_admitted = false;
        s.attempts.push(AttemptRecord {
            attempt: plan.attempt,
            attempt_id: plan.attempt_id.clone(),
            version: plan.version.clone(),
            owner: plan.owner.username.clone(),
            job: plan.job.clone(),
            result: None,
            finished_at: None,
            message: None,
            cause: plan.cause,
            restores: plan.restores,
            kept: None,
        });
        // The next success records its own release; drift of the last one is moot.
        s.release = None;
        s.drift = None;
        let keep = self.settings.attempt_history.max(1);
        if s.attempts.len() > keep {
            let drop = s.attempts.len() - keep;
            s.attempts.drain(..drop);
        }
        // No Event here: the Ready and Progressing conditions say an attempt runs, and the
        // Event of its result (JobSucceeded, JobFailed, ...) names what ran. One Event per
        // attempt keeps the writes per attempt low.
        self.failure = None;
    }

    /// The sealed attempt, recorded: follow its Job, or prepare it.
    fn run_attempt(&mut self, plan: &Plan) -> Next {
        if self.status.job_result.is_some() {
            return self.cleanup();
        }
        let remote = match self.reachable("start the attempt") {
            Ok(remote) => remote,
            Err(next) => return next,
        };
        if let Some(job) = &remote.job {
            return self.follow_job(job);
        }
        if self.status.job_uid.is_some() {
            return self.job_lost();
        }
        self.prepare(plan, &remote)
    }

    /// Rule `older_attempt_finishes_first`: a newer plan is sealed while the recorded
    /// attempt is unfinished. Its Job runs to its end and is cleaned up; an attempt that
    /// never got a Job is superseded.
    fn finish_older(&mut self, r: &Recorded, newer: i64) -> Next {
        if self.status.job_result.is_some() {
            return self.cleanup();
        }
        let remote = match self.reachable("finish the previous attempt") {
            Ok(remote) => remote,
            Err(next) => return next,
        };
        if let Some(job) = &remote.job {
            let next = self.follow_job(job);
            if self.status.job_result.is_none() {
                self.outlook = Outlook::busy(
                    reason::WAITING_FOR_PREVIOUS_ATTEMPT,
                    format!(
                        "attempt {newer} is sealed; it starts when the Job {} of attempt {} ends",
                        r.job, r.attempt
                    ),
                );
            }
            return next;
        }
        if self.status.job_uid.is_some() {
            return self.job_lost();
        }
        self.reject(
            reason::SUPERSEDED,
            format!(
                "attempt {} never started its Job; attempt {newer} replaces it",
                r.attempt
            ),
        );
        self.cleanup()
    }

    /// Rule `replayed_plan_is_refused`: a plan no newer than the recorded attempt, yet
    /// not that attempt, is a replay or an alteration.
    fn refuse_replay(&mut self, plan: &Plan, r: &Recorded) -> Next {
        let next = if self.status.cleaned_up {
            Next::Idle
        } else {
            self.finish_older(r, r.attempt + 1)
        };
        let message = format!(
            "spec.plan holds attempt {} ({}), but attempt {} ({}) is already recorded: a replayed or altered plan is never run; change spec.recipe, spec.edge, spec.version or spec.values so the webhook seals a new attempt",
            plan.attempt, plan.attempt_id, r.attempt, r.attempt_id
        );
        self.outlook = Outlook::idle(reason::SEAL_INVALID, message.clone());
        self.failure = Some(Failure::new(reason::SEAL_INVALID, message));
        next
    }

    /// Rule `job_result_is_recorded_first`: a terminal Job's result goes to status before
    /// anything is revoked; a running one is followed.
    fn follow_job(&mut self, job: &JobState) -> Next {
        let attempt_id = self.status.attempt_id.clone().unwrap_or_default();
        let recorded_uid = self.status.job_uid.clone();
        let theirs = !job.object.of_attempt(&self.uid, &attempt_id)
            || recorded_uid
                .as_deref()
                .is_some_and(|uid| uid != job.object.uid);
        let name = self.status.job.clone().unwrap_or_default();
        let namespace = self
            .status
            .target
            .as_ref()
            .map(|t| t.namespace.clone())
            .unwrap_or_default();
        if theirs {
            if job.object.deleting {
                self.outlook = Outlook::idle(
                    reason::WAITING_FOR_PREVIOUS_ATTEMPT,
                    format!("the Job {namespace}/{name} of an earlier Workspace is being deleted"),
                );
                return Next::After(5);
            }
            if recorded_uid.is_some() {
                // The Job we created was replaced by someone else's.
                return self.job_lost();
            }
            self.reject(
                reason::JOB_CONFLICT,
                format!(
                    "a Job {namespace}/{name} exists on edge {} and is not this attempt's (it is labelled for Workspace UID {:?}); remove it, then raise spec.retry",
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
                self.outlook = Outlook::busy(
                    reason::JOB_RUNNING,
                    format!(
                        "attempt {attempt}: Job {namespace}/{name} on edge {} runs helm upgrade --install",
                        self.edge_name()
                    ),
                );
                Next::After(300)
            }
            JobOutcome::Succeeded => {
                self.record_result(JobResult::Succeeded, job.finished_at.clone(), None);
                self.record_installed();
                self.event(Note::normal(
                    "JobSucceeded",
                    format!(
                        "attempt {attempt}{}: Job {namespace}/{name} on edge {} completed; the runner's identity is revoked",
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
                let text = failure_text(
                    attempt,
                    &namespace,
                    &name,
                    &self.edge_name(),
                    job,
                    why,
                    message,
                );
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
    fn job_lost(&mut self) -> Next {
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

    /// The outlook of a finished and cleaned-up attempt.
    pub fn done_outlook(&self) -> Outlook {
        let attempt = self.status.attempt.unwrap_or_default();
        match (&self.failure, self.status.job_result) {
            (Some(failure), _) => Outlook::idle(&failure.reason, failure.message.clone()),
            (None, Some(JobResult::Succeeded)) => {
                let version = self
                    .status
                    .attempts
                    .iter()
                    .rev()
                    .find(|r| r.attempt == attempt)
                    .map(|r| r.version.clone())
                    .unwrap_or_default();
                let (namespace, edge) = self
                    .status
                    .target
                    .as_ref()
                    .map(|t| (t.namespace.clone(), t.edge.clone()))
                    .unwrap_or_default();
                Outlook::idle(
                    reason::INSTALLED,
                    format!(
                        "attempt {attempt}: version {version} is installed in namespace {namespace} on edge {edge}"
                    ),
                )
            }
            (None, _) => Outlook::idle(reason::JOB_FAILED, format!("attempt {attempt} failed")),
        }
    }
}
