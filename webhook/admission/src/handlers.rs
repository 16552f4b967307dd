//! POST /mutate and POST /validate: decode, decide with `providers_shared::admission`, encode.

use std::{sync::Arc, time::Instant};

use axum::{
    body::{Body, Bytes},
    extract::State,
};
use http::HeaderMap;
use json_patch::{AddOperation, Patch, PatchOperation, jsonptr::PointerBuf};
use k8s_openapi::jiff::Timestamp;
use providers_shared::{
    admission::{
        Denial, Request,
        automatic_repair::automatic_repair_consumed,
        finalizer::finalizer_patch,
        mutate::{
            Lookups, PlanAction, SealedAttempt, Sealing, Start, StartKind, carried_plan_warning,
            plan_action, seal_attempt,
        },
        requester::requester_within_bounds,
        rollback::rollback_patch,
        validate,
    },
    api::SealedPlan,
    seal::SealError,
};
use tracing::Instrument;

use providers_runtime::authz;

use super::{
    answer::Answer,
    app_state::AppState,
    body::{self, ReadBody},
    metrics::Outcome,
    plan_values,
    review::{self, BODY_LIMIT, Review, ReviewError, WorkspaceReview},
};

#[derive(Clone, Copy)]
enum Endpoint {
    Mutate,
    Validate,
}

impl Endpoint {
    fn name(self) -> &'static str {
        match self {
            Endpoint::Mutate => "mutate",
            Endpoint::Validate => "validate",
        }
    }
}

pub async fn mutate(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Answer, ReviewError> {
    let body = body::read(&headers, body, BODY_LIMIT).await;
    handle(&state, Endpoint::Mutate, body).await
}

pub async fn validate(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Answer, ReviewError> {
    let body = body::read(&headers, body, BODY_LIMIT).await;
    handle(&state, Endpoint::Validate, body).await
}

/// Decodes and decides one review, and counts it: an `Err` (HTTP 400, or 413) for what
/// cannot be read or decoded, otherwise an answer (HTTP 200), a refusal included.
async fn handle(
    state: &AppState,
    endpoint: Endpoint,
    body: Result<ReadBody, ReviewError>,
) -> Result<Answer, ReviewError> {
    let started = Instant::now();
    let decided = match body {
        Ok(ReadBody::Whole(body)) => decide(state, endpoint, body).await,
        Ok(ReadBody::TooLarge { uid: Some(uid) }) => {
            let message = review::too_large();
            tracing::warn!(%uid, endpoint = endpoint.name(), "refused: {message}");
            Ok(Answer::too_large(&uid, message))
        }
        Ok(ReadBody::TooLarge { uid: None }) => Err(ReviewError::TooLarge),
        Err(error) => Err(error),
    };
    let outcome = match &decided {
        Err(error) => {
            // The API server tells its caller only that the webhook rejected the request
            // "for an unknown reason": this line is where an operator finds the reason.
            // Every ReviewError text is bounded and escaped.
            tracing::warn!(
                endpoint = endpoint.name(),
                "could not read a review: {error}"
            );
            Outcome::Error
        }
        Ok(answer) if !answer.allowed() => {
            state.metrics.denied(answer.reason());
            Outcome::Denied
        }
        Ok(answer) if answer.is_patched() => Outcome::Patched,
        Ok(_) => Outcome::Allowed,
    };
    state
        .metrics
        .record(endpoint.name(), outcome, started.elapsed());
    decided
}

async fn decide(state: &AppState, endpoint: Endpoint, body: Bytes) -> Result<Answer, ReviewError> {
    let decoded = review::decode(&body);
    // Everything needed is decoded: the body's memory goes before the decision, which may
    // wait on the API server.
    drop(body);
    let review = match decoded? {
        Review::Refused { uid, user, message } => {
            tracing::info!(%uid, endpoint = endpoint.name(), user = user.as_str(), "refused: {message}");
            return Ok(Answer::refused(&uid, message));
        }
        Review::Workspace(review) => review,
    };
    Ok(match endpoint {
        Endpoint::Mutate => mutate_review(state, &review).await,
        Endpoint::Validate => validate_review(state, &review),
    })
}

/// The span of a review being sealed: every line logged while the recipe, the edge and
/// RBAC are asked carries these. A review decided from the request alone logs at most its
/// denial, which names the review itself, so it pays for no span (3 % of the webhook's CPU
/// per review, docs/performance.md).
fn sealing_span(review: &WorkspaceReview) -> tracing::Span {
    tracing::info_span!(
        "review",
        uid = %review.uid,
        endpoint = Endpoint::Mutate.name(),
        operation = ?review.operation,
        workspace = %review.key(),
        user = review.logged_user().as_str(),
        dry_run = review.dry_run,
    )
}

fn request_of(review: &WorkspaceReview) -> Request<'_> {
    Request {
        operation: review.operation,
        user: &review.user,
        object: &review.object,
        old: review.old.as_ref(),
        dry_run: review.dry_run,
        now: Timestamp::now(),
    }
}

async fn mutate_review(state: &AppState, review: &WorkspaceReview) -> Answer {
    let request = request_of(review);
    let (sealed, start) = match plan_action(&request) {
        Err(denial) => return denied(review, Endpoint::Mutate, &denial),
        Ok(PlanAction::Keep) => return Answer::allow(&review.uid),
        Ok(PlanAction::Restore(sealed)) => (*sealed, None),
        Ok(PlanAction::Start(start)) => match seal(state, &request, &start)
            .instrument(sealing_span(review))
            .await
        {
            Ok(sealed) => {
                tracing::info!(
                    uid = %review.uid,
                    workspace = %review.key(),
                    user = review.logged_user().as_str(),
                    dry_run = review.dry_run,
                    attempt = sealed.plan.attempt,
                    attempt_id = %sealed.plan.attempt_id,
                    cause = ?sealed.plan.cause,
                    "sealed a new attempt"
                );
                (sealed, Some(start))
            }
            Err(denial) => return denied(review, Endpoint::Mutate, &denial),
        },
    };
    // A create that carries a plan (a restore from a backup) is told that it was replaced.
    let warnings = carried_plan_warning(&request).into_iter().collect();
    patch_plan(review, &sealed, start.as_ref()).with_warnings(warnings)
}

fn validate_review(state: &AppState, review: &WorkspaceReview) -> Answer {
    match validate::validate(&request_of(review), &state.keyring) {
        Ok(warnings) => Answer::allow(&review.uid).with_warnings(warnings),
        Err(denial) => denied(review, Endpoint::Validate, &denial),
    }
}

fn denied(review: &WorkspaceReview, endpoint: Endpoint, denial: &Denial) -> Answer {
    tracing::info!(
        uid = %review.uid,
        endpoint = endpoint.name(),
        operation = ?review.operation,
        workspace = %review.key(),
        user = review.logged_user().as_str(),
        dry_run = review.dry_run,
        reason = denial.reason(),
        field = %denial.field(),
        "denied: {denial}"
    );
    Answer::denial(&review.uid, denial)
}

/// Seals a new attempt, and stores its values unless the write is a dry run.
async fn seal(
    state: &AppState,
    request: &Request<'_>,
    start: &Start,
) -> Result<SealedPlan, Denial> {
    let attempt = seal_new(state, request, start).await?;
    if !request.dry_run {
        let namespace = request
            .object
            .metadata
            .namespace
            .as_deref()
            .unwrap_or_default();
        let creating = request.operation == providers_shared::admission::Operation::Create;
        plan_values::store(
            &state.client,
            &state.stored_values,
            namespace,
            &attempt,
            request.now,
            creating,
        )
        .await?;
    }
    Ok(attempt.sealed)
}

/// Looks up what the new attempt needs, authorizes the user on the exact edge, and seals.
async fn seal_new(
    state: &AppState,
    request: &Request<'_>,
    start: &Start,
) -> Result<SealedAttempt, Denial> {
    // Before any RBAC question carries the identity (seal_attempt checks it again).
    requester_within_bounds(request.user)?;
    let recipe = state.recipe(&start.recipe).await.map_err(lookup_failed(
        "spec.recipe",
        "recipe",
        &start.recipe,
    ))?;
    let edge =
        state
            .edge(&start.edge)
            .await
            .map_err(lookup_failed("spec.edge", "edge", &start.edge))?;
    // An automatic repair is asked for by the installer and granted as the plan's owner.
    let (owner, automatic_repairer) = match start.kind.automatic_repair() {
        Some(original) => {
            let identity = request.workspace_identity();
            let asked = authz::can_repair_automatically(
                &state.client,
                request.user,
                &identity.namespace,
                &identity.name,
            )
            .await;
            (authz::user_of(&original.plan.owner), authz::in_words(asked))
        }
        None => (request.user.clone(), Ok(false)),
    };
    // Ask RBAC only when there is something to authorize, so an unknown recipe or edge is
    // reported as such, and nothing for an identity that may not ask for the repair.
    let may_ask = start.kind.automatic_repair().is_none() || automatic_repairer == Ok(true);
    let (may_install, may_use) = if recipe.is_some() && edge.is_some() && may_ask {
        tokio::join!(
            authz::can_install(&state.client, &owner, &start.edge),
            authz::can_use_recipe(&state.client, &owner, &start.recipe),
        )
    } else {
        (Ok(false), Ok(false))
    };
    let lookups = Lookups {
        recipe: recipe.as_ref(),
        edge: edge.as_ref(),
        may_install: authz::in_words(may_install),
        may_use: authz::in_words(may_use),
        automatic_repairer,
    };
    let sealing = Sealing {
        sealer: &state.sealer,
        keyring: &state.keyring,
        allowlist: &state.allowlist,
    };
    seal_attempt(request, start, lookups, &sealing)
}

/// A Recipe or Edge that could not be read: the denial names the field and the object.
fn lookup_failed(
    field: &'static str,
    kind: &'static str,
    name: &str,
) -> impl FnOnce(kube::Error) -> Denial {
    let what = format!("{kind} {}", providers_shared::text::quoted(name));
    move |error| Denial::LookupFailed {
        field,
        what,
        reason: error.to_string(),
    }
}

/// Writes the sealed plan at /spec/plan, only when it differs from what the request
/// carries: a plan already in place needs no patch. A new attempt also gets the
/// installer's finalizer if it is missing; a rollback also puts back the intent of the
/// attempt it restores and consumes its annotation, and an automatic repair consumes its.
fn patch_plan(review: &WorkspaceReview, sealed: &SealedPlan, start: Option<&Start>) -> Answer {
    let mut operations = match start {
        Some(Start {
            kind: StartKind::Rollback { kept, .. },
            ..
        }) => rollback_patch(&review.object, kept),
        _ => Vec::new(),
    };
    if let Some(start) = start {
        if start.kind.automatic_repair().is_some() {
            operations.extend(automatic_repair_consumed(&review.object));
        }
        // The installer's finalizer goes on with the attempt's plan: one write less for
        // the installer, and the Workspace is fenced before the installer first sees it.
        operations.extend(finalizer_patch(&review.object));
    }
    if review.object.spec.plan.as_ref() == Some(sealed) && operations.is_empty() {
        return Answer::allow(&review.uid);
    }
    let patched = serde_json::to_value(sealed).and_then(|value| {
        operations.push(PatchOperation::Add(AddOperation {
            path: PointerBuf::from_tokens(["spec", "plan"]),
            value,
        }));
        Answer::patched(&review.uid, &Patch(operations))
    });
    match patched {
        Ok(answer) => answer,
        Err(error) => denied(
            review,
            Endpoint::Mutate,
            &Denial::SealFailed(SealError::Serialize(error.to_string())),
        ),
    }
}
