//! The mutating decision: seal a new attempt, keep the sealed plan, or restore it.

use crate::{
    api::{Cause, EdgeSpec, JobResult, KeptPlan, Owner, RecipeSpec, SealedPlan, WorkspaceSpec},
    plan::{self, AttemptContext},
    seal::{Keyring, Sealer},
    text::quoted,
    verify::verify_plan,
};

use super::{
    Denial, Operation, Request,
    attempt::{
        changed_intent, is_active, is_drifted, is_fenced, recorded_result, retry_of,
        terminal_result,
    },
    binding_of,
    rollback::{kept_plan, rollback_target},
};

/// Why a new attempt starts.
#[derive(Clone, Debug, PartialEq)]
pub enum StartKind {
    /// The Workspace is new (or was stored without a plan).
    Create,
    /// The tenant changed the intent after a terminal attempt: resolve the new intent.
    Upgrade,
    /// The tenant raised spec.retry after a failed attempt ([`Cause::Retry`]), or while the
    /// installed release has drifted ([`Cause::Repair`]): run the original plan again, once
    /// its seal and binding verify and the Recipe still offers what it pinned.
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
/// seals it afresh whatever plan the request carries; elsewhere a plan that differs from
/// the sealed one is left for the validating webhook to refuse.
pub fn plan_action(request: &Request<'_>) -> Result<PlanAction, Denial> {
    request.require_name()?;
    let new = &request.object.spec;
    let stored = request.old.and_then(|old| old.spec.plan.as_ref());
    if stored.is_none() && new.plan.is_some() {
        return Err(Denial::PlanSetOnCreate);
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

/// Whether `name` can name a cluster-scoped object: a DNS subdomain (RFC 1123), as the API
/// server requires of Recipe and Edge names.
pub fn is_object_name(name: &str) -> bool {
    let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            label.starts_with(alphanumeric)
                && label.ends_with(alphanumeric)
                && label.chars().all(|c| alphanumeric(c) || c == '-')
        })
}

/// The attempt this write starts, if any, whatever plan the request carries: on create; on
/// an update of a Workspace stored unsealed; on changed intent after a terminal attempt;
/// on a raised spec.retry after the recorded attempt failed, while its release has
/// drifted, or with the rollback annotation.
pub fn start_of(request: &Request<'_>) -> Result<Option<Start>, Denial> {
    let new = &request.object.spec;
    let rollback = rollback_target(request)?;
    let old = match (request.operation, request.old) {
        (Operation::Create, _) | (Operation::Update, None) => {
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
        // Stored unsealed (written while the webhooks were not registered): seal now.
        return Ok(Some(Start::new(StartKind::Create, recorded + 1, request)));
    };
    if is_fenced(old) || is_fenced(request.object) {
        return Ok(None);
    }
    let next = sealed.plan.attempt.max(recorded) + 1;
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

/// What the caller looked up for a new attempt.
pub struct Lookups<'a> {
    /// The Recipe [`Start::recipe`], if it exists.
    pub recipe: Option<&'a RecipeSpec>,
    /// The Edge [`Start::edge`], if it exists.
    pub edge: Option<&'a EdgeSpec>,
    /// The SubjectAccessReview's answer for `install` on the edge, or why there is none.
    pub authorized: Result<bool, String>,
    /// The SubjectAccessReview's answer for `use` on the Recipe, or why there is none.
    pub entitled: Result<bool, String>,
}

/// The platform's side of sealing: the key that signs, the keys a retried plan must
/// verify with, and the chart repositories recipes may install from.
pub struct Sealing<'a> {
    pub sealer: &'a Sealer,
    pub keyring: &'a Keyring,
    pub allowlist: &'a [String],
}

/// Resolves and seals a new attempt.
pub fn seal_attempt(
    request: &Request<'_>,
    start: &Start,
    lookups: Lookups<'_>,
    sealing: &Sealing<'_>,
) -> Result<SealedPlan, Denial> {
    let intent = &start.kind.intent(&request.object.spec);
    let user = request.user.username.clone().unwrap_or_default();
    let workspace = request.workspace_identity();
    let context = AttemptContext {
        attempt_id: request.attempt_id_for(start.attempt, intent),
        workspace,
        owner: Owner {
            username: user.clone(),
            uid: request.user.uid.clone().unwrap_or_default(),
            groups: request.user.groups.clone().unwrap_or_default(),
            extra: request.user.extra.clone().unwrap_or_default(),
        },
        attempt: start.attempt,
        retry: retry_of(intent),
        sealed_at: request.now,
        dry_run: request.dry_run,
        cause: start.kind.cause(),
        restores: match &start.kind {
            StartKind::Rollback { to, .. } => Some(*to),
            _ => None,
        },
    };
    let recipe = lookups.recipe.ok_or_else(|| Denial::UnknownRecipe {
        name: quoted(&start.recipe),
    })?;
    let edge = lookups.edge.ok_or_else(|| Denial::UnknownEdge {
        name: quoted(&start.edge),
    })?;
    let plan = match &start.kind {
        StartKind::Retry { original, .. } => {
            check_original(request, original, sealing.keyring)?;
            plan::check_retry(&original.plan, recipe, edge, sealing.allowlist).map_err(|why| {
                Denial::RetryWithdrawn {
                    attempt: original.plan.attempt,
                    why,
                }
            })?;
            authorize(&lookups, &user, start)?;
            plan::retry(&original.plan, context)
        }
        StartKind::Rollback { to, kept } => {
            check_original(request, &kept.plan, sealing.keyring)?;
            plan::check_retry(&kept.plan.plan, recipe, edge, sealing.allowlist)
                .map_err(|why| Denial::RollbackWithdrawn { attempt: *to, why })?;
            authorize(&lookups, &user, start)?;
            plan::retry(&kept.plan.plan, context)
        }
        StartKind::Create | StartKind::Upgrade => {
            authorize(&lookups, &user, start)?;
            plan::resolve(
                &start.recipe,
                recipe,
                edge,
                intent,
                context,
                sealing.allowlist,
            )
            .map_err(Denial::Resolve)?
        }
    };
    sealing
        .sealer
        .seal_noted(plan, sealing.keyring)
        .map_err(Denial::Seal)
}

/// A retry signs the stored plan again only when this webhook sealed it for this very
/// Workspace: its seal verifies with a published key and it is bound to the stored object.
/// A plan written while the webhooks were bypassed is never signed.
fn check_original(
    request: &Request<'_>,
    original: &SealedPlan,
    keyring: &Keyring,
) -> Result<(), Denial> {
    let Some(old) = request.old else {
        return Ok(());
    };
    verify_plan(original, keyring, &binding_of(old)).map_err(|defect| {
        Denial::RetryOfUnverifiedPlan {
            attempt: original.plan.attempt,
            defect,
        }
    })
}

/// Both authorizations a sealed plan needs: `install` on the edge and `use` of the Recipe,
/// each for the requesting user.
fn authorize(lookups: &Lookups<'_>, user: &str, start: &Start) -> Result<(), Denial> {
    let edge = &start.edge;
    match &lookups.authorized {
        Ok(true) => {}
        Ok(false) => {
            return Err(Denial::NotAuthorized {
                user: user.to_owned(),
                edge: edge.to_owned(),
            });
        }
        Err(reason) => {
            return Err(Denial::AuthorizationUnavailable {
                user: user.to_owned(),
                edge: edge.to_owned(),
                reason: reason.clone(),
            });
        }
    }
    let recipe = &start.recipe;
    match &lookups.entitled {
        Ok(true) => Ok(()),
        Ok(false) => Err(Denial::RecipeNotEntitled {
            user: user.to_owned(),
            recipe: recipe.to_owned(),
        }),
        Err(reason) => Err(Denial::RecipeAuthorizationUnavailable {
            user: user.to_owned(),
            recipe: recipe.to_owned(),
            reason: reason.clone(),
        }),
    }
}
