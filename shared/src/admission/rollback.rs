//! A rollback request: which earlier attempt a write asks to seal again, and its kept plan.

use crate::{
    api::{Cause, KeptPlan, Workspace},
    installer::names::ANNOTATION_ROLLBACK_TO,
    text::quoted,
};

use super::{Denial, Request};

/// The attempt this write asks to roll back to, if any.
///
/// Before mutation the request says so with the rollback annotation, newly set (one stored
/// while the webhooks were bypassed is stale and ignored). After mutation the annotation is
/// gone and the plan the mutating webhook sealed for this very request says so: its cause
/// is a rollback and its attempt ID is this request's.
pub fn rollback_target(request: &Request<'_>) -> Result<Option<i64>, Denial> {
    let annotation = |workspace: &Workspace| {
        workspace
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANNOTATION_ROLLBACK_TO))
            .cloned()
    };
    if let Some(value) = annotation(request.object)
        && request.old.and_then(annotation).as_ref() != Some(&value)
    {
        return match value.trim().parse::<i64>() {
            Ok(attempt) if attempt >= 1 => Ok(Some(attempt)),
            _ => Err(Denial::RollbackTargetInvalid {
                value: quoted(&value),
            }),
        };
    }
    let stored = request.old.and_then(|old| old.spec.plan.as_ref());
    Ok(request
        .object
        .spec
        .plan
        .as_ref()
        .filter(|sealed| Some(*sealed) != stored)
        .filter(|sealed| sealed.plan.cause == Some(Cause::Rollback))
        .filter(|sealed| sealed.plan.attempt_id == request.attempt_id(sealed.plan.attempt))
        .and_then(|sealed| sealed.plan.restores))
}

/// The plan attempt `attempt` left for a rollback: it succeeded and is still among the
/// newest the status keeps.
pub fn kept_plan(old: &Workspace, attempt: i64) -> Result<KeptPlan, Denial> {
    let records = old
        .status
        .as_ref()
        .map(|s| s.attempts.as_slice())
        .unwrap_or_default();
    records
        .iter()
        .find(|r| r.attempt == attempt)
        .and_then(|r| r.kept.clone())
        .ok_or_else(|| Denial::RollbackNotKept {
            attempt,
            kept: records
                .iter()
                .filter(|r| r.kept.is_some())
                .map(|r| r.attempt)
                .collect(),
        })
}
