//! `providers-webhook`: the installer controller, as a library, and the commands that run
//! it and the admission webhook server; the binary `providers-webhook` (`main.rs`) parses
//! the command line and runs one of `commands`.
//!
//! Below it are the crates `providers-admission` (the admission webhook and the HTTPS
//! server it runs on), `providers-edge-watch` (what the installer knows of an edge without
//! asking it) and `providers-runtime` (the primitives every layer uses), and the core,
//! `providers-shared`, which decides.
#![forbid(unsafe_code)]

pub mod cli;
pub mod commands;
