//! What every layer uses and which uses none of them: configuration, metrics, Events,
//! the error that ends a reconcile and the stops a step ends in, fault points, and which
//! edges this replica holds. Tasks, reachability and the own-writes overlay are the crate
//! `providers-runtime`, below every layer.

// An in-memory API server that unit tests build real clients on.
#[cfg(test)]
pub mod api_double;
pub mod config;
pub mod error;
pub mod event_recorder;
pub mod fault;
pub mod metrics;
pub mod ownership;
pub mod stop;
