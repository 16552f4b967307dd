//! The validating decision: only plans this webhook sealed for this very request, and no
//! change to a pinned attempt.

use crate::{
    api::{JobResult, SealedPlan, WorkspaceSpec},
    seal::Keyring,
};

use super::{
    Denial, Request,
    attempt::{changed_intent, is_active, is_fenced, retry_of, terminal_result},
    mutate::{PlanAction, plan_action},
};

/// Admits or refuses a Workspace write after mutation. Returns warnings for the user.
pub fn validate(request: &Request<'_>, keyring: &Keyring) -> Result<Vec<String>, Denial> {
    request.require_name()?;
    let new = &request.object.spec;
    let sealed = new.plan.as_ref().ok_or(Denial::PlanMissing)?;
    let old = request.old.filter(|old| old.spec.plan.is_some());
    let Some(old) = old else {
        let recorded = request
            .old
            .and_then(|o| o.status.as_ref())
            .and_then(|s| s.attempt)
            .unwrap_or(0);
        check_new_plan(request, sealed, keyring, recorded + 1)?;
        return Ok(Vec::new());
    };
    let Some(old_sealed) = old.spec.plan.as_ref() else {
        return Err(Denial::PlanMissing);
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
    let mut without_plan = request.object.clone();
    without_plan.spec.plan = None;
    let probe = Request {
        object: &without_plan,
        ..*request
    };
    if let Ok(PlanAction::Start(start)) = plan_action(&probe) {
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
        Denial::Fenced {
            workspace: request.workspace_key(),
        }
    } else if is_active(old) {
        Denial::AttemptActive { attempt: current }
    } else {
        // Report a forged or copied plan as such before calling it a replay.
        check_seal_and_identity(request, sealed, keyring)?;
        Denial::PlanNotForThisRequest {
            attempt: sealed.plan.attempt,
        }
    })
}

/// A request that keeps the sealed plan: the intent must stay as sealed while the attempt
/// is active, and nothing may ask for an attempt once deletion has begun.
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
            Denial::Fenced {
                workspace: request.workspace_key(),
            }
        } else {
            Denial::NotResealed { field }
        });
    }
    if retry_raised && active {
        return Err(Denial::RetryWhileActive { attempt });
    }
    if retry_raised && fenced {
        return Err(Denial::Fenced {
            workspace: request.workspace_key(),
        });
    }
    let mut warnings = Vec::new();
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

/// A plan for a new attempt: sealed by a published key, for this Workspace, as the
/// attempt that comes next, in this very request, and matching the intent.
fn check_new_plan(
    request: &Request<'_>,
    sealed: &SealedPlan,
    keyring: &Keyring,
    expected: i64,
) -> Result<(), Denial> {
    check_seal_and_identity(request, sealed, keyring)?;
    let plan = &sealed.plan;
    if plan.attempt != expected {
        return Err(Denial::AttemptOutOfOrder {
            current: expected - 1,
            found: plan.attempt,
        });
    }
    if plan.attempt_id != request.attempt_id(plan.attempt) {
        return Err(Denial::PlanNotForThisRequest {
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

/// The seal verifies with a published key, and the plan is for this Workspace.
fn check_seal_and_identity(
    request: &Request<'_>,
    sealed: &SealedPlan,
    keyring: &Keyring,
) -> Result<(), Denial> {
    keyring.verify(sealed).map_err(Denial::SealInvalid)?;
    let plan = &sealed.plan;
    let this = request.workspace_identity();
    let uid_matches =
        plan.workspace.uid.is_empty() || this.uid.is_empty() || plan.workspace.uid == this.uid;
    if plan.workspace.namespace != this.namespace
        || plan.workspace.name != this.name
        || !uid_matches
    {
        return Err(Denial::PlanForOtherWorkspace {
            sealed_for: format!(
                "{}/{} (uid {:?})",
                plan.workspace.namespace, plan.workspace.name, plan.workspace.uid
            ),
            this: format!("{}/{} (uid {:?})", this.namespace, this.name, this.uid),
        });
    }
    Ok(())
}
