//! What every layer uses and which uses none of them: configuration, metrics, Events,
//! the errors and halts a request ends in, tasks, fault points, the own-writes overlay,
//! and which edges this replica holds.

pub mod config;
pub mod error;
pub mod event_recorder;
pub mod fault;
pub mod halt;
pub mod metrics;
pub mod own_writes;
pub mod ownership;
pub mod task;
pub mod unreachable;
