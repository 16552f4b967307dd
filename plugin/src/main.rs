//! `kubectl provider`: install and inspect sealed provider Workspaces.
#![forbid(unsafe_code)]

mod cli;
mod commands;
mod connect;
mod duration;
mod intent;
mod objects;
mod output;
mod report;
mod state;
mod table;
#[cfg(test)]
mod testdata;
mod values;
mod views;
mod wait;

use std::{io::Write, process::ExitCode};

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    // One crypto provider for the kube client's rustls, chosen here rather than by feature guessing.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut server = None;
    match runtime.block_on(commands::run(cli, &mut server)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            let mut stderr = std::io::stderr().lock();
            for line in report::report(&error, server.as_deref()).lines() {
                let _ = writeln!(stderr, "{line}");
            }
            ExitCode::FAILURE
        }
    }
}

/// Output piped into `head` and closed early is not a failure.
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
