//! Sealing a new attempt: its plan resolved from the Recipe, or a kept plan checked and
//! signed again, once the user's authorizations are known.

use crate::{
    admission::{
        Denial, Request, attempt::retry_of, binding_of, requester::requester_within_bounds,
    },
    api::{EdgeSpec, Owner, PlanValuesSpec, RecipeSpec, SealedPlan},
    plan::{self, AttemptContext},
    seal::{Keyring, Sealer},
    text::quoted,
    verify::verify_plan,
};

use super::{Start, StartKind};

/// What the caller looked up for a new attempt. The RBAC answers for `install` and `use`
/// are the plan owner's: the requester's, or for an automatic repair
/// ([`StartKind::automatic_repair`]) the owner of the plan it repairs.
pub struct Lookups<'a> {
    /// The Recipe [`Start::recipe`], if it exists.
    pub recipe: Option<&'a RecipeSpec>,
    /// The Edge [`Start::edge`], if it exists.
    pub edge: Option<&'a EdgeSpec>,
    /// The SubjectAccessReview's answer for `install` on the edge, or why there is none.
    pub may_install: Result<bool, String>,
    /// The SubjectAccessReview's answer for `use` on the Recipe, or why there is none.
    pub may_use: Result<bool, String>,
    /// For an automatic repair: whether the requester may ask for one (`autorepair` on the
    /// Workspace), or why there is no answer. Not asked, and not read, for other attempts.
    pub automatic_repairer: Result<bool, String>,
}

/// The platform's side of sealing: the key that signs, the keys a retried plan must
/// verify with, and the chart repositories recipes may install from.
pub struct Sealing<'a> {
    pub sealer: &'a Sealer,
    pub keyring: &'a Keyring,
    pub allowlist: &'a [String],
}

/// A sealed attempt, and the values its plan refers to by digest.
#[derive(Clone, Debug, PartialEq)]
pub struct SealedAttempt {
    pub sealed: SealedPlan,
    /// For a plan resolved afresh: what its PlanValues object must hold. `None` for a
    /// retry or a rollback, whose values are stored already (the caller checks that they
    /// still are before the plan is admitted).
    pub values: Option<PlanValuesSpec>,
}

/// Resolves and seals a new attempt.
pub fn seal_attempt(
    request: &Request<'_>,
    start: &Start,
    lookups: Lookups<'_>,
    sealing: &Sealing<'_>,
) -> Result<SealedAttempt, Denial> {
    requester_within_bounds(request.user)?;
    if start.kind.automatic_repair().is_some() {
        let user = quoted(request.user.username.as_deref().unwrap_or_default());
        match &lookups.automatic_repairer {
            Ok(true) => {}
            Ok(false) => return Err(Denial::AutomaticRepairNotInstaller { user }),
            Err(reason) => {
                return Err(Denial::AutomaticRepairUnverified {
                    user,
                    reason: reason.clone(),
                });
            }
        }
    }
    let intent = &start.kind.intent(&request.object.spec);
    // An automatic repair is the plan owner's attempt: the installer only asked for it.
    let owner = match start.kind.automatic_repair() {
        Some(original) => original.plan.owner.clone(),
        None => Owner {
            username: request.user.username.clone().unwrap_or_default(),
            uid: request.user.uid.clone().unwrap_or_default(),
            groups: request.user.groups.clone().unwrap_or_default(),
            extra: request.user.extra.clone().unwrap_or_default(),
        },
    };
    let user = owner.username.clone();
    let workspace = request.workspace_identity();
    let context = AttemptContext {
        attempt_id: request.attempt_id_for(start.attempt, intent),
        workspace,
        owner,
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
    let (plan, values) = match &start.kind {
        StartKind::Retry { original, .. } => {
            check_original(request, original, sealing.keyring)?;
            plan::check_retry(&original.plan, recipe, edge, sealing.allowlist).map_err(|why| {
                Denial::RetryWithdrawn {
                    attempt: original.plan.attempt,
                    why,
                }
            })?;
            authorize(&lookups, &user, start)?;
            (plan::retry(&original.plan, context), None)
        }
        StartKind::Rollback { to, kept } => {
            check_original(request, &kept.plan, sealing.keyring)?;
            plan::check_retry(&kept.plan.plan, recipe, edge, sealing.allowlist)
                .map_err(|why| Denial::RollbackWithdrawn { attempt: *to, why })?;
            authorize(&lookups, &user, start)?;
            (plan::retry(&kept.plan.plan, context), None)
        }
        StartKind::Create | StartKind::Upgrade => {
            authorize(&lookups, &user, start)?;
            let resolved = plan::resolve(
                &start.recipe,
                recipe,
                edge,
                intent,
                context,
                sealing.allowlist,
            )
            .map_err(Denial::Resolve)?;
            (resolved.plan, Some(resolved.values))
        }
    };
    let sealed = sealing
        .sealer
        .seal_noted(plan, sealing.keyring)
        .map_err(Denial::SealFailed)?;
    Ok(SealedAttempt { sealed, values })
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
/// each for the plan's owner (the requesting user, or for an automatic repair the owner of
/// the plan it repairs).
fn authorize(lookups: &Lookups<'_>, user: &str, start: &Start) -> Result<(), Denial> {
    // The name is whatever the API server's authenticator produced: quoted and bounded,
    // like every other name a denial repeats.
    let user = quoted(user);
    let edge = &start.edge;
    match &lookups.may_install {
        Ok(true) => {}
        Ok(false) => {
            return Err(Denial::EdgeNotAuthorized {
                user: user.clone(),
                edge: edge.to_owned(),
            });
        }
        Err(reason) => {
            return Err(Denial::AuthorizationUnavailable {
                user: user.clone(),
                edge: edge.to_owned(),
                reason: reason.clone(),
            });
        }
    }
    let recipe = &start.recipe;
    match &lookups.may_use {
        Ok(true) => Ok(()),
        Ok(false) => Err(Denial::RecipeNotEntitled {
            user: user.clone(),
            recipe: recipe.to_owned(),
        }),
        Err(reason) => Err(Denial::RecipeAuthorizationUnavailable {
            user: user.clone(),
            recipe: recipe.to_owned(),
            reason: reason.clone(),
        }),
    }
}
