//! The validating decision: only plans this webhook sealed for this very request, and no
//! change to a pinned attempt.

use crate::{
    api::{JobResult, SealedPlan, WorkspaceSpec},
    seal::Keyring,
    verify::verify_plan,
};

use super::{
    Denial, Request,
    attempt::{changed_intent, is_active, is_fenced, retry_of, terminal_result},
    mutate::start_of,
};

/// Admits or refuses a Workspace write after mutation. Returns warnings for the user.
pub fn validate(request: &Request<'_>, keyring: &Keyring) -> Result<Vec<String>, Denial> {
    request.require_name()?;
    let new = &request.object.spec;
    let sealed = new.plan.as_ref().ok_or(Denial::PlanMissing)?;
    let stored = request
        .old
        .and_then(|old| old.spec.plan.as_ref().map(|plan| (old, plan)));
    let Some((old, old_sealed)) = stored else {
        let recorded = request
            .old
            .and_then(|o| o.status.as_ref())
            .and_then(|s| s.attempt)
            .unwrap_or(0);
        check_new_plan(request, sealed, keyring, recorded + 1)?;
        return Ok(Vec::new());
    };
    let current = old_sealed.plan.attempt;

    if sealed == old_sealed {
        // The stored plan, accepted when it was sealed: not re-verified, so rotating a
        // key out never blocks label edits on older Workspaces.
        return check_unchanged_plan(
            request,
            old_sealed,
            &old.spec,
            is_active(old),
            is_fenced(old),
        );
    }
    // A plan that differs from the stored one is admissible only as the new attempt the
    // mutating webhook sealed for this very write.
    if let Ok(Some(start)) = start_of(request) {
        check_new_plan(request, sealed, keyring, start.attempt)?;
        return Ok(Vec::new());
    }
    Err(if sealed.plan.attempt == current {
        Denial::PlanChanged { attempt: current }
    } else if sealed.plan.attempt != current + 1 {
        Denial::AttemptOutOfOrder {
            current,
            found: sealed.plan.attempt,
        }
    } else if is_fenced(old) || is_fenced(request.object) {
        Denial::DeletionFenced {
            workspace: request.workspace_key(),
        }
    } else if is_active(old) {
        Denial::AttemptActive { attempt: current }
    } else {
        // Report a forged or copied plan as such before calling it a replay.
        verify_plan(sealed, keyring, &request.binding()).map_err(Denial::PlanInvalid)?;
        Denial::PlanReplayed {
            attempt: sealed.plan.attempt,
        }
    })
}

/// A request that keeps the sealed plan: the intent must stay as sealed while the attempt
/// is active, and nothing may ask for an attempt once deletion has begun. Raising
/// spec.retry while the attempt runs starts nothing, now or later: it is admitted with a
/// warning, so a GitOps sync that raises it at the wrong moment does not fail.
fn check_unchanged_plan(
    request: &Request<'_>,
    sealed: &SealedPlan,
    old: &WorkspaceSpec,
    active: bool,
    fenced: bool,
) -> Result<Vec<String>, Denial> {
    let new = &request.object.spec;
    let attempt = sealed.plan.attempt;
    let retry_raised = retry_of(new) > retry_of(old);
    if let Some(field) = changed_intent(old, new) {
        return Err(if active {
            Denial::EditForbidden {
                field,
                attempt,
                attempt_id: sealed.plan.attempt_id.clone(),
            }
        } else if fenced {
            Denial::DeletionFenced {
                workspace: request.workspace_key(),
            }
        } else {
            Denial::NotResealed { field }
        });
    }
    if retry_raised && fenced {
        return Err(Denial::DeletionFenced {
            workspace: request.workspace_key(),
        });
    }
    if super::rollback::rollback_target(request)?.is_some() {
        // The mutating webhook consumes the annotation when it seals the rollback.
        return Err(Denial::NotResealed { field: "retry" });
    }
    if let Some(attempt) = super::automatic_repair::automatic_repair_target(request)? {
        // Likewise when it seals an automatic repair: no annotation is ever stored.
        return Err(Denial::AutomaticRepairRefused {
            attempt,
            why: "no repair was sealed for this write".into(),
        });
    }
    let mut warnings = Vec::new();
    if retry_raised && active {
        warnings.push(format!(
            "attempt {attempt} is still running; raising spec.retry starts nothing now or later: once it has failed, raise spec.retry again to retry"
        ));
    }
    if retry_raised
        && request
            .old
            .and_then(|old| terminal_result(old, &sealed.plan))
            .is_some_and(|result| result == JobResult::Succeeded)
    {
        warnings.push(format!(
            "attempt {attempt} succeeded; spec.retry starts nothing after a success"
        ));
    }
    Ok(warnings)
}

/// A plan for a new attempt: valid for this Workspace (sealed by a published key, bound to
/// it, for a dry run only in a dry run), as the attempt that comes next, in this very
/// request, and matching the intent.
fn check_new_plan(
    request: &Request<'_>,
    sealed: &SealedPlan,
    keyring: &Keyring,
    expected: i64,
) -> Result<(), Denial> {
    verify_plan(sealed, keyring, &request.binding()).map_err(Denial::PlanInvalid)?;
    let plan = &sealed.plan;
    if plan.attempt != expected {
        return Err(Denial::AttemptOutOfOrder {
            current: expected - 1,
            found: plan.attempt,
        });
    }
    if plan.attempt_id != request.attempt_id(plan.attempt) || plan.dry_run != request.dry_run {
        return Err(Denial::PlanReplayed {
            attempt: plan.attempt,
        });
    }
    let intent = &request.object.spec;
    if plan.provider != intent.recipe {
        return Err(Denial::NotResealed { field: "recipe" });
    }
    if plan.edge_name != intent.edge {
        return Err(Denial::NotResealed { field: "edge" });
    }
    if intent.version.as_ref().is_some_and(|v| *v != plan.version) {
        return Err(Denial::NotResealed { field: "version" });
    }
    Ok(())
}
