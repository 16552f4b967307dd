//! The mutating decision: seal a new attempt, keep the sealed plan, or restore it.

mod carried;
mod sealing;
mod start;

use crate::{api::SealedPlan, text::quoted};

pub use super::request::is_object_name;
use super::{Denial, Operation, Request};

pub use carried::carried_plan_warning;
pub use sealing::{Lookups, SealedAttempt, Sealing, seal_attempt};
pub use start::{Start, StartKind, start_of};

/// What the mutating webhook does with a request.
#[derive(Clone, Debug, PartialEq)]
pub enum PlanAction {
    /// Leave spec.plan as the request has it (the validating webhook judges it).
    Keep,
    /// The request left out the sealed plan (a GitOps tool that never wrote it): put it back.
    Restore(Box<SealedPlan>),
    /// Seal a new attempt.
    Start(Start),
}

/// Decides what a write does to the plan. Where a write starts an attempt, the webhook
/// seals it afresh whatever plan the request carries (a create that carries one, as a
/// restore from a backup does, included: `carried`); elsewhere a plan that differs from
/// the sealed one is left for the validating webhook to refuse.
pub fn plan_action(request: &Request<'_>) -> Result<PlanAction, Denial> {
    request.require_name()?;
    let new = &request.object.spec;
    let stored = request.old.and_then(|old| old.spec.plan.as_ref());
    if request.operation == Operation::Update && stored.is_none() && new.plan.is_some() {
        return Err(Denial::PlanSetByUser);
    }
    if let Some(start) = start_of(request)? {
        // Names are checked before anything is looked up by them.
        for (field, name) in [("spec.recipe", &start.recipe), ("spec.edge", &start.edge)] {
            if !is_object_name(name) {
                return Err(Denial::InvalidName {
                    field,
                    name: quoted(name),
                });
            }
        }
        return Ok(PlanAction::Start(start));
    }
    Ok(match (stored, &new.plan) {
        (Some(sealed), None) => PlanAction::Restore(Box::new(sealed.clone())),
        _ => PlanAction::Keep,
    })
}
