//! `kubectl_complete-provider`: what kubectl (1.26+) runs to complete `kubectl provider ...`.
//! It runs `kubectl-provider __complete WORDS...`, the plugin beside it (else the one on
//! PATH), which prints the candidates and cobra's `:<directive>` line.
#![forbid(unsafe_code)]

use std::{
    path::PathBuf,
    process::{Command, ExitCode},
};

const PLUGIN: &str = "kubectl-provider";

fn main() -> ExitCode {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(PLUGIN)))
        .filter(|path| path.is_file());
    let plugin = beside.unwrap_or_else(|| PathBuf::from(PLUGIN));
    let mut command = Command::new(plugin);
    command.arg("__complete").args(std::env::args_os().skip(1));
    run(command)
}

#[cfg(unix)]
fn run(mut command: Command) -> ExitCode {
    use std::os::unix::process::CommandExt;
    // Replaces this process; returns only if the plugin could not be started.
    let error = command.exec();
    eprintln!("kubectl_complete-provider: cannot run {PLUGIN}: {error}");
    // cobra's "error" directive: nothing to offer.
    println!(":1");
    ExitCode::FAILURE
}

#[cfg(not(unix))]
fn run(mut command: Command) -> ExitCode {
    match command.status() {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("kubectl_complete-provider: cannot run {PLUGIN}: {error}");
            println!(":1");
            ExitCode::FAILURE
        }
    }
}
