//! What both subcommands run on: the hub API client from the command line, shutdown on
//! SIGTERM or SIGINT, and the plain-HTTP admin port (`/metrics`, `/healthz`, `/readyz`).
//! The mark a watch sets at its first list (`Synced`) is `providers_runtime::synced`.

pub mod admin;
mod client;
mod shutdown;

pub use client::{ClientArgs, INSTALLER_AGENT, WEBHOOK_AGENT, identify};
pub use shutdown::shutdown_signal;
