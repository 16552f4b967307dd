//! The installer controller: a thin shell around `providers_shared::installer`.
//!
//! Every replica runs a term: the Workspace controller, a probe and watches per Edge whose
//! fencing Lease it holds (ADR 40), and a watch of the published sealing keys; the one
//! holding the leader Lease also runs the hub-wide duties. When the term ends, all of it is
//! dropped. Every decision is taken by
//! `providers_shared::installer::decide` from a fresh read of the Workspace and its edge objects.

mod config;
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

pub use config::InstallerConfig;
pub use context::Context;
pub use edge_cache::DEFAULT_STREAMS_PER_CONNECTION;
pub use edges::ProbeSettings;
pub use lease::{Elector, LeaseConfig};
