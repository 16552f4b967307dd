//! The mutating decision: seal a new attempt, keep the sealed plan, or restore it.

use crate::{
    api::{EdgeSpec, Owner, Plan, RecipeSpec, SealedPlan},
    plan::{self, AttemptContext},
    seal::Sealer,
};

use super::{
    Denial, Operation, Request,
    attempt::{changed_intent, is_active, is_fenced, retry_of, terminal_result},
};

/// Why a new attempt starts.
#[derive(Clone, Debug, PartialEq)]
pub enum StartKind {
    /// The Workspace is new (or was stored without a plan).
    Create,
    /// The tenant changed the intent after a terminal attempt: resolve the new intent.
    Upgrade,
    /// The tenant raised spec.retry after a failed attempt: run the original plan again.
    Retry { original: Box<Plan> },
}

/// A new attempt to seal.
#[derive(Clone, Debug, PartialEq)]
pub struct Start {
    pub kind: StartKind,
    pub attempt: i64,
}

impl Start {
    /// The edge the requesting user must be authorized to install onto.
    pub fn edge<'a>(&'a self, request: &'a Request<'_>) -> &'a str {
        match &self.kind {
            StartKind::Retry { original } => &original.edge_name,
            _ => &request.object.spec.edge,
        }
    }

    /// The recipe to resolve, or None for a retry (which reuses the original plan).
    pub fn recipe<'a>(&self, request: &'a Request<'_>) -> Option<&'a str> {
        match &self.kind {
            StartKind::Retry { .. } => None,
            _ => Some(&request.object.spec.recipe),
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
    let old = match (request.operation, request.old) {
        (Operation::Create, _) | (Operation::Update, None) => {
            if new.plan.is_some() {
                return Err(Denial::PlanSetOnCreate);
            }
            return Ok(PlanAction::Start(Start {
                kind: StartKind::Create,
                attempt: 1,
            }));
        }
        (Operation::Update, Some(old)) => old,
    };
    let Some(sealed) = &old.spec.plan else {
        // Stored unsealed (written while the webhooks were not registered): seal now,
        // after every attempt the installer already recorded.
        if new.plan.is_some() {
            return Err(Denial::PlanSetOnCreate);
        }
        let recorded = old.status.as_ref().and_then(|s| s.attempt).unwrap_or(0);
        return Ok(PlanAction::Start(Start {
            kind: StartKind::Create,
            attempt: recorded + 1,
        }));
    };
    let restore_if_omitted = || match &new.plan {
        None => PlanAction::Restore(Box::new(sealed.clone())),
        Some(_) => PlanAction::Keep,
    };
    if is_fenced(old) || is_fenced(request.object) || is_active(old) {
        return Ok(restore_if_omitted());
    }
    let next = sealed.plan.attempt + 1;
    if changed_intent(&old.spec, new).is_some() {
        return Ok(PlanAction::Start(Start {
            kind: StartKind::Upgrade,
            attempt: next,
        }));
    }
    let failed = matches!(
        terminal_result(old, &sealed.plan),
        Some(crate::api::JobResult::Failed | crate::api::JobResult::Rejected)
    );
    if failed && retry_of(new) > retry_of(&old.spec) {
        return Ok(PlanAction::Start(Start {
            kind: StartKind::Retry {
                original: Box::new(sealed.plan.clone()),
            },
            attempt: next,
        }));
    }
    Ok(restore_if_omitted())
}

/// What the caller looked up for a new attempt.
pub struct Lookups<'a> {
    /// The Recipe named by the intent, if it exists (unused for a retry).
    pub recipe: Option<&'a RecipeSpec>,
    /// The Edge named by the intent, if it exists (unused for a retry).
    pub edge: Option<&'a EdgeSpec>,
    /// The SubjectAccessReview's answer for `install` on the edge, or why there is none.
    pub authorized: Result<bool, String>,
}

/// Resolves and seals a new attempt.
pub fn seal_attempt(
    request: &Request<'_>,
    start: &Start,
    lookups: Lookups<'_>,
    sealer: &Sealer,
    allowlist: &[String],
) -> Result<SealedPlan, Denial> {
    let intent = &request.object.spec;
    let user = request.user.username.clone().unwrap_or_default();
    let workspace = request.workspace_identity();
    let context = AttemptContext {
        attempt_id: request.attempt_id(start.attempt),
        workspace,
        owner: Owner {
            username: user.clone(),
            uid: request.user.uid.clone().unwrap_or_default(),
        },
        attempt: start.attempt,
        retry: retry_of(intent),
    };
    let plan = match &start.kind {
        StartKind::Retry { original } => {
            authorize(&lookups, &user, &original.edge_name)?;
            plan::retry(original, context)
        }
        StartKind::Create | StartKind::Upgrade => {
            let recipe = lookups.recipe.ok_or_else(|| Denial::UnknownRecipe {
                name: intent.recipe.clone(),
            })?;
            let edge = lookups.edge.ok_or_else(|| Denial::UnknownEdge {
                name: intent.edge.clone(),
            })?;
            authorize(&lookups, &user, &intent.edge)?;
            plan::resolve(&intent.recipe, recipe, edge, intent, context, allowlist)
                .map_err(Denial::Resolve)?
        }
    };
    sealer.seal(plan).map_err(Denial::Seal)
}

fn authorize(lookups: &Lookups<'_>, user: &str, edge: &str) -> Result<(), Denial> {
    match &lookups.authorized {
        Ok(true) => Ok(()),
        Ok(false) => Err(Denial::NotAuthorized {
            user: user.to_owned(),
            edge: edge.to_owned(),
        }),
        Err(reason) => Err(Denial::AuthorizationUnavailable {
            user: user.to_owned(),
            edge: edge.to_owned(),
            reason: reason.clone(),
        }),
    }
}
