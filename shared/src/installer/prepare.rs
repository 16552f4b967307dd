//! Preparation: the preparation record, namespace admission, the provider's runtime
//! credential, the runner's identity and values, a pending release, then the Job.

use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::SignedDuration};

use crate::{
    api::{Plan, Preparation},
    plan_values,
    text::object_key,
};

use super::{
    action::{Action, EdgeObject, Kind, Next, Note},
    conditions::{Activity, reason},
    decision_draft::DecisionDraft,
    manifests::{self, Marks},
    names::{self, AttemptNames},
    namespace_admission::Admission,
    observation::{Authorization, EdgeObjects, EdgeState, SealCheck, ValuesCheck},
};

impl DecisionDraft<'_> {
    /// Rules `seal_is_checked_before_creating`, `preparation_is_recorded_first`,
    /// `expired_preparation_is_redone`, then namespace admission, the credential, the
    /// identity and the Job.
    pub fn prepare(&mut self, plan: &Plan, edge_objects: &EdgeObjects) -> Next {
        let refused = match &self.observation().seal {
            SealCheck::Verified => None,
            SealCheck::KeysUnavailable(why) => {
                self.activity = Activity::idle(
                    reason::KEYS_UNAVAILABLE,
                    format!("cannot verify the seal before creating anything: {why}"),
                );
                return Next::After(30);
            }
            SealCheck::Invalid(why) => Some(why.clone()),
            SealCheck::NoPlan => Some("there is no plan".to_owned()),
        };
        if let Some(why) = refused {
            self.reject(
                reason::SEAL_INVALID,
                format!(
                    "attempt {}: the seal does not verify ({why}); nothing more is created for it",
                    plan.attempt
                ),
            );
            return self.cleanup();
        }
        if let EdgeState::Ready(route) = &self.observation().edge
            && (route.cluster != plan.cluster || route.workspace_uuid != plan.edge_workspace_uuid)
        {
            self.reject(
                reason::TARGET_MISMATCH,
                format!(
                    "attempt {} was sealed for cluster {} of edge workspace {}, but Edge {} is now cluster {} of edge workspace {}; change the Workspace so a new plan is sealed",
                    plan.attempt,
                    plan.cluster,
                    plan.edge_workspace_uuid,
                    plan.edge_name,
                    route.cluster,
                    route.workspace_uuid
                ),
            );
            return self.cleanup();
        }
        let values = match self.plan_values(plan) {
            Ok(values) => values,
            Err(next) => return next,
        };
        self.activity = Activity::busy(
            reason::PREPARING,
            format!(
                "attempt {}: preparing namespace {}, the runner's identity and values on edge {}",
                plan.attempt, plan.namespace, plan.edge_name
            ),
        );

        if self.status.preparation.is_none()
            && let Some(next) = self.owner_still_granted(plan)
        {
            return next;
        }
        let (preparation, removing) = self.preparation(plan, edge_objects);
        if removing {
            // An expired preparation is being removed; prepare afresh once it is gone.
            return Next::Continue;
        }
        let marks = Marks {
            workspace_uid: self.uid().to_owned(),
            workspace_key: self.key().to_owned(),
            attempt: plan.attempt,
            attempt_id: plan.attempt_id.clone(),
            preparation_id: preparation,
        };

        match self.admit_namespace(plan, edge_objects.namespace.as_ref(), &marks) {
            Admission::Admitted => {}
            Admission::Pending(next) => return next,
        }
        if let Some(next) = self.runtime_credential(plan, edge_objects, &marks) {
            return next;
        }
        self.recover_release(plan, edge_objects);

        let names = AttemptNames::for_job(&plan.job);
        let mut stale = false;
        for (kind, observed, name) in edge_objects.runner_objects(&names) {
            // Values small enough ride in the Job itself (manifests::values_in_job).
            if kind == Kind::Secret && manifests::values_in_job(&values) {
                continue;
            }
            match observed {
                None => {
                    let object = runner_object(kind, plan, &values, &names, &marks);
                    self.edge(Action::Create(Box::new(object)));
                }
                Some(existing)
                    if existing.of_attempt(self.uid(), &plan.attempt_id)
                        && existing.label(names::LABEL_PREPARATION_ID)
                            == names::label_value(&marks.preparation_id) => {}
                Some(existing) if existing.owned_by(self.uid()) => {
                    // Left by another preparation of this Workspace: replace it.
                    stale = true;
                    self.delete_on_edge(kind, &plan.namespace, name, &existing.uid);
                }
                Some(existing) if self.left_by_lost_attempt(existing) => {
                    let what = format!("{kind:?} {}", object_key(&plan.namespace, name));
                    return self.wait_for_sweep(&what, existing);
                }
                Some(existing) => {
                    self.reject(
                        reason::JOB_CONFLICT,
                        format!(
                            "{kind:?} {} exists on edge {} and is not this Workspace's (labelled for Workspace UID {:?}); remove it, then raise spec.retry",
                            object_key(&plan.namespace, name),
                            plan.edge_name,
                            existing.label(names::LABEL_WORKSPACE_UID)
                        ),
                    );
                    return self.cleanup();
                }
            }
        }
        if stale {
            return Next::Continue;
        }
        self.edge(Action::Create(Box::new(EdgeObject::Job(Box::new(
            manifests::job(plan, &values, &names, &marks, self.settings()),
        )))));
        Next::Continue
    }

    /// Rule `values_are_checked_before_creating`: a plan's values are the sealed ones, read
    /// by digest, before anything is created for the attempt; an object missing or changed
    /// rejects the attempt.
    fn plan_values(&mut self, plan: &Plan) -> Result<Arc<Value>, Next> {
        let digest = match plan_values::source_of(plan) {
            plan_values::Source::Inline(values) => return Ok(Arc::new(values.clone())),
            plan_values::Source::Stored { digest } => digest,
        };
        let name = plan_values::object_name(&plan.workspace.name, digest);
        let why = match &self.observation().values {
            ValuesCheck::Verified { values, .. } => return Ok(values.clone()),
            ValuesCheck::NotRead => {
                self.activity = Activity::idle(
                    reason::VALUES_UNAVAILABLE,
                    format!("attempt {}: reading its values", plan.attempt),
                );
                return Err(Next::After(5));
            }
            ValuesCheck::Unavailable(why) => {
                self.activity = Activity::idle(
                    reason::VALUES_UNAVAILABLE,
                    format!(
                        "attempt {}: cannot read its values (PlanValues {name}) on the hub: {why}; asking again shortly",
                        plan.attempt
                    ),
                );
                return Err(Next::After(10));
            }
            ValuesCheck::Missing { .. } => format!(
                "its values ({digest}) are no longer stored on the hub: PlanValues {name} is missing. Nothing was created for it; change spec.values or spec.version to seal a new attempt, whose values the webhook stores again"
            ),
            ValuesCheck::Defective { defect, .. } => format!(
                "its values (PlanValues {name}) {defect}. Nothing was created for it; the platform team deletes PlanValues {name} (only the webhook writes them: the audit log says who changed it), then a change of spec.values or spec.version seals a new attempt whose values the webhook stores again"
            ),
        };
        self.reject(
            reason::VALUES_INVALID,
            format!("attempt {} is not run: {why}", plan.attempt),
        );
        Err(self.cleanup())
    }

    /// Rule `authorization_is_asked_again_before_start`: before the first preparation of
    /// an attempt (the first use of the edge credential for it), RBAC must still let the
    /// plan's owner `install` onto its edge and `use` its Recipe. `None` when it does.
    fn owner_still_granted(&mut self, plan: &Plan) -> Option<Next> {
        match &self.observation().authorization {
            Authorization::Allowed => None,
            Authorization::NotAsked => Some(Next::Continue),
            Authorization::Unavailable(why) => {
                self.activity = Activity::idle(
                    reason::AUTHORIZATION_UNAVAILABLE,
                    format!(
                        "attempt {}: cannot ask whether {} may still install onto edge {}: {why}; asking again shortly",
                        plan.attempt, plan.owner.username, plan.edge_name
                    ),
                );
                Some(Next::After(10))
            }
            Authorization::Denied(why) => {
                self.reject(
                    reason::NOT_AUTHORIZED,
                    format!(
                        "attempt {} is not run: {why}. The permission was checked when the plan was sealed and again before anything was created; nothing was created on the edge. Once the platform team grants it again, raise spec.retry",
                        plan.attempt
                    ),
                );
                Some(self.cleanup())
            }
        }
    }

    /// The preparation ID to label objects with; starts a new preparation when there is
    /// none or the recorded one expired without its Job (and queues removal of the
    /// expired one's objects, saying so).
    fn preparation(&mut self, plan: &Plan, edge_objects: &EdgeObjects) -> (String, bool) {
        let current = self.status.preparation.clone();
        if let Some(recorded) = &current
            && recorded.preparation_expires_at.0 > self.observation().now
        {
            return (recorded.preparation_id.clone(), false);
        }
        let previous = current
            .as_ref()
            .map(|expired| expired.preparation_id.clone())
            .unwrap_or_default();
        let id = preparation_id(
            &plan.attempt_id,
            &previous,
            &self.observation().now.to_string(),
        );
        let expires = self
            .observation()
            .now
            .checked_add(SignedDuration::from_secs(
                self.settings().preparation_ttl_seconds,
            ))
            .unwrap_or(self.observation().now);
        self.status.preparation = Some(Preparation {
            preparation_id: id.clone(),
            preparation_expires_at: Time(expires),
        });
        let mut removing = false;
        if current.is_some() {
            self.event(Note::warning(
                "PreparationExpired",
                format!(
                    "attempt {}: preparation {previous} expired before its Job was created; removing what it made and preparing afresh as {id}",
                    plan.attempt
                ),
            ));
            let names = AttemptNames::for_job(&plan.job);
            let old = names::label_value(&previous);
            for (kind, observed, name) in edge_objects.runner_objects(&names) {
                if let Some(object) = observed
                    && object.owned_by(self.uid())
                    && object.label(names::LABEL_PREPARATION_ID) == old
                {
                    removing = true;
                    self.delete_on_edge(kind, &plan.namespace, name, &object.uid);
                }
            }
        }
        (id, removing)
    }

    /// Rule `pending_release_is_recovered`: a release revision left pending by a killed
    /// Helm blocks every later Helm run. No Helm of this Workspace can still hold it: the
    /// previous attempt's Job ended and its identity is revoked before a new attempt
    /// prepares. So it is marked failed, as Helm marks it when interrupted gracefully.
    fn recover_release(&mut self, plan: &Plan, edge_objects: &EdgeObjects) {
        let Some(revision) = edge_objects.release.as_ref().filter(|r| r.is_pending()) else {
            return;
        };
        let message = format!(
            "release {} revision {} in namespace {} on edge {} was left {} by an interrupted Helm run; marked it failed so attempt {} can upgrade it",
            plan.release,
            revision.revision,
            plan.namespace,
            plan.edge_name,
            revision.status,
            plan.attempt
        );
        self.edge(Action::MarkReleaseFailed {
            namespace: plan.namespace.clone(),
            secret: revision.secret.clone(),
            uid: revision.uid.clone(),
            revision: revision.revision,
            description: format!(
                "interrupted while {}: marked failed by the installer before attempt {}",
                revision.status, plan.attempt
            ),
        });
        self.event(Note::warning("ReleaseRecovered", message));
    }
}

/// The runner's object of `kind`: its ServiceAccount, Role or RoleBinding, otherwise the
/// values Secret ([`EdgeObjects::runner_objects`] yields no Job).
fn runner_object(
    kind: Kind,
    plan: &Plan,
    values: &serde_json::Value,
    names: &AttemptNames,
    marks: &Marks,
) -> EdgeObject {
    match kind {
        Kind::ServiceAccount => {
            EdgeObject::ServiceAccount(manifests::runner_service_account(plan, names, marks))
        }
        Kind::Role => EdgeObject::Role(manifests::runner_role(plan, names, marks)),
        Kind::RoleBinding => {
            EdgeObject::RoleBinding(manifests::runner_role_binding(plan, names, marks))
        }
        _ => EdgeObject::Secret(manifests::values_secret(plan, values, names, marks)),
    }
}

/// A preparation ID: unique per attempt and preparation, derived from its inputs.
pub fn preparation_id(attempt_id: &str, previous: &str, now: &str) -> String {
    let digest = Sha256::new()
        .chain_update(attempt_id.as_bytes())
        .chain_update([0])
        .chain_update(previous.as_bytes())
        .chain_update([0])
        .chain_update(now.as_bytes())
        .finalize();
    hex::encode(&digest[..8])
}
