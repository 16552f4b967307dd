//! The process layer: what a replica runs. `replica` runs the Workspace controller (and the
//! hub-wide duties during a term of the leader Lease), `shards` the Leases by which it
//! takes its share of the edges, `lease` the elector, and `readiness` says what `/readyz`
//! says.

pub mod lease;
pub mod readiness;
pub mod replica;
pub mod shards;
