//! What both subcommands run on: the hub API client from the command line, shutdown on
//! SIGTERM or SIGINT, the plain-HTTP admin port (`/metrics`, `/healthz`, `/readyz`), and the
//! mark a watch sets at its first list (`Synced`).

pub mod admin;
mod client;
mod shutdown;
mod synced;

pub use client::{ClientArgs, INSTALLER_AGENT, WEBHOOK_AGENT, identify};
pub use shutdown::shutdown_signal;
pub use synced::Synced;
