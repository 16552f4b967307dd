//! Rule `drift_is_repaired_automatically_once`: under a drift policy of `repair:
//! Automatic`, drift of an installed release makes the installer ask the webhook for a
//! repair of the same plan; drift found again within the quiet period after an automatic
//! repair stops it (Stalled, `RepairLoop`), so two writers taking turns on an object are
//! never repaired in a loop (fleet#2436).

use crate::api::{AutomaticRepair, AutomaticRepairState, Cause, SealedPlan};

use super::super::{
    action::{Action, Note, RepairRequest},
    decision_draft::DecisionDraft,
};
use super::stopped_repair::state_of;

/// How long a request the webhook refused (or that never arrived) waits before it is made
/// again: the owner's rights or the Recipe may be back by then, and a refusal costs one
/// write and two RBAC questions.
pub const REQUEST_AGAIN_SECONDS: i64 = 300;

impl DecisionDraft<'_> {
    pub(super) fn repair_automatically(&mut self, sealed: &SealedPlan) {
        let plan = &sealed.plan;
        let Some(policy) = plan.drift.as_ref().filter(|p| p.repairs_automatically()) else {
            return;
        };
        if self.ws().metadata.deletion_timestamp.is_some() {
            return;
        }
        let now = self.now();
        let name = self.ws().metadata.name.clone().unwrap_or_default();
        let finished = self.status.finished_at.clone();
        let Some(drift) = self.status.drift.as_mut() else {
            return;
        };
        let since_repair = finished
            .filter(|_| plan.cause == Some(Cause::AutomaticRepair))
            .map(|f| drift.detected_at.0.as_second() - f.0.as_second());
        let quiet = policy.repair_quiet_period();
        if let Some(after) = since_repair.filter(|after| *after < quiet) {
            if state_of(drift) != Some(AutomaticRepairState::Stopped) {
                drift.automatic_repair = Some(AutomaticRepair {
                    state: AutomaticRepairState::Stopped,
                    at: now,
                });
                let message = format!(
                    "the release drifted again {after} s after automatic repair attempt {} ended, within the Recipe's quiet period of {quiet} s: automatic repair stops so that the installer and another writer do not take turns; find who changes it (kubectl provider status {name}), then repair by hand: kubectl provider repair {name}",
                    plan.attempt
                );
                self.event(Note::warning("AutomaticRepairStopped", message));
            }
            return;
        }
        if let Some(AutomaticRepair { state, at }) = &drift.automatic_repair
            && (*state == AutomaticRepairState::Stopped
                || now.0.as_second() - at.0.as_second() < REQUEST_AGAIN_SECONDS)
        {
            return;
        }
        drift.automatic_repair = Some(AutomaticRepair {
            state: AutomaticRepairState::Requested,
            at: now,
        });
        let message = format!(
            "the Recipe repairs drift automatically: spec.retry is raised to seal attempt {}'s plan again for its owner, {}",
            plan.attempt,
            crate::text::quoted(&plan.owner.username)
        );
        self.event(Note::normal("AutomaticRepairRequested", message));
        // Written down first, so a crash after the request never asks twice at once.
        self.edge(Action::RequestRepair(RepairRequest {
            attempt: plan.attempt,
            attempt_id: plan.attempt_id.clone(),
            retry: self.ws().spec.retry.unwrap_or(0),
        }));
    }
}
