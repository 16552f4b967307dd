//! A rollback request: which earlier attempt a write asks to seal again, and its kept plan.

use json_patch::{AddOperation, PatchOperation, RemoveOperation, jsonptr::PointerBuf};
use serde_json::Value;

use crate::{
    api::{Cause, KeptPlan, Workspace},
    installer::names::ANNOTATION_ROLLBACK_TO,
    text::quoted,
};

use super::{Denial, Request};

/// The attempt this write asks to roll back to, if any.
///
/// Before mutation the request says so with the rollback annotation: present in a write
/// (the webhooks see every write that carries it), it is a request, and the mutating
/// webhook consumes it. After mutation the annotation is gone and the plan the mutating
/// webhook sealed for this very request says so: its cause is a rollback and its attempt
/// ID is this request's.
pub fn rollback_target(request: &Request<'_>) -> Result<Option<i64>, Denial> {
    let annotation = request
        .object
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_ROLLBACK_TO));
    if let Some(value) = annotation {
        // Plain digits only: " 2", "+2", "02" and "2e0" are not attempt numbers.
        let digits = !value.is_empty()
            && !value.starts_with('0')
            && value.bytes().all(|b| b.is_ascii_digit());
        return match value.parse::<i64>() {
            Ok(attempt) if digits && attempt >= 1 => Ok(Some(attempt)),
            _ => Err(Denial::RollbackTargetInvalid {
                value: quoted(value),
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

/// What a rollback writes beside its plan: attempt N's intent back into `spec.version` and
/// `spec.values` (only where they differ), and the rollback annotation consumed.
pub fn rollback_patch(object: &Workspace, kept: &KeptPlan) -> Vec<PatchOperation> {
    let spec = &object.spec;
    let mut operations = Vec::new();
    for (field, now, restored) in [
        (
            "version",
            spec.version.clone().map(Value::String),
            kept.version.clone().map(Value::String),
        ),
        ("values", spec.values.clone(), kept.values.clone()),
    ] {
        let path = PointerBuf::from_tokens(["spec", field]);
        match (now, restored) {
            (Some(_), None) => operations.push(PatchOperation::Remove(RemoveOperation { path })),
            (now, Some(value)) if now.as_ref() != Some(&value) => {
                operations.push(PatchOperation::Add(AddOperation { path, value }))
            }
            _ => {}
        }
    }
    if object
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(ANNOTATION_ROLLBACK_TO))
    {
        operations.push(PatchOperation::Remove(RemoveOperation {
            path: PointerBuf::from_tokens(["metadata", "annotations", ANNOTATION_ROLLBACK_TO]),
        }));
    }
    operations
}
