//! Start: which attempt runs, and binding a sealed plan to its Workspace.

use crate::api::{AttemptRecord, JobResult, Plan, Target};

use super::{
    action::{Action, Next},
    attempt_reads::Recorded,
    conditions::{Activity, Failure, reason},
    decision_draft::DecisionDraft,
    observation::{EdgeObjects, EdgeState, SealCheck},
};

/// Whether a sealed plan may start a new attempt.
pub(super) enum Verdict {
    Run,
    /// The published keys cannot be read: wait, do not judge.
    Wait(String),
    /// Never run it: why, as a user reads it.
    Refuse(String),
}

impl DecisionDraft<'_> {
    /// Rule `values_are_owned_by_their_workspace`: values the webhook stored before the
    /// Workspace had a UID are made the Workspace's as soon as they are read (while the
    /// attempt prepares, whatever the edge's state), so that they go when it goes and no
    /// longer count as waiting in the webhook's bound.
    pub(super) fn own_values(&mut self) {
        let super::observation::ValuesCheck::Verified {
            uid,
            owners,
            labeled,
            ..
        } = &self.observation().values
        else {
            return;
        };
        let Some(sealed) = &self.ws().spec.plan else {
            return;
        };
        let crate::plan_values::Source::Stored { digest } =
            crate::plan_values::source_of(&sealed.plan)
        else {
            return;
        };
        if self.uid().is_empty() || owners.iter().any(|owner| owner == self.uid()) {
            return;
        }
        let name = crate::plan_values::object_name(&sealed.plan.workspace.name, digest);
        let own = super::action::OwnValues::new(&name, uid, *labeled, self.ws());
        self.actions.push(Action::OwnPlanValues(Box::new(own)));
    }

    /// Rule `unsealed_waits_for_the_webhook`.
    pub(super) fn await_plan(&mut self, recorded: Option<Recorded>) -> Next {
        if let Some(unfinished) = recorded
            && !self.status.cleaned_up
        {
            // The plan was removed under a running attempt: finish that attempt.
            return self.finish_older(&unfinished, unfinished.attempt + 1);
        }
        self.activity = Activity::idle(
            reason::AWAITING_PLAN,
            "spec.plan is not sealed: the admission webhook seals it when the Workspace is written; check that the webhook is registered",
        );
        Next::Idle
    }

    /// Rule `plan_must_verify`: the shell checks the plan with
    /// [`crate::verify::verify_plan`] (the seal, no dry run, bound to this very Workspace:
    /// namespace, name, UID, and for a first attempt its creation time) and reports it here.
    pub(super) fn verdict(&self) -> Verdict {
        match &self.observation().seal {
            SealCheck::Verified => Verdict::Run,
            SealCheck::KeysUnavailable(why) => Verdict::Wait(why.clone()),
            SealCheck::Invalid(why) => Verdict::Refuse(why.clone()),
            SealCheck::NoPlan => Verdict::Refuse("there is no plan to verify".into()),
        }
    }

    /// Rule `new_attempt_binds_to_the_workspace`: the sealed attempt becomes the recorded
    /// one, bound to this Workspace's UID, before anything is created for it.
    pub(super) fn bind(&mut self, plan: &Plan) {
        let server = match &self.observation().edge {
            EdgeState::Ready(route) => Some(route.server.clone()),
            _ => None,
        };
        let uid = self.uid().to_owned();
        let keep = self.settings().attempt_history.max(1);
        let status = &mut self.status;
        status.attempt = Some(plan.attempt);
        status.attempt_id = Some(plan.attempt_id.clone());
        status.workspace_uid = Some(uid);
        status.job = Some(plan.job.clone());
        status.target = Some(Target {
            edge: plan.edge_name.clone(),
            cluster: plan.cluster.clone(),
            namespace: plan.namespace.clone(),
            server,
        });
        status.job_uid = None;
        status.job_result = None;
        status.finished_at = None;
        status.finished_resource_version = None;
        status.cleaned_up = false;
        status.preparation = None;
        status.namespace_admission_known = false;
        status.namespace_admitted = false;
        status.attempts.push(AttemptRecord {
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
        status.release = None;
        status.drift = None;
        status.unfollowed.clear();
        if status.attempts.len() > keep {
            let drop = status.attempts.len() - keep;
            status.attempts.drain(..drop);
        }
        // No Event here: the Ready and Progressing conditions say an attempt runs, and the
        // Event of its result (JobSucceeded, JobFailed, ...) names what ran. One Event per
        // attempt keeps the writes per attempt low.
        self.failure = None;
    }

    /// The sealed attempt, recorded: track its Job, or prepare it.
    pub(super) fn run_attempt(&mut self, plan: &Plan) -> Next {
        let edge_objects = match self.unfinished("start the attempt") {
            Ok(edge_objects) => edge_objects,
            Err(next) => return next,
        };
        if let Some(job) = &edge_objects.job {
            return self.track_job(job);
        }
        if self.status.job_uid.is_some() {
            return self.job_lost();
        }
        self.prepare(plan, &edge_objects)
    }

    /// The edge objects, to go on `doing` the recorded attempt while its result is not
    /// recorded; once it is, the cleanup's next step, or else when to look again.
    fn unfinished(&mut self, doing: &str) -> Result<EdgeObjects, Next> {
        if self.status.job_result.is_some() {
            return Err(self.cleanup());
        }
        self.reachable(doing)
    }

    /// Rule `older_attempt_finishes_first`: a newer plan is sealed while the recorded
    /// attempt is unfinished. Its Job runs to its end and is cleaned up; an attempt that
    /// never got a Job is superseded.
    pub(super) fn finish_older(&mut self, older: &Recorded, newer: i64) -> Next {
        let edge_objects = match self.unfinished("finish the previous attempt") {
            Ok(edge_objects) => edge_objects,
            Err(next) => return next,
        };
        if let Some(job) = &edge_objects.job {
            let next = self.track_job(job);
            if self.status.job_result.is_none() {
                self.activity = Activity::busy(
                    reason::WAITING_FOR_PREVIOUS_ATTEMPT,
                    format!(
                        "attempt {newer} is sealed; it starts when the Job {} of attempt {} ends",
                        older.job, older.attempt
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
                older.attempt
            ),
        );
        self.cleanup()
    }

    /// Rule `replayed_plan_is_refused`: a plan no newer than the recorded attempt, yet
    /// not that attempt, is a replay or an alteration.
    pub(super) fn refuse_replay(&mut self, plan: &Plan, recorded: &Recorded) -> Next {
        let next = if self.status.cleaned_up {
            Next::Idle
        } else {
            self.finish_older(recorded, recorded.attempt + 1)
        };
        let message = format!(
            "spec.plan holds attempt {} ({}), but attempt {} ({}) is already recorded: a replayed or altered plan is never run; change spec.recipe, spec.edge, spec.version or spec.values so the webhook seals a new attempt",
            plan.attempt, plan.attempt_id, recorded.attempt, recorded.attempt_id
        );
        self.activity = Activity::idle(reason::SEAL_INVALID, message.clone());
        self.failure = Some(Failure::new(reason::SEAL_INVALID, message));
        next
    }

    /// The activity of a finished and cleaned-up attempt.
    pub fn done_activity(&self) -> Activity {
        let attempt = self.status.attempt.unwrap_or_default();
        match (&self.failure, self.status.job_result) {
            (Some(failure), _) => Activity::idle(&failure.reason, failure.message.clone()),
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
                Activity::idle(
                    reason::INSTALLED,
                    format!(
                        "attempt {attempt}: version {version} is installed in namespace {namespace} on edge {edge}"
                    ),
                )
            }
            (None, _) => Activity::idle(reason::JOB_FAILED, format!("attempt {attempt} failed")),
        }
    }
}
