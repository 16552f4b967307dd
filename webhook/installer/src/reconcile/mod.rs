//! The reconcile layer: one pass over one Workspace. Ready the edge's caches for it,
//! observe what the hub and the edge show (comparing an installed release's contents when
//! due), let the core decide, execute the decision; what a pass shares with the others
//! (the context, what is kept of each Workspace between reconciles, the published keys).

pub mod between_reconciles;
pub mod contents;
pub mod context;
pub mod execute;
pub mod observe;
pub mod pass_end;
pub mod prepare;
pub mod published_keys;
pub mod workspace;

// Whole passes against in-memory API servers (`support::api_double`).
#[cfg(test)]
mod tests;
