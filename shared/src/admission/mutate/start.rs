//! Whether a write starts a new attempt, and which: a create, an upgrade, a retry, a
//! repair or a rollback.

use crate::{
    admission::{
        Denial, Operation, Request,
        attempt::{
            changed_intent, is_active, is_drifted, is_fenced, recorded_result, retry_of,
            terminal_result,
        },
        automatic_repair::{automatic_repair_target, check_automatic_repair},
        rollback::{kept_plan, rollback_target},
    },
    api::{Cause, JobResult, KeptPlan, SealedPlan, WorkspaceSpec},
    text::quoted,
};

/// Why a new attempt starts.
#[derive(Clone, Debug, PartialEq)]
pub enum StartKind {
    /// The Workspace is new (or was stored without a plan).
    Create,
    /// The tenant changed the intent after a terminal attempt: resolve the new intent.
    Upgrade,
    /// The tenant raised spec.retry after a failed attempt ([`Cause::Retry`]), or while the
    /// installed release has drifted ([`Cause::Repair`]), or the installer did with the
    /// automatic repair annotation ([`Cause::AutomaticRepair`], sealed for the plan's
    /// owner): run the original plan again, once its seal and binding verify and the
    /// Recipe still offers what it pinned.
    Retry {
        original: Box<SealedPlan>,
        cause: Cause,
    },
    /// The tenant raised spec.retry with the rollback annotation: seal the kept plan of
    /// attempt `to` again, under the same checks as a retry. The intent goes back to what
    /// it was for that attempt.
    Rollback { to: i64, kept: Box<KeptPlan> },
}

impl StartKind {
    /// The plan this attempt repairs for its owner, when the installer asked for it.
    pub fn automatic_repair(&self) -> Option<&SealedPlan> {
        match self {
            StartKind::Retry {
                original,
                cause: Cause::AutomaticRepair,
            } => Some(original),
            _ => None,
        }
    }

    /// Why the attempt is sealed, as its plan records it.
    pub fn cause(&self) -> Cause {
        match self {
            StartKind::Create => Cause::Create,
            StartKind::Upgrade => Cause::Upgrade,
            StartKind::Retry { cause, .. } => *cause,
            StartKind::Rollback { .. } => Cause::Rollback,
        }
    }

    /// The intent the new attempt is sealed for: the request's, or for a rollback the
    /// intent of the attempt it restores.
    pub fn intent(&self, requested: &WorkspaceSpec) -> WorkspaceSpec {
        match self {
            StartKind::Rollback { kept, .. } => WorkspaceSpec {
                version: kept.version.clone(),
                values: kept.values.clone(),
                ..requested.clone()
            },
            _ => requested.clone(),
        }
    }
}

/// A new attempt to seal, and what the caller must look up for it: the Recipe and the
/// Edge by name, and whether the requesting user may install onto that edge.
#[derive(Clone, Debug, PartialEq)]
pub struct Start {
    pub kind: StartKind,
    pub attempt: i64,
    /// The Recipe to look up: the intent's, or the one a retried plan pinned.
    pub recipe: String,
    /// The Edge to look up and authorize the user on.
    pub edge: String,
}

impl Start {
    fn new(kind: StartKind, attempt: i64, request: &Request<'_>) -> Self {
        let (recipe, edge) = match &kind {
            StartKind::Retry { original, .. } => (
                original.plan.provider.clone(),
                original.plan.edge_name.clone(),
            ),
            StartKind::Rollback { kept, .. } => (
                kept.plan.plan.provider.clone(),
                kept.plan.plan.edge_name.clone(),
            ),
            _ => (
                request.object.spec.recipe.clone(),
                request.object.spec.edge.clone(),
            ),
        };
        Self {
            kind,
            attempt,
            recipe,
            edge,
        }
    }
}

/// The attempt this write starts, if any, whatever plan the request carries: on create; on
/// an update of a Workspace stored unsealed; on changed intent after a terminal attempt;
/// on a raised spec.retry after the recorded attempt failed, while its release has
/// drifted, or with the rollback or the automatic repair annotation.
pub fn start_of(request: &Request<'_>) -> Result<Option<Start>, Denial> {
    let new = &request.object.spec;
    let rollback = rollback_target(request)?;
    let automatic = automatic_repair_target(request)?;
    let nothing_installed = |attempt| Denial::AutomaticRepairRefused {
        attempt,
        why: "the Workspace has nothing installed to repair".into(),
    };
    let old = match (request.operation, request.old) {
        (Operation::Create, _) | (Operation::Update, None) => {
            if let Some(attempt) = automatic {
                return Err(nothing_installed(attempt));
            }
            if let Some(to) = rollback {
                return Err(Denial::RollbackNotKept {
                    attempt: to,
                    kept: Vec::new(),
                });
            }
            return Ok(Some(Start::new(StartKind::Create, 1, request)));
        }
        (Operation::Update, Some(old)) => old,
    };
    // After every attempt sealed or recorded: a stored plan older than the recorded
    // attempt (written while the webhooks were bypassed) never lowers the count.
    let recorded = old.status.as_ref().and_then(|s| s.attempt).unwrap_or(0);
    let Some(sealed) = &old.spec.plan else {
        if let Some(attempt) = automatic {
            return Err(nothing_installed(attempt));
        }
        // Stored unsealed (written while the webhooks were not registered): seal now.
        return Ok(Some(Start::new(StartKind::Create, recorded + 1, request)));
    };
    if is_fenced(old) || is_fenced(request.object) {
        return Ok(None);
    }
    let next = sealed.plan.attempt.max(recorded) + 1;
    if let Some(attempt) = automatic {
        if rollback.is_some() {
            return Err(Denial::AutomaticRepairRefused {
                attempt,
                why: "a write asks for a rollback or a repair, not both".into(),
            });
        }
        check_automatic_repair(request, old, sealed, attempt)?;
        let original = Box::new(sealed.clone());
        let cause = Cause::AutomaticRepair;
        let kind = StartKind::Retry { original, cause };
        return Ok(Some(Start::new(kind, next, request)));
    }
    if let Some(to) = rollback {
        return rollback_start(request, old, to, next).map(Some);
    }
    if is_active(old) {
        return Ok(None);
    }
    if changed_intent(&old.spec, new).is_some() {
        return Ok(Some(Start::new(StartKind::Upgrade, next, request)));
    }
    if retry_of(new) <= retry_of(&old.spec) {
        return Ok(None);
    }
    let retry = |cause| {
        let original = Box::new(sealed.clone());
        Ok(Some(Start::new(
            StartKind::Retry { original, cause },
            next,
            request,
        )))
    };
    let failed = |result| matches!(result, Some(JobResult::Failed | JobResult::Rejected));
    let recorded_result = recorded_result(old, &sealed.plan);
    if failed(recorded_result) {
        return retry(Cause::Retry);
    }
    if recorded_result == Some(JobResult::Succeeded) && is_drifted(old) {
        return retry(Cause::Repair);
    }
    if failed(terminal_result(old, &sealed.plan)) {
        // The number of a failed attempt, but not its plan: a replay stored while the
        // webhooks were bypassed. It is never signed again.
        return Err(Denial::RetryOfUnrecordedPlan {
            attempt: sealed.plan.attempt,
            stored_id: quoted(&sealed.plan.attempt_id),
            recorded_id: old
                .status
                .as_ref()
                .and_then(|s| s.attempt_id.clone())
                .unwrap_or_default(),
        });
    }
    Ok(None)
}

/// A rollback to attempt `to`: only between attempts, with spec.retry raised and the
/// intent otherwise unchanged, to an attempt whose plan the status keeps.
fn rollback_start(
    request: &Request<'_>,
    old: &crate::api::Workspace,
    to: i64,
    next: i64,
) -> Result<Start, Denial> {
    if is_active(old) {
        let attempt = old.spec.plan.as_ref().map(|p| p.plan.attempt).unwrap_or(0);
        return Err(Denial::RollbackWhileActive { attempt });
    }
    if retry_of(&request.object.spec) <= retry_of(&old.spec) {
        return Err(Denial::RollbackNeedsRetry { attempt: to });
    }
    if let Some(current) = old.spec.plan.as_ref().map(|p| p.plan.attempt)
        && current == to
    {
        return Err(Denial::RollbackToCurrent { attempt: to });
    }
    let kept = kept_plan(old, to)?;
    // A rollback restores a plan on its own target; it does not move the Workspace.
    for (field, was, is) in [
        ("recipe", &kept.plan.plan.provider, &old.spec.recipe),
        ("edge", &kept.plan.plan.edge_name, &old.spec.edge),
    ] {
        if was != is {
            return Err(Denial::RollbackAcrossTargets {
                attempt: to,
                field,
                was: quoted(was),
            });
        }
    }
    let kept = StartKind::Rollback {
        to,
        kept: Box::new(kept),
    };
    // As the tenant sent it (only the counter and the annotation changed), or as the
    // mutating webhook left it (the intent of the attempt it restores).
    let new = &request.object.spec;
    let restored = kept.intent(&old.spec);
    if let Some(field) = changed_intent(&old.spec, new)
        && changed_intent(&restored, new).is_some()
    {
        return Err(Denial::RollbackWithIntentChange { field });
    }
    Ok(Start::new(kept, next, request))
}
