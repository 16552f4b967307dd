//! `kubectl provider`: install and inspect sealed provider Workspaces.
#![forbid(unsafe_code)]

mod access;
mod attempt_state;
mod cli;
mod columns;
mod commands;
mod completion;
mod connect;
mod duration;
mod events;
mod intent;
mod jsonpath;
mod object_names;
mod objects;
mod on_delete;
mod output;
mod output_format;
mod report;
mod table;
#[cfg(test)]
mod testdata;
mod value_args;
mod views;
mod wait;
mod watching;

use std::{io::Write, process::ExitCode};

use clap::Parser;

/// The first argument that asks for completions (cobra's name for it, which kubectl's
/// completion scripts and `kubectl_complete-provider` use).
const COMPLETE: &str = "__complete";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // Completion words are not a command line to validate: a half-typed one is the point.
    let complete = args.get(1).is_some_and(|a| a == COMPLETE);
    let cli = if complete {
        None
    } else {
        Some(cli::Cli::parse_from(&args))
    };
    // One crypto provider for the kube client's rustls, chosen here rather than by feature guessing.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start: {error}");
            return ExitCode::FAILURE;
        }
    };
    let Some(cli) = cli else {
        let lines = runtime.block_on(commands::complete::run(args.get(2..).unwrap_or_default()));
        let mut stdout = std::io::stdout().lock();
        for line in lines {
            if writeln!(stdout, "{line}").is_err() {
                break;
            }
        }
        return ExitCode::SUCCESS;
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
