//! A memory budget for the reviews being read and decided at once.
//!
//! A review's cost is about three times its body while it is read and decoded (the
//! collected body, its chunks while they are gathered, and the decoded object).
//!
//! Small reviews (a Content-Length of at most [`SMALL_BODY`]: nearly all of them) take one
//! of [`SMALL_REVIEWS`] slots. Larger ones, and those that do not say their length, take
//! their size out of a byte budget before their body is read, and give it back when their
//! answer is ready (one that says more than the body limit takes the least: only its start
//! is read); the others wait with their bodies unread. The two never wait for each
//! other: a burst of large reviews (a tenant's 3 MB dry runs) delays only large reviews,
//! never everybody's small ones. Memory stays bounded either way, and the API server's own
//! deadline ends a wait that is too long.

use std::sync::Arc;

use axum::{
    extract::{Request, State},
    middleware::Next,
    response::Response,
};
use http::header::CONTENT_LENGTH;
use tokio::sync::Semaphore;

/// The budget is counted in units of this many bytes.
const UNIT: usize = 1024;
/// The least a large review costs.
const MIN_COST: usize = 16 * UNIT;
/// A review with a body up to this size is small.
pub const SMALL_BODY: usize = 64 * 1024;
/// Small reviews read and decided at once.
pub const SMALL_REVIEWS: usize = 64;

/// Bytes of request bodies admitted at once.
#[derive(Clone, Debug)]
pub struct ReviewBudget {
    small: Arc<Semaphore>,
    units: Arc<Semaphore>,
    total_units: usize,
    body_limit: usize,
}

impl ReviewBudget {
    /// A budget of `bytes` (at least one body of `body_limit`, so every acceptable review
    /// can run).
    pub fn new(bytes: usize, body_limit: usize) -> Self {
        let total_units = bytes.max(body_limit).div_ceil(UNIT);
        Self {
            small: Arc::new(Semaphore::new(SMALL_REVIEWS)),
            units: Arc::new(Semaphore::new(total_units)),
            total_units,
            body_limit,
        }
    }

    /// The units a request with this Content-Length takes. One that announces more than
    /// the body limit is answered from its first bytes (`body`), so it costs the least.
    fn cost(&self, content_length: Option<usize>) -> u32 {
        let bytes = match content_length {
            Some(length) if length > self.body_limit => MIN_COST,
            Some(length) => length.max(MIN_COST),
            None => self.body_limit,
        };
        // Both bounds are small (MiB), far below u32::MAX units.
        u32::try_from(bytes.div_ceil(UNIT).min(self.total_units)).unwrap_or(u32::MAX)
    }
}

/// Waits for the request's share of the budget, then reads and decides it.
pub async fn within_budget(
    State(budget): State<ReviewBudget>,
    request: Request,
    next: Next,
) -> Response {
    let content_length = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    // The semaphores are never closed, so acquiring only waits.
    let _permit = match content_length {
        Some(length) if length <= SMALL_BODY => budget.small.clone().acquire_owned().await.ok(),
        _ => budget
            .units
            .clone()
            .acquire_many_owned(budget.cost(content_length))
            .await
            .ok(),
    };
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_reviews_cost_the_minimum_and_large_ones_their_size() {
        let budget = ReviewBudget::new(8 << 20, 6 << 20);
        assert_eq!(budget.cost(Some(2_000)), 16);
        assert_eq!(budget.cost(Some(3 << 20)), 3 * 1024);
        // Unknown: the limit (the body limit refuses the rest).
        assert_eq!(budget.cost(None), 6 * 1024);
        // Announced over the limit: only its first bytes are read.
        assert_eq!(budget.cost(Some((6 << 20) + 1)), 16);
        assert_eq!(budget.cost(Some(usize::MAX)), 16);
    }

    #[test]
    fn the_budget_holds_at_least_one_review_of_the_largest_size() {
        let budget = ReviewBudget::new(1, 6 << 20);
        assert_eq!(budget.total_units, 6 * 1024);
        assert_eq!(budget.cost(None), 6 * 1024);
    }
}
