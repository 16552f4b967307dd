//! The process layer: what a replica runs. Its term (the Workspace controller and the
//! hub-wide duties while it leads), the Leases by which it takes its share of the edges,
//! and what `/readyz` says.

pub mod lease;
pub mod readiness;
pub mod shards;
pub mod term;
