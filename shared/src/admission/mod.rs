//! The admission decision, as pure functions of the request, the stored object and the
//! platform's Recipes and Edges.
//!
//! - [`mutate::plan_action`] decides whether a write starts a new attempt, keeps the
//!   sealed plan, or restores a plan the request left out.
//! - [`mutate::seal_attempt`] resolves and seals a new attempt, once the caller has looked
//!   up the Recipe and Edge and asked the API server whether the user may install there.
//! - [`validate::validate`] refuses plans the webhook did not produce and edits to a
//!   pinned attempt.

pub mod attempt;
pub mod automatic_repair;
mod denial;
pub mod finalizer;
pub mod mutate;
mod request;
pub mod requester;
pub mod rollback;
pub mod validate;

pub use denial::Denial;
pub use request::{MAX_VERSION_BYTES, Operation, Request, binding_of};

#[cfg(test)]
mod tests;
