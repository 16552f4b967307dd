//! POST /validate-recipe: a Recipe whose defaults could never fit in a plan is refused when
//! it is written, with the limit and what to do, rather than when a tenant's Workspace is
//! sealed over it (`providers_shared::plan_values::check_recipe_values`).

use std::{sync::Arc, time::Instant};

use axum::{body::Body, extract::State};
use http::HeaderMap;
use serde::Deserialize;
use serde_json::Value;

use super::{
    answer::Answer,
    app_state::AppState,
    body::{self, ReadBody},
    metrics::Outcome,
    review::{BODY_LIMIT, ReviewError, uid_is_well_formed},
};

const ENDPOINT: &str = "validate-recipe";

#[derive(Deserialize)]
struct RecipeReview {
    request: Option<RecipeRequest>,
}

#[derive(Deserialize)]
struct RecipeRequest {
    uid: String,
    #[serde(default)]
    object: Option<RecipeObject>,
}

#[derive(Deserialize)]
struct RecipeObject {
    #[serde(default)]
    spec: Option<RecipeValues>,
}

#[derive(Deserialize)]
struct RecipeValues {
    #[serde(default)]
    values: Option<Value>,
}

pub async fn validate_recipe(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Answer, ReviewError> {
    let started = Instant::now();
    let decided = match body::read(&headers, body, BODY_LIMIT).await? {
        ReadBody::Whole(body) => decide(&body),
        ReadBody::TooLarge { uid: Some(uid) } => {
            Ok(Answer::too_large(&uid, super::review::too_large()))
        }
        ReadBody::TooLarge { uid: None } => Err(ReviewError::TooLarge),
    };
    let outcome = match &decided {
        Err(error) => {
            tracing::warn!(endpoint = ENDPOINT, "could not read a review: {error}");
            Outcome::Error
        }
        Ok(answer) if !answer.allowed() => {
            state.metrics.denied(answer.reason());
            Outcome::Denied
        }
        Ok(_) => Outcome::Allowed,
    };
    state.metrics.record(ENDPOINT, outcome, started.elapsed());
    decided
}

fn decide(body: &[u8]) -> Result<Answer, ReviewError> {
    let review: RecipeReview = match serde_json::from_slice(body) {
        Ok(review) => review,
        // A Recipe the API server accepted but this reader cannot (values nested past
        // serde_json's 128 levels): refused in words, when the review names its UID.
        Err(error) => {
            let why = providers_shared::text::truncated(&error.to_string(), 256);
            let Some(uid) = super::body::uid_at_start(body) else {
                return Err(ReviewError::NotJson(why));
            };
            let message = format!(
                "spec.values: the Recipe cannot be read ({why}); chart values nest a few levels, and at most 100 here: write them less deeply"
            );
            tracing::info!(%uid, endpoint = ENDPOINT, "denied: {message}");
            return Ok(Answer::deny(uid, message, "RecipeValuesInvalid", 422));
        }
    };
    let request = review.request.ok_or(ReviewError::NoRequest)?;
    if !uid_is_well_formed(&request.uid) {
        return Err(ReviewError::NotJson(
            "request.uid is not made like a UID".into(),
        ));
    }
    let values = request
        .object
        .and_then(|object| object.spec)
        .and_then(|spec| spec.values);
    Ok(
        match providers_shared::plan_values::check_recipe_values(values.as_ref()) {
            Ok(()) => Answer::allow(&request.uid),
            Err(too_large) => {
                tracing::info!(uid = %request.uid, endpoint = ENDPOINT, "denied: {too_large}");
                Answer::deny(
                    &request.uid,
                    too_large.to_string(),
                    "RecipeValuesTooLarge",
                    422,
                )
            }
        },
    )
}
