//! The decision's entry point: whether there is anything to decide, and the rules in the
//! order they are taken. The rules themselves live in `attempt`, `prepare`, `cleanup`,
//! `delete` and the files they call; the working state they share is `decision_draft`.

use super::{
    action::{Action, Decision, Next},
    attempt::Verdict,
    attempt_reads,
    conditions::{Activity, reason},
    decision_draft::DecisionDraft,
    names,
    observation::Observation,
    settings::Settings,
};

/// The next actions for a Workspace, from what was observed.
pub fn decide(observation: &Observation<'_>, settings: &Settings) -> Decision {
    let workspace = observation.workspace;
    let ours = workspace
        .metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|f| f == names::FINALIZER));
    if workspace.metadata.deletion_timestamp.is_some() && !ours {
        // Nothing of ours to clean up, and the object is going away: write nothing.
        return Decision {
            actions: Vec::new(),
            next: Next::Idle,
        };
    }
    let mut draft = DecisionDraft::new(observation, settings);
    let next = draft.decide();
    draft.finish(next)
}

impl DecisionDraft<'_> {
    /// The rules, in order.
    pub fn decide(&mut self) -> Next {
        if self.ws().metadata.deletion_timestamp.is_some() {
            return self.prepare_delete();
        }
        let recorded = attempt_reads::recorded(&self.status);
        let Some(sealed) = self.ws().spec.plan.as_ref() else {
            return self.await_plan(recorded);
        };
        if !self.has_finalizer() {
            // Before anything exists on the edge, so deletion always finds it.
            self.actions.push(Action::AddFinalizer);
        }
        self.own_values();
        let plan = &sealed.plan;
        if let Some(older) = &recorded
            && !attempt_reads::is_sealed_attempt(older, plan)
        {
            if plan.attempt <= older.attempt {
                return self.refuse_replay(plan, older);
            }
            if !self.status.cleaned_up {
                return self.finish_older(older, plan.attempt);
            }
        }
        if !recorded
            .as_ref()
            .is_some_and(|r| attempt_reads::is_sealed_attempt(r, plan))
        {
            match self.verdict() {
                Verdict::Run => self.bind(plan),
                Verdict::Wait(why) => {
                    self.activity = Activity::idle(
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
                    self.activity = self.done_activity();
                    return Next::Idle;
                }
            }
        }
        self.run_attempt(plan)
    }
}
