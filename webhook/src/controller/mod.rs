//! The installer controller: a thin shell around `providers_shared::installer`.
//!
//! One replica leads at a time (a coordination.k8s.io Lease). The leader's term runs the
//! Workspace controller, one probe and Job watch per Edge, and a watch of the published
//! sealing keys; when the term ends, all of it is dropped. Every decision is taken by
//! `providers_shared::installer::decide` from a fresh read of the Workspace and its edge objects.

mod context;
pub mod credential;
mod edge_cache;
mod edge_grants;
mod edges;
mod error;
mod event_recorder;
mod execute;
mod fault;
mod halt;
mod helm_release;
mod lease;
pub mod metrics;
mod observe;
mod own_writes;
mod published_keys;
mod readiness;
mod reconcile;
mod runner_log;
pub mod shards;
mod sweep;
pub mod task;
mod unreachable;
mod values_sweep;
pub mod workspace_controller;
mod workspace_memory;

pub use context::Context;
pub use edge_cache::DEFAULT_STREAMS_PER_CONNECTION;
pub use lease::{Elector, LeaseConfig};
