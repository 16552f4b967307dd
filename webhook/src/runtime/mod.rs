//! What both subcommands run on: the hub API client from the command line, shutdown on
//! SIGTERM or SIGINT, and the plain-HTTP admin port (`/metrics`, `/healthz`, `/readyz`).

pub mod admin;
mod client;
mod shutdown;

pub use client::{ClientArgs, INSTALLER_AGENT, WEBHOOK_AGENT, identify};
pub use shutdown::shutdown_signal;
