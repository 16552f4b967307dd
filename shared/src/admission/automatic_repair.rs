//! Rule `automatic_repair_is_the_installers_request`: the installer asks for a repair of a
//! drifted release by raising spec.retry with the automatic repair annotation. The webhook
//! seals it, as the plan's owner and not as the installer, only as a repair of the
//! installed attempt that drifted, only when that plan's drift policy says `repair:
//! Automatic`, and (asked by the caller) only for an identity allowed the `autorepair` verb.

use json_patch::{PatchOperation, RemoveOperation, jsonptr::PointerBuf};

use crate::{
    api::{JobResult, SealedPlan, Workspace},
    installer::names::ANNOTATION_AUTOMATIC_REPAIR,
    text::quoted,
};

use super::{
    Denial, Request,
    attempt::{changed_intent, is_active, is_drifted, recorded_result, retry_of},
};

/// The attempt this write asks the webhook to repair automatically, if it carries the
/// annotation.
pub fn automatic_repair_target(request: &Request<'_>) -> Result<Option<i64>, Denial> {
    let Some(value) = annotation(request.object) else {
        return Ok(None);
    };
    // Plain digits only, as for a rollback.
    let digits =
        !value.is_empty() && !value.starts_with('0') && value.bytes().all(|b| b.is_ascii_digit());
    match value.parse::<i64>() {
        Ok(attempt) if digits && attempt >= 1 => Ok(Some(attempt)),
        _ => Err(Denial::AutomaticRepairInvalid {
            value: quoted(value),
        }),
    }
}

/// Why `old`, whose sealed plan is `sealed`, cannot be repaired automatically as attempt
/// `attempt` by this write; `Ok` when it can.
pub fn check_automatic_repair(
    request: &Request<'_>,
    old: &Workspace,
    sealed: &SealedPlan,
    attempt: i64,
) -> Result<(), Denial> {
    let refused = |why: String| Denial::AutomaticRepairRefused { attempt, why };
    let plan = &sealed.plan;
    if attempt != plan.attempt {
        return Err(refused(format!(
            "the Workspace's attempt is {} now",
            plan.attempt
        )));
    }
    if is_active(old) {
        return Err(refused("it has not ended".into()));
    }
    if retry_of(&request.object.spec) <= retry_of(&old.spec) {
        return Err(refused("the same write must raise spec.retry".into()));
    }
    if let Some(field) = changed_intent(&old.spec, &request.object.spec) {
        return Err(refused(format!(
            "a repair runs the same plan, and this write changes spec.{field}"
        )));
    }
    if recorded_result(old, plan) != Some(JobResult::Succeeded) || !is_drifted(old) {
        return Err(refused(
            "it is not an installed release the installer found drifted".into(),
        ));
    }
    if !plan
        .drift
        .as_ref()
        .is_some_and(|d| d.repairs_automatically())
    {
        return Err(refused(
            "its plan's drift policy repairs by hand (the Recipe's spec.drift.repair is not Automatic when it was sealed)".into(),
        ));
    }
    Ok(())
}

/// The patch operation that consumes the annotation, if the object carries it.
pub fn automatic_repair_consumed(object: &Workspace) -> Option<PatchOperation> {
    annotation(object).map(|_| {
        PatchOperation::Remove(RemoveOperation {
            path: PointerBuf::from_tokens(["metadata", "annotations", ANNOTATION_AUTOMATIC_REPAIR]),
        })
    })
}

fn annotation(object: &Workspace) -> Option<&String> {
    object
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_AUTOMATIC_REPAIR))
}
