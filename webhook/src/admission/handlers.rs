//! POST /mutate and POST /validate: decode, decide with `providers::admission`, encode.

use std::{sync::Arc, time::Instant};

use axum::{
    Json,
    body::Bytes,
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use json_patch::{AddOperation, Patch, PatchOperation, jsonptr::PointerBuf};
use kube::core::admission::AdmissionResponse;
use providers::{
    admission::{
        Denial, Request,
        mutate::{Lookups, PlanAction, Start, plan_action, seal_attempt},
        validate,
    },
    api::SealedPlan,
};

use super::{
    authz,
    review::{self, Refusal, WorkspaceReview},
    state::AppState,
};
use crate::server::metrics::Outcome;

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

pub async fn mutate(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    handle(&state, Endpoint::Mutate, &body).await
}

pub async fn validate(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    handle(&state, Endpoint::Validate, &body).await
}

/// A 400 for what cannot be decoded, a denial for what this webhook does not decide,
/// otherwise the decision; every request is counted.
async fn handle(state: &AppState, endpoint: Endpoint, body: &[u8]) -> Response {
    let started = Instant::now();
    let response = match review::decode(body) {
        Err(error) => {
            state
                .metrics
                .record(endpoint.name(), Outcome::Error, started.elapsed());
            return (StatusCode::BAD_REQUEST, error.to_string()).into_response();
        }
        Ok(Err(Refusal(response))) => *response,
        Ok(Ok(review)) => match endpoint {
            Endpoint::Mutate => mutate_review(state, &review).await,
            Endpoint::Validate => validate_review(state, &review),
        },
    };
    let outcome = if !response.allowed {
        state.metrics.denied(&response.result.reason);
        Outcome::Denied
    } else if response.patch.is_some() {
        Outcome::Patched
    } else {
        Outcome::Allowed
    };
    state
        .metrics
        .record(endpoint.name(), outcome, started.elapsed());
    Json(response.into_review()).into_response()
}

fn request_of(review: &WorkspaceReview) -> Request<'_> {
    Request {
        operation: review.operation,
        user: &review.request.user_info,
        object: &review.object,
        old: review.old.as_ref(),
    }
}

async fn mutate_review(state: &AppState, review: &WorkspaceReview) -> AdmissionResponse {
    let request = request_of(review);
    let sealed = match plan_action(&request) {
        Err(denial) => return log_denial(review, review::deny(review, &denial), &denial),
        Ok(PlanAction::Keep) => return AdmissionResponse::from(&review.request),
        Ok(PlanAction::Restore(sealed)) => *sealed,
        Ok(PlanAction::Start(start)) => match seal(state, &request, &start).await {
            Ok(sealed) => {
                tracing::info!(
                    workspace = %request.workspace_key(), attempt = sealed.plan.attempt,
                    attempt_id = %sealed.plan.attempt_id, user = %sealed.plan.owner.username,
                    dry_run = review.request.dry_run, "sealed a new attempt"
                );
                sealed
            }
            Err(denial) => return log_denial(review, review::deny(review, &denial), &denial),
        },
    };
    patch_plan(review, &sealed)
}

fn validate_review(state: &AppState, review: &WorkspaceReview) -> AdmissionResponse {
    let request = request_of(review);
    match validate::validate(&request, &state.keyring) {
        Ok(warnings) => {
            let mut response = AdmissionResponse::from(&review.request);
            if !warnings.is_empty() {
                response.warnings = Some(warnings);
            }
            response
        }
        Err(denial) => log_denial(review, review::deny(review, &denial), &denial),
    }
}

fn log_denial(
    review: &WorkspaceReview,
    response: AdmissionResponse,
    denial: &Denial,
) -> AdmissionResponse {
    tracing::info!(
        workspace = %request_of(review).workspace_key(), user = ?review.request.user_info.username,
        reason = denial.reason(), field = %denial.field(), "denied: {denial}"
    );
    response
}

/// Looks up what a new attempt needs, authorizes the user on the exact edge, and seals.
async fn seal(
    state: &AppState,
    request: &Request<'_>,
    start: &Start,
) -> Result<SealedPlan, Denial> {
    let recipe = match start.recipe(request) {
        Some(name) => state.recipe(name).await.map_err(|e| Denial::LookupFailed {
            field: "spec.recipe",
            what: format!("recipe {name:?}"),
            reason: e.to_string(),
        })?,
        None => None,
    };
    let edge = match start.recipe(request) {
        Some(_) => state
            .edge(start.edge(request))
            .await
            .map_err(|e| Denial::LookupFailed {
                field: "spec.edge",
                what: format!("edge {:?}", start.edge(request)),
                reason: e.to_string(),
            })?,
        None => None,
    };
    // Ask RBAC only when there is something to authorize, so an unknown recipe or edge is
    // reported as such.
    let ready = start.recipe(request).is_none() || (recipe.is_some() && edge.is_some());
    let authorized = if ready {
        authz::can_install(&state.client, request.user, start.edge(request)).await
    } else {
        Ok(false)
    };
    let lookups = Lookups {
        recipe: recipe.as_ref(),
        edge: edge.as_ref(),
        authorized,
    };
    seal_attempt(request, start, lookups, &state.sealer, &state.allowlist)
}

/// Writes the sealed plan at /spec/plan, patching the raw object the API server sent
/// (never a re-serialized copy), and only when it differs: the same request twice gives
/// the same answer, and a plan already in place needs no patch.
fn patch_plan(review: &WorkspaceReview, sealed: &SealedPlan) -> AdmissionResponse {
    let response = AdmissionResponse::from(&review.request);
    let value = match serde_json::to_value(sealed) {
        Ok(value) => value,
        Err(e) => {
            let denial = Denial::Seal(providers::seal::SealError::Serialize(e.to_string()));
            return review::deny(review, &denial);
        }
    };
    if review.raw_object.pointer("/spec/plan") == Some(&value) {
        return response;
    }
    let patch = Patch(vec![PatchOperation::Add(AddOperation {
        path: PointerBuf::from_tokens(["spec", "plan"]),
        value,
    })]);
    match response.with_patch(patch) {
        Ok(response) => response,
        Err(e) => {
            let denial = Denial::Seal(providers::seal::SealError::Serialize(e.to_string()));
            review::deny(review, &denial)
        }
    }
}
