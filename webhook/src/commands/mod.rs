//! The subcommands: each wires a process from its arguments and the parts it runs.

pub mod controller;
pub mod keygen;
pub mod serve;
