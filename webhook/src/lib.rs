//! `providers-webhook`: the admission webhook server and the installer controller, as a
//! library; the binary `providers-webhook` (`main.rs`) parses the command line and runs
//! one of `commands`.
//!
//! Below it are the crates `providers-edge-watch` (what the installer knows of an edge
//! without asking it) and `providers-runtime` (the primitives every layer uses), and the
//! core, `providers-shared`, which decides.
#![forbid(unsafe_code)]

mod admission;
pub mod cli;
pub mod commands;
mod controller;
mod server;
