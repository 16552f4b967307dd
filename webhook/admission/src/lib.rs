//! `providers-admission`: the admission webhook: decode AdmissionReviews, decide with
//! `providers_shared::admission`, encode; and the HTTPS server it runs on (`server`: TLS
//! with a reloadable certificate, the callers it answers, bounded connections and
//! handshakes, a bounded drain).
//!
//! The command `providers-webhook serve` wires them: the routes (`router`) served by
//! `server::serve`. Below it are the crate `providers-runtime` (the admin port, the RBAC
//! questions, the lock policy) and the core, `providers-shared`, which decides. It knows
//! nothing of the installer.
#![forbid(unsafe_code)]

mod answer;
mod app_state;
mod body;
mod budget;
mod handlers;
pub mod metrics;
mod plan_values;
mod recipe_review;
mod review;
pub mod sealing_keys;
pub mod server;
mod shape;
mod stored_values;
mod without_managed_fields;

use std::sync::Arc;

use axum::{Router, routing::post};

pub use app_state::AppState;
pub use review::BODY_LIMIT;
pub use stored_values::StoredValues;

/// The admission routes. Reviews whose bodies add up to more than `budget_bytes` wait with
/// their bodies unread (see [`budget`]).
pub fn router(state: Arc<AppState>, budget_bytes: usize) -> Router {
    Router::new()
        .route("/mutate", post(handlers::mutate))
        .route("/validate", post(handlers::validate))
        .route("/validate-recipe", post(recipe_review::validate_recipe))
        .layer(axum::middleware::from_fn_with_state(
            budget::ReviewBudget::new(budget_bytes, BODY_LIMIT),
            budget::within_budget,
        ))
        .with_state(state)
}

#[cfg(test)]
mod tests;
