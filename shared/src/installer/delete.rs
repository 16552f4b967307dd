//! PrepareDelete: fence new attempts, revoke the current attempt's identity, remove its
//! Job, release the namespace for a later Workspace of the same name, then let the
//! Workspace go. The release, the namespace, PVCs and the provider's runtime credential
//! stay on the edge.

use crate::api::JobResult;

pub use super::left_on_edge::{abandoned, edge_touched};
use super::{
    action::{Action, Kind, NamespaceChange, Next, Note},
    attempt_reads,
    conditions::{Activity, Failure, reason},
    decision_draft::DecisionDraft,
    names,
    observation::{EdgeState, JobOutcome},
    patch,
};

impl DecisionDraft<'_> {
    /// Rules `deletion_fences_new_attempts`, `deletion_revokes_only_the_identity`,
    /// `deletion_waits_for_a_reachable_edge`, `deletion_of_an_unregistered_edge_goes_on`.
    pub fn prepare_delete(&mut self) -> Next {
        if !self.status.deleting {
            self.status.deleting = true;
            self.event(Note::normal(
                "DeletionFenced",
                "the Workspace is being deleted: no new attempt starts; the release, its namespace and the provider's credential stay on the edge",
            ));
        }
        self.activity = Activity::busy(
            reason::DELETING,
            "the Workspace is being deleted: revoking the current attempt's runner identity; the release, namespace and provider credential stay",
        );
        let Some(recorded) = attempt_reads::recorded(&self.status) else {
            return self.remove_finalizer();
        };
        if let Some(reason) = abandoned(self.ws()) {
            self.event(Note::warning(
                "Abandoned",
                format!(
                    "deletion abandons what may remain on edge {:?} (attempt {}'s runner identity and Job in namespace {}, the release and the provider's credential): {}",
                    recorded.edge,
                    recorded.attempt,
                    recorded.namespace,
                    crate::text::quoted_with(reason, 256)
                ),
            ));
            return self.remove_finalizer();
        }
        if !edge_touched(&self.status) {
            self.event(Note::normal(
                "NothingToClean",
                format!(
                    "nothing was prepared on edge {:?} for this Workspace: deletion finishes without it",
                    recorded.edge
                ),
            ));
            return self.remove_finalizer();
        }
        if self.observation().edge == EdgeState::Missing {
            self.event(Note::warning(
                "EdgeGone",
                format!(
                    "edge {:?} is no longer registered: nothing on it can be cleaned up",
                    recorded.edge
                ),
            ));
            return self.remove_finalizer();
        }
        let edge_objects = match self.reachable(
            "revoke the runner's identity before deletion (if the edge is gone for good, a platform admin can abandon it: kubectl provider delete --abandon)",
        ) {
            Ok(edge_objects) => edge_objects,
            Err(next) => return next,
        };
        if self.status.job_result.is_none()
            && let Some(job) = &edge_objects.job
            && job.object.of_attempt(self.uid(), &recorded.attempt_id)
        {
            match &job.outcome {
                JobOutcome::Succeeded => {
                    self.record_result(JobResult::Succeeded, job.finished_at.clone(), None)
                }
                JobOutcome::Failed {
                    reason: why,
                    message,
                } => self.record_result(
                    JobResult::Failed,
                    job.finished_at.clone(),
                    Some(Failure::new(
                        reason::JOB_FAILED,
                        format!("Job {} failed ({why}: {message})", recorded.job),
                    )),
                ),
                JobOutcome::Running => {}
            }
        }
        self.revoke_identity(&edge_objects);
        if let Some(job) = &edge_objects.job
            && job.object.of_attempt(self.uid(), &recorded.attempt_id)
        {
            self.release_job(&edge_objects);
            if !job.object.deleting {
                // The name is deterministic: a Workspace created later under the same
                // name needs it free.
                self.delete_on_edge(
                    Kind::Job,
                    &recorded.namespace,
                    &recorded.job,
                    &job.object.uid,
                );
            }
        }
        // Rule `deletion_removes_every_attempts_job`: the Jobs of earlier attempts go too,
        // or a Workspace created later under this name meets them (their names are its
        // attempts' names) and waits for the orphan sweep.
        self.remove_earlier_jobs(&edge_objects);
        if let Some(ns) = &edge_objects.namespace
            && ns.owned_by(self.uid())
            && ns.label(names::LABEL_RELEASED) != "true"
        {
            self.edge(Action::PatchNamespace {
                name: recorded.namespace.clone(),
                patch: patch::release_namespace(ns, self.uid()),
                what: NamespaceChange::Release,
            });
        }
        self.flush();
        // Rule `released_says_whose_namespace_it_was`: only a namespace of this Workspace's
        // is kept for a later namesake; another's (this attempt was refused it) is not
        // this Workspace's to speak for.
        let namespace = match &edge_objects.namespace {
            Some(ns) if ns.owned_by(self.uid()) => format!(
                "namespace {} on edge {} is left in place for a later Workspace named {}",
                recorded.namespace,
                recorded.edge,
                self.key()
            ),
            Some(_) => format!(
                "namespace {} on edge {} was never this Workspace's and is left as it is",
                recorded.namespace, recorded.edge
            ),
            None => format!(
                "there is no namespace {} on edge {}",
                recorded.namespace, recorded.edge
            ),
        };
        self.event(Note::normal(
            "Released",
            format!(
                "attempt {}'s runner identity is revoked; {namespace}",
                recorded.attempt
            ),
        ));
        self.actions.push(Action::RemoveFinalizer);
        Next::Idle
    }

    /// Lets the Workspace go: writes down what was decided, then removes the finalizer.
    fn remove_finalizer(&mut self) -> Next {
        self.flush();
        self.actions.push(Action::RemoveFinalizer);
        Next::Idle
    }
}
